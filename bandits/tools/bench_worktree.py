"""The temporary ``git worktree`` of ``python -m bandits.bench --against REV``, which leaves
the repository as it found it: REV resolved to a commit before anything is made
(:func:`resolve`), the worktree marked as the benchmark's own (its folder's name starts
with :data:`PREFIX`, and it is locked with a reason naming this process), removed however
the benchmark ends, SIGINT and SIGTERM included (:func:`worktree`), and one that a
benchmark killed outright (``kill -9``) left behind removed at the next one's start; a
worktree that is not the benchmark's own is never touched."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bandits.core.config import UsageError
from bandits.core.processes import sigint_handler
from bandits.core.startup import on_stop

REPO = Path(__file__).resolve().parents[2]  # the checkout this code runs from
PREFIX = "bandits-bench-against-"  # the name of the temporary folder holding the worktree
REASON = "bandits.bench --against"  # the start of its lock's reason
RUNNING: list[subprocess.Popen] = []  # the command running now (run), killed on SIGTERM


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)


def resolve(rev: str, repo: Path = REPO) -> str:
    """The commit ``rev`` names in ``repo``, as its full sha; a :class:`UsageError` (one
    line) where it names none (a tree, a file, an option, nothing)."""
    try:
        found = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options",
                     f"{rev}^{{commit}}") if rev.strip() else None
    except OSError as e:  # no git here
        raise UsageError(f"--against needs git: {e.strerror}") from None
    if found is None or found.returncode != 0:
        raise UsageError(f"--against {rev!r} is not a commit of the repository at {repo}; "
                         "give one (a sha, a branch, a tag, HEAD~1)")
    return found.stdout.strip()


def uncommitted(repo: Path = REPO) -> bool:
    """Whether ``repo``'s tracked files differ from its HEAD (this checkout's side of the
    comparison then runs changes that no commit holds)."""
    return bool(_git(repo, "status", "--porcelain", "--untracked-files=no").stdout.strip())


def _reason() -> str:
    return f"{REASON} (pid {os.getpid()} on {socket.gethostname()})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


def stale(repo: Path = REPO) -> list[Path]:
    """The worktrees of ``repo`` that a benchmark of this machine made and whose process
    is gone: in a folder named :data:`PREFIX`..., locked with :func:`_reason`'s reason."""
    found = []
    for entry in _git(repo, "worktree", "list", "--porcelain").stdout.split("\n\n"):
        lines = dict(line.partition(" ")[::2] for line in entry.splitlines())
        mark = re.fullmatch(re.escape(REASON) + r" \(pid (\d+) on (.*)\)", lines.get("locked", ""))
        path = Path(lines.get("worktree", ""))
        if (mark and path.parent.name.startswith(PREFIX) and mark[2] == socket.gethostname()
                and not _alive(int(mark[1]))):
            found.append(path)
    return found


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, stderr=PIPE, text=True, **kwargs)`` in a process group of its
    own, which :func:`worktree`'s cleanup kills first (git's checkout, a timed command
    and their children: nothing writes into the folders as they go)."""
    with subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True,
                          **kwargs) as proc:
        RUNNING.append(proc)
        try:
            _, err = proc.communicate()
        except BaseException:  # a Ctrl-C: the command ends before its folder goes
            _kill(proc)
            proc.wait()
            raise
        finally:
            RUNNING.remove(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, None, err)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # gone already
        pass


def _remove(repo: Path, tree: Path) -> None:
    """The worktree ``tree`` and the temporary folder holding it gone: what runs in it
    killed (not waited for: this may run in a signal handler), the folder removed, then
    git's record of it (which git drops for a worktree whose folder is gone, even one
    whose checkout was cut short)."""
    for running in RUNNING:
        _kill(running)
    shutil.rmtree(tree.parent, ignore_errors=True)
    _git(repo, "worktree", "remove", "--force", "--force", str(tree))


@contextlib.contextmanager
def worktree(commit: str, repo: Path = REPO) -> Iterator[Path]:
    """A temporary worktree of ``commit`` (a sha, :func:`resolve`) in a temporary folder
    of its own, where the commands may write too; both removed on leaving, however (a
    Ctrl-C, SIGTERM: :func:`bandits.core.startup.on_stop`). Stale ones (:func:`stale`)
    are removed first. A checkout that fails raises :class:`RuntimeError` (one line)."""
    for old in stale(repo):
        _remove(repo, old)
    tree = Path(tempfile.mkdtemp(prefix=PREFIX)) / "old"
    on_stop(lambda: _remove(repo, tree))
    try:
        made = run(["git", "-C", str(repo), "worktree", "add", "--detach", "--lock",
                    "--reason", _reason(), str(tree), commit],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        if made.returncode != 0:
            why = (made.stderr.strip().splitlines() or ["git failed"])[-1]
            raise RuntimeError(f"cannot check {commit} out ({why})")
        yield tree
    finally:
        with sigint_handler(signal.SIG_IGN):  # a second Ctrl-C does not cut the cleanup short
            _remove(repo, tree)
