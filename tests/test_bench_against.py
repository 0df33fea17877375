"""``python -m bandits.bench --against REV`` leaves the repository as it found it: a REV that
is not a commit refused in one line before anything is made, and ``git worktree list`` the
same after every run, finished, interrupted, stopped or killed. Every worktree these tests
make is in a temporary clone of this repository, never in the repository itself."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bandits.bench import main
from bandits.tools import bench_worktree
from bandits.tools.bench_commands import NotMeasured, against

ROOT = Path(__file__).parents[1]
CODE = ("bandits", "agents", "envs")  # copied into the clone as they are in this checkout
SLEEPER = ("import os, pathlib, time\n"
           "pathlib.Path(os.environ['BENCH_TEST_MARK']).write_text(str(os.getpid()))\n"
           "time.sleep(120)\n")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout


def _worktrees(repo: Path) -> str:
    return _git(repo, "worktree", "list", "--porcelain")


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clone of this repository whose HEAD is this checkout's code."""
    if shutil.which("git") is None or subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    repo = tmp_path_factory.mktemp("clone") / "repo"
    _git(ROOT, "clone", "-q", str(ROOT), str(repo))
    listed = _git(ROOT, "ls-files", "-co", "--exclude-standard", "--", *CODE).splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, repo / name)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "this checkout")
    _git(repo, "tag", "base")
    return repo


def _with(repo: Path, files: dict[str, str], commit: bool = False) -> None:
    """The clone at its commit of this checkout's code, with ``files`` written."""
    _git(repo, "reset", "-q", "--hard", "base")
    for name, text in files.items():
        (repo / name).write_text(text)
    if commit:
        _git(repo, "commit", "-q", "-am", "stubs")


def _bench(repo: Path, tmp: Path, *args: str, **kwargs) -> subprocess.Popen:
    """``python -m bandits.bench --against ...`` of the clone's code, its temporary
    folders under ``tmp/tmp``."""
    (tmp / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(repo), "TMPDIR": str(tmp / "tmp"),
           "BENCH_TEST_MARK": str(tmp / "mark")}
    return subprocess.Popen([sys.executable, "-m", "bandits.bench", "--rounds", "1",
                             "--out", str(tmp / "out"), *args], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


@pytest.mark.parametrize("rev", ["nosuchrev", "HEAD~100000", "0" * 40, "HEAD^{tree}",
                                 "--help", "README.md", "", "-f", " "])
def test_a_rev_that_is_no_commit_is_refused_in_one_line_before_anything_is_made(
        tmp_path, capsys, rev):
    before = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True).stdout
    with pytest.raises(SystemExit) as stop:
        main([f"--against={rev}", "--out", str(tmp_path / "a")])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--against {rev!r} is not a commit" in err[0], err
    assert not (tmp_path / "a").exists()
    assert subprocess.run(["git", "worktree", "list"], cwd=ROOT,
                          capture_output=True).stdout == before


def test_only_its_own_worktrees_of_a_process_gone_are_stale(clone, tmp_path):
    _with(clone, {})
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True)
    gone, here = int(done.stdout), os.getpid()
    host = socket.gethostname()
    made = {"foreign": (tmp_path / "foreign", None),
            "alive": (tmp_path / f"{bench_worktree.PREFIX}a" / "old", here),
            "stale": (tmp_path / f"{bench_worktree.PREFIX}b" / "old", gone),
            "other reason": (tmp_path / f"{bench_worktree.PREFIX}c" / "old", "mine"),
            "other folder": (tmp_path / "d" / "old", gone)}
    for path, pid in made.values():
        lock = [] if pid is None else ["--lock", "--reason", pid if isinstance(pid, str)
                                       else f"{bench_worktree.REASON} (pid {pid} on {host})"]
        _git(clone, "worktree", "add", "-q", "--detach", *lock, str(path), "HEAD")
    try:
        assert bench_worktree.stale(clone) == [made["stale"][0]]
    finally:
        for path, _ in made.values():
            _git(clone, "worktree", "remove", "--force", "--force", str(path))


def test_a_finished_comparison_records_the_commit_and_leaves_no_worktree(clone, tmp_path):
    quick = "import sys\nsys.exit(0)\n"
    _with(clone, {"bandits/run.py": quick, "bandits/mnist/__main__.py": quick}, commit=True)
    before = _worktrees(clone)
    bench = _bench(clone, tmp_path, "--against", "HEAD")
    out, err = bench.communicate(timeout=300)
    assert bench.returncode == 0, err
    assert "uncommitted" not in err  # a clean tree: nothing to say
    record = json.loads((tmp_path / "out" / "against.json").read_text())
    assert record["commit"] == _git(clone, "rev-parse", "HEAD").strip()
    assert record["uncommitted_changes"] is False
    assert _worktrees(clone) == before and not any((tmp_path / "tmp").iterdir())


def _started(bench: subprocess.Popen, repo: Path, tmp: Path) -> int:
    """The pid of the timed command (the sleeper), once the worktree is made and it runs."""
    deadline = time.monotonic() + 120
    while not (tmp / "mark").is_file() or not (tmp / "mark").read_text():
        assert bench.poll() is None, bench.communicate()
        assert time.monotonic() < deadline, "the timed command never started"
        time.sleep(0.2)
    assert bench_worktree.PREFIX in _worktrees(repo)
    return int((tmp / "mark").read_text())


def _gone(pid: int) -> bool:
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)])
def test_an_interrupted_comparison_leaves_no_worktree_and_says_the_tree_is_dirty(
        clone, tmp_path, sig, code):
    _with(clone, {"bandits/run.py": SLEEPER})  # this checkout's side: uncommitted
    before = _worktrees(clone)
    bench = _bench(clone, tmp_path, "--against", "HEAD")
    sleeper = _started(bench, clone, tmp_path)
    bench.send_signal(sig)
    _, err = bench.communicate(timeout=60)
    assert bench.returncode == code, err
    notes = [line for line in err.splitlines() if "uncommitted changes" in line]
    assert len(notes) == 1 and notes[0].startswith("bandits.bench: note:"), err
    assert _worktrees(clone) == before
    assert not any((tmp_path / "tmp").iterdir()) and not (tmp_path / "out").exists()
    assert _gone(sleeper)


@pytest.mark.slow
def test_a_worktree_left_by_kill_9_is_removed_at_the_next_start(clone, tmp_path):
    _with(clone, {"bandits/run.py": SLEEPER})
    before = _worktrees(clone)
    bench = _bench(clone, tmp_path, "--against", "HEAD")
    sleeper = _started(bench, clone, tmp_path)
    bench.kill()
    bench.communicate(timeout=60)
    assert _gone(sleeper)  # it dies with the benchmark
    assert _worktrees(clone).count("worktree ") == before.count("worktree ") + 1
    _with(clone, {"bandits/run.py": "import sys\nsys.exit('boom')\n"})
    shutil.rmtree(tmp_path / "out")
    again = _bench(clone, tmp_path, "--against", "HEAD")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 1 and "failed: boom" in err, err
    assert _worktrees(clone) == before and not any((tmp_path / "tmp").iterdir())


@pytest.mark.slow
def test_against_times_both_sides_from_a_worktree(clone):
    _with(clone, {})
    before = _worktrees(clone)
    tiny = {"tiny": ["bandits.run", "--agent", "uniform", "--env", "wheel", "--steps", "5",
                     "--seeds", "1", "--workers", "1", "--no-progress"]}
    table = against("HEAD", 2, tiny, repo=clone)  # two rounds: each run its own folder
    assert table["side"].tolist() == ["this commit, native", "this commit, exact",
                                      "HEAD, its default"]
    assert (table["seconds"] > 0).all() and table["over_HEAD"].iloc[2] == 1.0
    assert all(len(each.split()) == 2 for each in table["each"])
    with pytest.raises(NotMeasured, match="failed: .*--no-such-flag"):
        against("HEAD", 1, {"bad": [*tiny["tiny"], "--no-such-flag"]}, repo=clone)
    assert _worktrees(clone) == before
