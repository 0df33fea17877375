"""Where results go: output directories, their claims (one run at a time writes into a
directory), and what an ``--overwrite`` may remove (only the files its own command
wrote). How they are written: :mod:`bandits.files`.
"""

from __future__ import annotations

import contextlib
import datetime
import fnmatch
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from bandits import startup
from bandits.files import written_by


class OutputDirError(ValueError):
    """The output directory cannot be used (exists with data, is a file, is not writable,
    another run is writing into it, holds another command's outputs)."""


# where an entry point writes when no --out is given: a new directory under here, outside
# results/ (which holds only the shipped reference results, written by a command that names
# them with --out)
RUNS = "runs"
# the claim file in an output directory (held while a run writes into it); a name of the
# project's own, and a content of its own (:data:`CLAIM` and the claiming process's pid),
# so that a user's file of that name is never taken for it, written into or removed
LOCK = ".bandits.lock"
CLAIM = "bandits output-directory claim, pid "
_CLAIM_LINE = re.compile(re.escape(CLAIM) + r"[0-9]+\n")
_claims: dict[Path, tuple[int, bool]] = {}  # directory -> (descriptor holding its lock,
#                                             whether the lock file is the project's own)


def _claim_text() -> bytes:
    return f"{CLAIM}{os.getpid()}\n".encode()


def _read_fd(fd: int, limit: int = 256) -> bytes:
    with contextlib.suppress(OSError):
        return os.pread(fd, limit, 0)
    return b""


def _open_lock(lock: Path) -> tuple[int, bool]:
    """Open ``lock``, creating it with this process's claim in it when there is none (the
    file appears whole, never empty: a user's empty file is never taken for a claim);
    returns the descriptor and whether this call created it."""
    tmp = lock.with_name(f"{LOCK}.{os.getpid()}.tmp")
    created = False
    try:
        with open(tmp, "wb") as f:
            f.write(_claim_text())
        try:
            os.link(tmp, lock)
            created = True
        except FileExistsError:
            pass
        except OSError:  # no hard links on this file system: create it, then write
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
            except FileExistsError:
                pass
            else:
                os.write(fd, _claim_text())
                return fd, True
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    try:
        return os.open(lock, os.O_RDWR), created
    except OSError:
        if created:  # leave no claim behind that nobody holds
            lock.unlink(missing_ok=True)
        raise


def claim_dir(path: Path, outputs: Sequence[str] = ()) -> None:
    """Claim ``path`` for this process: an exclusive lock on ``path/.bandits.lock``, held
    until :func:`release_dir` or the process ends (a killed process releases it at once).
    The lock file records the claim (:data:`CLAIM` and this process's pid); a file of
    that name that is not a claim (a user's) is locked as it is, never written into nor
    removed. Where an earlier process was killed (its claim is still there), the claim
    also removes what it left mid-write: the temporaries of the files ``outputs`` names
    (:func:`remove_stale_temporaries`). Without such a claim, a file named like a
    temporary is a user's, and stays.

    Raises:
        OutputDirError: Another process holds the claim, or the lock cannot be taken.
    """
    key = Path(path).resolve()
    if key in _claims:
        return
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: nothing to claim with
        return
    lock = key / LOCK
    busy = (f"another run is writing into {path} right now; wait for it to finish or "
            "choose another --out")
    for _ in range(3):
        try:
            fd, ours = _open_lock(lock)
        except OSError as e:
            raise OutputDirError(f"cannot write to output directory {path}: "
                                 f"{e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputDirError(busy) from None
        try:  # the holder may have released (and removed) it between our open and lock
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
    else:
        raise OutputDirError(busy)
    # a claim left by a killed run (or one whose creator lost the race to lock it) is the
    # project's too: this process's now
    left = not ours and _CLAIM_LINE.fullmatch(_read_fd(fd).decode("latin-1")) is not None
    ours = ours or left
    if ours:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, _claim_text(), 0)
        except OSError as e:
            os.close(fd)
            raise OutputDirError(f"cannot write to output directory {path}: "
                                 f"{e.strerror}") from None
    _claims[key] = (fd, ours)
    startup.on_stop(release_all)  # a SIGTERM leaves no claim behind
    if left:  # a killed run's folder: what its writes left is the project's to remove
        remove_stale_temporaries(key, outputs)


def release_all() -> None:
    """Give up every claim this process holds (:func:`release_dir`)."""
    for key in list(_claims):
        release_dir(key)


def holds_own_lock(path: Path) -> bool:
    """Whether this process holds the claim of ``path`` in a lock file of its own (not in
    a user's file that happens to be named :data:`LOCK`)."""
    held = _claims.get(Path(path).resolve())
    return held is not None and held[1]


def release_dir(path: Path) -> None:
    """Give up the claim of :func:`claim_dir` and remove its lock file when it still
    holds this process's claim (no-op when not held); a run's directory holds only its
    outputs afterwards, and a user's file named like the lock stays."""
    key = Path(path).resolve()
    held = _claims.pop(key, None)
    if held is None:
        return
    fd, ours = held
    try:
        if ours and _read_fd(fd) == _claim_text():
            (key / LOCK).unlink(missing_ok=True)
    except OSError:
        pass
    finally:
        os.close(fd)  # closing the descriptor releases the lock


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
            (:func:`bandits.files.written_by`) is refused, with or without ``overwrite``.

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
    try:
        if path.exists() and not path.is_dir():
            raise OutputDirError(f"output path {path} exists and is not a directory; "
                                 "choose another --out")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # not a directory on the way, permissions, a name too long
        raise OutputDirError(f"cannot write to output directory {_short(path)}: "
                             f"{e.strerror or e}") from None
    claim_dir(path, outputs)
    if kind is not None:
        foreign = foreign_outputs(path, kind, outputs, own_dir, dir_outputs)
        if foreign:
            release_dir(path)
            writer, files = foreign
            shown = ", ".join(files[:3]) + (", ..." if len(files) > 3 else "")
            raise OutputDirError(f"output directory {path} holds outputs of {writer} "
                                 f"({shown}), which {kind} never replaces, even with "
                                 "--overwrite; choose another --out")
    own_lock = holds_own_lock(path)
    if not overwrite and any(p.name != LOCK or not own_lock for p in path.iterdir()):
        release_dir(path)
        raise OutputDirError(f"output directory {path} exists and is not empty; "
                             "pass --overwrite or choose another --out")
    try:
        probe = path / f".write-test.{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        release_dir(path)
        raise OutputDirError(f"cannot write to output directory {path}: {e.strerror}") from None
    if overwrite and clear:
        clear_outputs(path, outputs, own_dir, dir_outputs)
    return path


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _real_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink()


def _stale_temporary_of(name: str, pattern: str) -> bool:
    """Whether ``name`` is what :func:`write_atomic` left of a file matching ``pattern``
    when its process was killed mid-write (``.NAME.PID.tmp``, that process gone)."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return False
    base, _, pid = name[1:-len(".tmp")].rpartition(".")
    if not base or not pid.isdigit() or not fnmatch.fnmatchcase(base, pattern):
        return False
    return int(pid) != os.getpid() and not _alive(int(pid))


def matching_files(root: Path, outputs: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """The files under ``root`` that ``outputs`` names (``/``-separated ``fnmatch``
    patterns, each part matched against one level's names), with the temporaries a killed
    write of them left; and the folders the patterns go through (deepest first). Never
    follows a symbolic link to a folder; a folder is never one of the files."""
    files: dict[Path, None] = {}
    folders: dict[Path, None] = {}
    for pattern in outputs:
        *parts, last = pattern.split("/")
        level = [root]
        for part in parts:
            level = [e for d in level for e in _entries(d)
                     if _real_dir(e) and fnmatch.fnmatchcase(e.name, part)]
            folders.update(dict.fromkeys(level))
        for d in level:
            for e in _entries(d):
                if e.name == LOCK or e.is_dir():
                    continue
                if fnmatch.fnmatchcase(e.name, last) or _stale_temporary_of(e.name, last):
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
    own = [d for d in _entries(path) if own_dir is not None and _real_dir(d) and own_dir(d)]
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
    own = [d for d in _entries(path) if own_dir is not None and _real_dir(d) and own_dir(d)]
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


def remove_stale_temporaries(path: Path, outputs: Sequence[str] = ()) -> None:
    """Remove what an interrupted atomic write left in ``path`` (``.NAME.PID.tmp``, see
    :func:`write_atomic`; a process killed mid-write cannot remove its own): only the
    temporaries of the files ``outputs`` names (patterns without a folder), of processes
    that are gone. A user's file, even one named like a temporary, stays."""
    patterns = [p for p in outputs if "/" not in p]
    for entry in _entries(path):
        if not entry.is_file() or entry.is_symlink():
            continue
        if any(_stale_temporary_of(entry.name, p) for p in patterns) or (
                _stale_temporary_of(entry.name, LOCK[1:]) and _is_claim_file(entry)):
            entry.unlink(missing_ok=True)


def _is_claim_file(path: Path) -> bool:
    """Whether ``path`` holds a claim as :func:`claim_dir` writes it (the temporary of
    :func:`_open_lock` that a killed process left)."""
    try:
        with open(path, "rb") as f:
            return _CLAIM_LINE.fullmatch(f.read(256).decode("latin-1")) is not None
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _short(path: Path, limit: int = 120) -> str:
    """A path for a one-line message: cut in the middle when it is very long."""
    text = str(path)
    return text if len(text) <= limit else text[:limit // 2] + "..." + text[-limit // 2:]


def remove_if_unused(path: Path) -> None:
    """Release ``path`` and remove it if it holds nothing but its claim (a run that failed
    before writing anything leaves no empty directory behind)."""
    release_dir(path)
    with contextlib.suppress(OSError):
        path.rmdir()  # only succeeds when empty
