"""Finding data files: an explicit directory, ``$BANDITS_DATA_DIR``, the package, a cache, or
a download.

Every data set the project loads goes through :func:`resolve`, so the rules are the
same everywhere:

1. an explicit directory (a function argument or the ``--data-dir`` flag);
2. else the environment variable ``BANDITS_DATA_DIR``;
3. then, for a file the package ships (UCI Mushroom), the packaged copy (``.gz``): no
   cache and no network;
4. else the per-user cache directory (``$BANDITS_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/bbb-bandits``, else ``~/.cache/bbb-bandits``).

Inside a data directory a file ``NAME`` of data set ``SET`` is looked for as
``DIR/SET/NAME`` and then ``DIR/NAME``. When a file the package does not ship (MNIST)
is in none of these places it is downloaded from its public home into the cache, its
content checked against a sha256 checksum first (for ``.gz`` files the checksum is of
the decompressed content, so a recompressed copy is still accepted). When that fails
too, a :class:`DataNotFoundError` names the file, every place looked and how to provide it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ENV_DATA_DIR = "BANDITS_DATA_DIR"
ENV_CACHE_DIR = "BANDITS_CACHE_DIR"
PACKAGED_DIR = Path(__file__).resolve().parents[1] / "datasets"
"""The data sets shipped inside the package, laid out as a data directory (``SET/NAME.gz``)."""


class DataError(Exception):
    """A data file a command needs is missing, malformed or not the published one. Its
    message names the file and what is wrong; every command says it in one line, exit
    status 2 (:class:`bandits.core.startup.Command`), whichever command loads the data."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A data file is in none of the places looked and could not be downloaded."""


class ChecksumError(DataError, ValueError):
    """A file's content does not match its published checksum."""


@dataclass(frozen=True)
class DataFile:
    """One file of a public data set.

    Attributes:
        dataset: Sub-directory name of the data set, e.g. ``"mushroom"``.
        name: File name, e.g. ``"agaricus-lepiota.data"``.
        urls: Public places to download it from, tried in order.
        sha256: Checksum of the content (of the decompressed content for ``.gz``).
        packaged: The package ships it, gzipped, as ``PACKAGED_DIR/dataset/name.gz``.
    """

    dataset: str
    name: str
    urls: tuple[str, ...]
    sha256: str
    packaged: bool = False

    @property
    def packaged_path(self) -> Path:
        """Where the package's own copy is (exists only for a ``packaged`` file)."""
        return PACKAGED_DIR / self.dataset / (self.name + ".gz")


def cache_dir() -> Path:
    """The per-user cache directory for downloaded data."""
    if os.environ.get(ENV_CACHE_DIR):
        return Path(os.environ[ENV_CACHE_DIR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "bbb-bandits"


def content_sha256(path: Path) -> str:
    """sha256 of a file's content; ``.gz`` files are hashed after decompression."""
    h = hashlib.sha256()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def candidate_dirs(data_dir: str | os.PathLike | None = None,
                   cache: bool = True) -> list[tuple[str, Path]]:
    """The directories searched, in order, each with a word saying where it came from
    (``cache``: the per-user cache last)."""
    dirs: list[tuple[str, Path]] = []
    if data_dir is not None:
        dirs.append(("--data-dir", Path(data_dir).expanduser()))
    elif os.environ.get(ENV_DATA_DIR):
        dirs.append((f"${ENV_DATA_DIR}", Path(os.environ[ENV_DATA_DIR]).expanduser()))
    if cache:
        dirs.append(("cache", cache_dir()))
    return dirs


def resolve(
    file: DataFile,
    data_dir: str | os.PathLike | None = None,
    download: bool = True,
) -> Path:
    """Return a local path to ``file``: a user's copy, the packaged one, or a download.

    Args:
        file: The file to find.
        data_dir: Explicit data directory; when given, ``$BANDITS_DATA_DIR`` is not used.
        download: Whether to try the public URLs when the file is not found locally.

    Raises:
        DataNotFoundError: The file is nowhere and could not be downloaded.
    """
    looked: list[str] = []
    # the package's copy of a file it ships replaces the cache and the download
    for origin, d in candidate_dirs(data_dir, cache=not file.packaged):
        for p in (d / file.dataset / file.name, d / file.name):
            if p.is_file():
                return p
            looked.append(f"{p} ({origin})")
    if file.packaged:
        if file.packaged_path.is_file():
            return file.packaged_path
        raise DataNotFoundError(
            f"data file {file.name!r} not found; looked in {', '.join(looked)} and for the "
            f"package's copy {file.packaged_path}, which this installation lacks: reinstall "
            f"the package, or put the file in DIR/{file.dataset}/ and pass --data-dir DIR.")
    errors: list[str] = []
    if download:
        target = cache_dir() / file.dataset / file.name
        for url in file.urls:
            try:
                _download(url, target, file.sha256)
                return target
            except Exception as e:  # noqa: BLE001 - every failure is reported below
                errors.append(f"{url}: {e}")
    tried = "; download failed: " + " | ".join(errors) if errors else ""
    raise DataNotFoundError(
        f"data file {file.name!r} not found; looked in {', '.join(looked)}{tried}. "
        f"Put it in DIR/{file.dataset}/ and pass --data-dir DIR (or set {ENV_DATA_DIR}=DIR)."
    )


def _download(url: str, target: Path, sha256: str, timeout: float = 30.0) -> None:
    """Download ``url`` to ``target`` atomically, checking the content checksum first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, suffix=target.suffix)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as r:
            shutil.copyfileobj(r, out)
        got = content_sha256(tmp)
        if got != sha256:
            raise ChecksumError(f"checksum mismatch: expected sha256 {sha256}, got {got}")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def resolve_all(
    files: Sequence[DataFile], data_dir: str | os.PathLike | None = None
) -> list[Path]:
    """Resolve several files of one data set."""
    return [resolve(f, data_dir) for f in files]
