"""Tests for :mod:`bandits.core.data`: where a data file is looked for, in which order,
and the download into the cache with its checksum. The network is never used:
``urllib.request.urlopen`` is replaced in every test (see ``_no_network``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bandits.core import data
from bandits.core.data import (
    ENV_CACHE_DIR,
    ENV_DATA_DIR,
    DataFile,
    DataNotFoundError,
    cache_dir,
    candidate_dirs,
    content_sha256,
    resolve,
    resolve_all,
)

CONTENT = b"p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u\n" * 20
URL = "https://example.invalid/mushroom/agaricus-lepiota.data"
MIRROR = "https://mirror.invalid/agaricus-lepiota.data"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _file(
    name: str = "agaricus-lepiota.data", content: bytes = CONTENT, urls: tuple[str, ...] = (URL,)
) -> DataFile:
    return DataFile(dataset="mushroom", name=name, urls=urls, sha256=_sha(content))


def _put(path: Path, content: bytes = CONTENT) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _files_under(d: Path) -> list[Path]:
    return [p for p in d.rglob("*") if p.is_file()] if d.exists() else []


class FakeNet:
    """Stands in for ``urllib.request.urlopen``: serves bytes per URL, records calls."""

    def __init__(self, pages: dict[str, bytes] | None = None) -> None:
        self.pages = pages or {}
        self.calls: list[str] = []

    def __call__(self, url, timeout=None):
        self.calls.append(url)
        assert timeout is not None and timeout > 0, "downloads must have a timeout"
        if url not in self.pages:
            raise urllib.error.URLError("network is unreachable")
        return io.BytesIO(self.pages[url])


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """No test reaches the network, and ``$BANDITS_DATA_DIR`` (set by CI) is unset."""
    net = FakeNet()
    monkeypatch.setattr(urllib.request, "urlopen", net)
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    return net


@pytest.fixture
def net(_no_network) -> FakeNet:
    return _no_network


@pytest.fixture
def dirs(tmp_path) -> dict[str, Path]:
    """An explicit data dir, a dir for the env var, and the cache (from conftest's env)."""
    return {"explicit": tmp_path / "explicit", "env": tmp_path / "env", "cache": cache_dir()}


# ------------------------------------------------------------------------------ resolution


def test_cache_dir_comes_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv(ENV_CACHE_DIR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "bbb-bandits"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "bbb-bandits"


def test_explicit_dir_beats_env_var_beats_cache(monkeypatch, dirs, net):
    f = _file()
    in_explicit = _put(dirs["explicit"] / "mushroom" / f.name)
    in_env = _put(dirs["env"] / "mushroom" / f.name)
    in_cache = _put(dirs["cache"] / "mushroom" / f.name)
    monkeypatch.setenv(ENV_DATA_DIR, str(dirs["env"]))
    assert resolve(f, dirs["explicit"]) == in_explicit
    assert resolve(f) == in_env
    monkeypatch.delenv(ENV_DATA_DIR)
    assert resolve(f) == in_cache
    assert net.calls == []


def test_env_var_used_when_no_explicit_dir(monkeypatch, dirs):
    f = _file()
    in_env = _put(dirs["env"] / f.name)  # DIR/name works as well as DIR/dataset/name
    monkeypatch.setenv(ENV_DATA_DIR, str(dirs["env"]))
    assert resolve(f, download=False) == in_env
    assert [origin for origin, _ in candidate_dirs()] == [f"${ENV_DATA_DIR}", "cache"]


def test_explicit_dir_replaces_env_var(monkeypatch, dirs):
    """With an explicit directory the env var is not searched (only the cache is)."""
    f = _file()
    _put(dirs["env"] / "mushroom" / f.name)
    dirs["explicit"].mkdir()
    monkeypatch.setenv(ENV_DATA_DIR, str(dirs["env"]))
    assert [d for _, d in candidate_dirs(dirs["explicit"])] == [dirs["explicit"], dirs["cache"]]
    with pytest.raises(DataNotFoundError):
        resolve(f, dirs["explicit"], download=False)


def test_dataset_subdir_beats_flat_layout(dirs):
    f = _file()
    flat = _put(dirs["explicit"] / f.name)
    assert resolve(f, dirs["explicit"], download=False) == flat
    nested = _put(dirs["explicit"] / "mushroom" / f.name)
    assert resolve(f, dirs["explicit"], download=False) == nested
    assert resolve(f, str(dirs["explicit"]), download=False) == nested  # str works too


def test_explicit_dir_missing_file_falls_back_to_cache(dirs, net):
    f = _file()
    dirs["explicit"].mkdir()
    in_cache = _put(dirs["cache"] / "mushroom" / f.name)
    assert resolve(f, dirs["explicit"]) == in_cache
    assert net.calls == []


def test_resolve_all(dirs):
    a, b = _file("a.data"), _file("b.data")
    pa, pb = _put(dirs["explicit"] / "mushroom" / "a.data"), _put(dirs["explicit"] / "b.data")
    assert resolve_all([a, b], dirs["explicit"]) == [pa, pb]


# ------------------------------------------------------------------------------ download


def test_download_with_good_checksum_is_cached_and_returned(dirs, net):
    f = _file()
    net.pages[URL] = CONTENT
    got = resolve(f)
    assert got == dirs["cache"] / "mushroom" / f.name
    assert got.read_bytes() == CONTENT
    assert net.calls == [URL]
    assert _files_under(dirs["cache"]) == [got]  # no temporary file left behind
    # The second time it comes from the cache, without the network.
    assert resolve(f) == got
    assert net.calls == [URL]


def test_download_tries_the_next_url(dirs, net):
    f = _file(urls=(URL, MIRROR))
    net.pages[MIRROR] = CONTENT
    got = resolve(f, dirs["explicit"])
    assert got.read_bytes() == CONTENT
    assert net.calls == [URL, MIRROR]


def test_download_with_bad_checksum_leaves_nothing(dirs, net):
    f = _file()
    net.pages[URL] = CONTENT + b"tampered"
    with pytest.raises(DataNotFoundError) as info:
        resolve(f)
    msg = str(info.value)
    assert "checksum mismatch" in msg
    assert f.sha256 in msg and _sha(CONTENT + b"tampered") in msg
    assert URL in msg
    assert _files_under(dirs["cache"]) == []


def test_no_network_error_names_file_places_and_remedy(dirs, net):
    f = _file()
    dirs["explicit"].mkdir()
    with pytest.raises(DataNotFoundError) as info:
        resolve(f, dirs["explicit"])
    msg = str(info.value)
    assert f.name in msg
    for d in (dirs["explicit"], dirs["cache"]):
        assert str(d / "mushroom" / f.name) in msg
        assert str(d / f.name) in msg
    assert URL in msg and "unreachable" in msg
    assert "--data-dir" in msg and ENV_DATA_DIR in msg
    assert net.calls == [URL]
    assert _files_under(dirs["cache"]) == []
    assert isinstance(info.value, FileNotFoundError)


def test_no_download_when_disabled(dirs, net):
    with pytest.raises(DataNotFoundError, match="agaricus-lepiota.data"):
        resolve(_file(), download=False)
    assert net.calls == []


def test_gz_checksum_is_of_the_decompressed_content(dirs, net, tmp_path):
    raw = b"\x00\x00\x08\x03" + bytes(range(256)) * 8
    f = _file("train-images-idx3-ubyte.gz", content=raw, urls=(URL,))  # sha256 of raw bytes
    packed = gzip.compress(raw, compresslevel=9, mtime=0)
    assert _sha(packed) != f.sha256
    net.pages[URL] = packed
    got = resolve(f)
    assert got.read_bytes() == packed  # stored as downloaded (compressed)
    assert content_sha256(got) == f.sha256
    # A recompressed copy has other bytes but the same content checksum.
    other = _put(tmp_path / "other.gz", gzip.compress(raw, compresslevel=1, mtime=12345))
    assert other.read_bytes() != packed
    assert content_sha256(other) == f.sha256
    # A checksum of the compressed bytes is not what is checked.
    wrong = DataFile("mnist", f.name, (URL,), _sha(packed))
    with pytest.raises(DataNotFoundError, match="checksum mismatch"):
        resolve(wrong)


def test_corrupt_gz_download_is_reported_and_not_kept(dirs, net):
    f = _file("t10k-labels-idx1-ubyte.gz", content=b"labels")
    net.pages[URL] = b"<html>not a gzip file</html>"
    with pytest.raises(DataNotFoundError) as info:
        resolve(f)
    assert URL in str(info.value) and f.name in str(info.value)
    assert _files_under(dirs["cache"]) == []


def test_content_sha256_of_plain_file(tmp_path):
    p = _put(tmp_path / "x.data")
    assert content_sha256(p) == _sha(CONTENT)


def test_module_uses_urllib_request(net):
    """Guard for this file's isolation: the module downloads through the patched urlopen."""
    assert data.urllib.request.urlopen is net
