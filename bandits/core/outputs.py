"""Where results go: output directories and what an ``--overwrite`` may remove (only the
files its own command wrote). Their claims (one run at a time writes into a directory):
:mod:`bandits.core.claims`; how files are written: :mod:`bandits.core.files`.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from bandits.core.claims import (
    LOCK,
    OutputDirError,
    claim_dir,
    entries,
    holds_own_lock,
    name_matches,
    release_dir,
    stale_temporary_of,
)
from bandits.core.files import written_by

# where an entry point writes when no --out is given: a new directory under here, outside
# results/ (which holds only the shipped reference results, written by a command that names
# them with --out)
RUNS = "runs"

# each output directory output_dir made, with the folders it made on the way (deepest
# first): all that remove_if_unused may remove (a folder that was there before stays)
_made: dict[Path, list[Path]] = {}


def _not_empty(path: Path) -> OutputDirError:
    return OutputDirError(f"output directory {path} exists and is not empty; "
                          "pass --overwrite or choose another --out")


def refuse_taken(out: Path | str | None, overwrite: bool) -> None:
    """Before any slow work (loading data), the refusal :func:`output_dir` would give a
    non-empty ``out`` without ``overwrite``; nothing is created or claimed here."""
    if out is None or overwrite:
        return
    path = Path(out)
    if path.is_dir() and any(p.name != LOCK for p in path.iterdir()):
        raise _not_empty(path)


def output_dir(out: Path | str | None, name: str, overwrite: bool = False,
               outputs: Sequence[str] = (), own_dir: Callable[[Path], bool] | None = None,
               *, dir_outputs: Sequence[str] = (), kind: str | None = None,
               clear: bool = True) -> Path:
    """Create or check an entry point's output directory, and claim it (:func:`claim_dir`).

    Args:
        out: The directory asked for, or ``None`` for a new one,
            ``runs/<timestamp>-<name>``.
        name: Suffix of the new directory's name.
        overwrite: Allow an existing non-empty directory: the entry point's previous
            outputs in it are removed first (:func:`clear_outputs`: the files
            ``outputs`` names, and in each sub-directory ``own_dir`` recognises the files
            ``dir_outputs`` names), so that no stale output survives beside the new ones;
            nothing else is deleted, and a folder only when nothing else is left in it.
        outputs: The files the entry point writes, as ``/``-separated name patterns
            relative to the directory (``metrics.csv``, ``parts/worker-*.log``).
        clear: With ``overwrite``, remove the previous outputs first; False where each
            file is replaced atomically once whole (an interruption keeps the old ones).
        kind: The entry point (``"bandits.run"``); when given, a directory whose files
            named in ``outputs`` were written by another entry point
            (:func:`bandits.core.files.written_by`) is refused, with or without ``overwrite``.

    The claim makes the check atomic: of two runs started at once into the same new
    directory, exactly one gets it; the other gets an error (see :func:`claim_dir`).

    Raises:
        OutputDirError: ``out`` is a file, a non-empty directory without
            ``overwrite``, holds another entry point's outputs, cannot be written to, or
            is claimed by another run.
    """
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path, i = Path(RUNS) / f"{stamp}-{name}", 1
        while path.exists():
            i += 1
            path = Path(RUNS) / f"{stamp}-{name}-{i}"
    else:
        path = Path(out)
    made: list[Path] = []  # the folders this call makes, deepest first
    try:
        if path.exists() and not path.is_dir():
            raise OutputDirError(f"output path {path} exists and is not a directory; "
                                 "choose another --out")
        made = [p for p in (path, *path.parents) if not p.exists()]
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # not a directory on the way, permissions, a name too long
        _remove_empty(made)
        raise OutputDirError(f"cannot write to output directory {_short(path)}: "
                             f"{e.strerror or e}") from None
    _made[path.resolve()] = [p.resolve() for p in made]
    claim_dir(path, outputs)
    if kind is not None:
        foreign = foreign_outputs(path, kind, outputs, own_dir, dir_outputs)
        if foreign:
            remove_if_unused(path)
            writer, files = foreign
            shown = ", ".join(files[:3]) + (", ..." if len(files) > 3 else "")
            raise OutputDirError(f"output directory {path} holds outputs of {writer} "
                                 f"({shown}), which {kind} never replaces, even with "
                                 "--overwrite; choose another --out")
    own_lock = holds_own_lock(path)
    if not overwrite and any(p.name != LOCK or not own_lock for p in path.iterdir()):
        remove_if_unused(path)
        raise _not_empty(path)
    try:
        probe = path / f".write-test.{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        remove_if_unused(path)
        raise OutputDirError(f"cannot write to output directory {path}: {e.strerror}") from None
    if overwrite and clear:
        clear_outputs(path, outputs, own_dir, dir_outputs)
    return path


def _real_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink()


def matching_files(root: Path, outputs: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """The files under ``root`` that ``outputs`` names (``/``-separated patterns, each part
    matched against one level's names by :func:`bandits.core.claims.name_matches`), with
    the temporaries a killed write of them left; and the folders the patterns go through
    (deepest first). Never follows a symbolic link to a folder; a folder is never one of
    the files."""
    files: dict[Path, None] = {}
    folders: dict[Path, None] = {}
    for pattern in outputs:
        *parts, last = pattern.split("/")
        level = [root]
        for part in parts:
            level = [e for d in level for e in entries(d)
                     if _real_dir(e) and name_matches(e.name, part)]
            folders.update(dict.fromkeys(level))
        for d in level:
            for e in entries(d):
                if e.name == LOCK or e.is_dir():
                    continue
                if name_matches(e.name, last) or stale_temporary_of(e.name, last):
                    files[e] = None
    deepest = sorted(folders, key=lambda p: len(p.parts), reverse=True)
    return list(files), deepest


def clear_outputs(path: Path, outputs: Sequence[str],
                  own_dir: Callable[[Path], bool] | None = None,
                  dir_outputs: Sequence[str] = ()) -> list[str]:
    """Remove an entry point's previous outputs from ``path``: the files ``outputs``
    names (see :func:`matching_files`), and in each sub-directory that ``own_dir``
    recognises the files ``dir_outputs`` names; then each folder of theirs that holds
    nothing else. Returns the paths removed, relative to ``path``. A user's files stay,
    and so does every folder that holds one."""
    path = Path(path)
    own = [d for d in entries(path) if own_dir is not None and _real_dir(d) and own_dir(d)]
    removed = []
    for root, patterns in [(path, outputs), *((d, dir_outputs) for d in own)]:
        files, folders = matching_files(root, patterns)
        for f in files:
            try:
                f.unlink()
            except FileNotFoundError:
                continue
            removed.append(f.relative_to(path).as_posix())
        for d in folders + ([root] if root != path else []):
            try:
                d.rmdir()  # only when empty
            except OSError:
                continue
            removed.append(d.relative_to(path).as_posix() + "/")
    return removed


def _writer(file: Path, root: Path) -> str | None:
    """Who wrote ``file`` (under ``root``): its own word (:func:`written_by`), its twin
    record's (``bench.json`` for ``bench.csv``), else the nearest ``config.json`` or, up to
    ``root``, the JSON records (``screen.json``) of a folder when they all name one."""
    own = written_by(file)
    if own is not None or file.name == "config.json":
        return own
    twin = file.with_suffix(".json")
    if twin != file and twin.is_file() and written_by(twin) is not None:  # bench.csv's
        return written_by(twin)
    folder = file.parent
    while True:
        record = folder / "config.json"
        if record.is_file():
            return written_by(record)
        writers = {written_by(other) for other in folder.glob("*.json")} - {None}
        if writers:  # several commands' records side by side: none speaks for this file
            return writers.pop() if len(writers) == 1 else None
        if folder == root or root not in folder.parents:
            return None
        folder = folder.parent


def foreign_outputs(path: Path, kind: str, outputs: Sequence[str],
                    own_dir: Callable[[Path], bool] | None = None,
                    dir_outputs: Sequence[str] = ()) -> tuple[str, list[str]] | None:
    """The first other entry point whose files in ``path`` an overwrite by ``kind``
    would replace (the files ``outputs`` names, and ``dir_outputs`` in the folders
    ``own_dir`` recognises), with those files; None when there are none."""
    path = Path(path)
    own = [d for d in entries(path) if own_dir is not None and _real_dir(d) and own_dir(d)]
    found: dict[str, list[str]] = {}
    for root, patterns in [(path, outputs), *((d, dir_outputs) for d in own)]:
        for f in matching_files(root, patterns)[0]:
            writer = _writer(f, path)
            if writer is not None and writer != kind:
                found.setdefault(writer, []).append(f.relative_to(path).as_posix())
    if not found:
        return None
    writer = next(iter(found))
    return writer, found[writer]


def _short(path: Path, limit: int = 120) -> str:
    """A path for a one-line message: cut in the middle when it is very long."""
    text = str(path)
    return text if len(text) <= limit else text[:limit // 2] + "..." + text[-limit // 2:]


def remove_if_unused(path: Path) -> None:
    """Release ``path`` and, where :func:`output_dir` made it, remove it if it holds
    nothing but its claim, and then each folder it made on the way that is left empty
    (``runs/``): a run that failed before writing anything leaves no folder of its own
    behind. A folder that was there before, even an empty one the user named, stays."""
    release_dir(path)
    _remove_empty(_made.pop(Path(path).resolve(), []))


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove each of ``folders`` (deepest first) while they are empty."""
    for folder in folders:
        try:
            folder.rmdir()  # only succeeds when empty
        except FileNotFoundError:
            continue
        except OSError:
            break
