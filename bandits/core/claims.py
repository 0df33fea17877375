"""The claim of an output directory: one process at a time writes into it. The claim is
an exclusive lock on ``DIR/.bandits.lock`` that records the claiming process; a killed
process's lock is released by the system at once, and its claim file and the temporaries
of its interrupted writes are the project's to remove. A user's file of those names is
never written into nor removed. Which files a directory's outputs are:
:mod:`bandits.core.outputs`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from bandits.core import startup

try:
    import fcntl
except ImportError:  # no advisory locks on this platform: claim_dir claims nothing
    fcntl = None  # type: ignore[assignment]  # (a module or None: no type says it)


class OutputDirError(ValueError):
    """The output directory cannot be used (exists with data, is a file, is not writable,
    another run is writing into it, holds another command's outputs)."""


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
    if key in _claims or fcntl is None:  # no advisory locks: nothing to claim with
        return
    fd, ours = _lock(key / LOCK, path)
    # a claim left by a killed run (or one whose creator lost the race to lock it) is the
    # project's too: this process's now
    left = not ours and _CLAIM_LINE.fullmatch(_read_fd(fd).decode("latin-1")) is not None
    ours = ours or left
    if ours:
        _write_claim(fd, path)
    _claims[key] = (fd, ours)
    startup.on_stop(release_all)  # a SIGTERM leaves no claim behind
    if left:  # a killed run's folder: what its writes left is the project's to remove
        remove_stale_temporaries(key, outputs)


def _lock(lock: Path, path: Path) -> tuple[int, bool]:
    """The lock file ``lock`` of the directory ``path`` opened and locked exclusively, and
    whether this process created it (:func:`_open_lock`); where the holder released and
    removed it between the open and the lock, again (three tries)."""
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
            return fd, ours
        os.close(fd)
    raise OutputDirError(busy)


def _write_claim(fd: int, path: Path) -> None:
    """Write this process's claim into the locked lock file ``fd`` of ``path``."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, _claim_text(), 0)
    except OSError as e:
        os.close(fd)
        raise OutputDirError(f"cannot write to output directory {path}: "
                             f"{e.strerror}") from None


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


def entries(folder: Path) -> list[Path]:
    """What ``folder`` holds, sorted (nothing when it cannot be read)."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def name_matches(name: str, pattern: str) -> bool:
    """Whether the file or folder name ``name`` is one that ``pattern`` names: the name
    itself, with ``*`` for any text and ``<n>`` for a number (one or more digits) that
    the command puts there (``worker-<n>.log`` names ``worker-0.log``, never a user's
    ``worker-0-old.log``)."""
    parts = [re.escape(p).replace(r"\*", ".*") for p in pattern.split("<n>")]
    return re.fullmatch("[0-9]+".join(parts), name) is not None


def stale_temporary_of(name: str, pattern: str) -> bool:
    """Whether ``name`` is what :func:`write_atomic` left of a file matching ``pattern``
    when its process was killed mid-write (``.NAME.PID.tmp``, that process gone)."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return False
    base, _, pid = name[1:-len(".tmp")].rpartition(".")
    if not base or not pid.isdigit() or not name_matches(base, pattern):
        return False
    return int(pid) != os.getpid() and not _alive(int(pid))


def remove_stale_temporaries(path: Path, outputs: Sequence[str] = ()) -> None:
    """Remove what an interrupted atomic write left in ``path`` (``.NAME.PID.tmp``, see
    :func:`write_atomic`; a process killed mid-write cannot remove its own): only the
    temporaries of the files ``outputs`` names (patterns without a folder), of processes
    that are gone. A user's file, even one named like a temporary, stays."""
    patterns = [p for p in outputs if "/" not in p]
    for entry in entries(path):
        if not entry.is_file() or entry.is_symlink():
            continue
        if any(stale_temporary_of(entry.name, p) for p in patterns) or (
                stale_temporary_of(entry.name, LOCK[1:]) and _is_claim_file(entry)):
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


