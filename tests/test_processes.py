"""The one worker pool (bandits.core.processes.run_jobs): results in order, a job that raises,
a worker that dies, retries, and Ctrl-C passed on once to every worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from bandits.core.processes import how_it_ended, one_line, run_jobs

ROOT = Path(__file__).resolve().parents[1]


def job(kind: str) -> str:
    """A pool job: returns, raises, or kills its worker (``os._exit``); ``die-once:PATH``
    dies the first time only (it leaves PATH behind)."""
    if kind == "raise":
        raise ValueError("a bad job\nits last line")
    if kind == "die" or (kind.startswith("die-once:") and not os.path.exists(kind[9:])):
        if kind != "die":
            Path(kind[9:]).write_text("")
        os._exit(1)
    return kind.upper()


def test_each_job_ends_in_order_with_its_result_or_its_error():
    seen, running = [], []
    # one worker, the dying job last: the pool it breaks holds no other job
    ended = run_jobs(job, ["a", "raise", "b", "die"], workers=1, on_end=seen.append,
                     on_running=running.append)
    assert [e.index for e in ended] == [0, 1, 2, 3]
    assert [e.result for e in ended] == ["A", None, "B", None]
    assert isinstance(ended[1].error, ValueError) and not ended[1].died
    assert one_line(ended[1].error) == "ValueError: its last line"
    assert ended[3].died and isinstance(ended[3].error, BrokenProcessPool)
    assert all(e.tries == 1 for e in ended)
    assert sorted(e.index for e in seen) == [0, 1, 2, 3]  # each reported once, as it ended
    assert running[0] == 1 and running[-1] == 0


def test_a_failed_job_runs_again_while_it_has_tries_left(tmp_path):
    once = f"die-once:{tmp_path / 'died'}"
    ended = run_jobs(job, [once, "raise", "c"], workers=1, retries=1)
    assert ended[0].result == f"{once}".upper() and ended[0].tries == 2
    assert isinstance(ended[1].error, ValueError) and ended[1].tries == 2
    assert ended[2].result == "C"


def test_how_a_worker_ended_in_words():
    assert how_it_ended(-9) == "signal 9" and how_it_ended(1) == "exit status 1"


# A parent of four jobs in two workers: each running job waits for Ctrl-C (turned on in
# the job, as bandits.run's loop does); a job handed out after the Ctrl-C never starts.
PARENT = """
import json, os, signal, sys, time
from pathlib import Path
from bandits.core.processes import JobsInterrupted, ctrl_c_on, parent_stopped, run_jobs

def wait_for_ctrl_c(k):
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if parent_stopped():
        raise KeyboardInterrupt
    Path(f"started-{k}").write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)

if __name__ == "__main__":
    try:
        with ctrl_c_on():
            run_jobs(wait_for_ctrl_c, range(4), workers=2)
    except JobsInterrupted as e:
        print(json.dumps([[x.index, type(x.error).__name__] for x in e.ended]))
        sys.exit(130)
"""


def _parent(tmp_path: Path) -> subprocess.Popen:
    """The parent above, once two jobs have started; started with SIGINT ignored (as a
    shell script's `cmd &` starts it)."""
    (tmp_path / "parent.py").write_text(PARENT)
    proc = subprocess.Popen([sys.executable, "parent.py"], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    end = time.monotonic() + 120
    while len(list(tmp_path.glob("started-*"))) < 2:
        assert time.monotonic() < end and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    return proc


def test_ctrl_c_reaches_every_worker_once_and_the_queued_jobs_never_start(tmp_path):
    proc = _parent(tmp_path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    ended = json.loads(out)
    assert len(list(tmp_path.glob("started-*"))) == 2
    assert {i for i, _ in ended} >= {0, 1}
    assert all(kind == "KeyboardInterrupt" for _, kind in ended), ended


def test_workers_end_with_their_killed_parent(tmp_path):
    proc = _parent(tmp_path)
    time.sleep(0.2)  # both files written
    workers = [int(f.read_text()) for f in tmp_path.glob("started-*")]
    proc.kill()
    proc.communicate()
    _all_end(workers, "a worker outlived its parent")


def _all_end(pids: list[int], what: str) -> None:
    """Wait (20 s at most) until every process of ``pids`` has ended, else fail saying
    ``what``."""
    end = time.monotonic() + 20
    while any(Path(f"/proc/{p}").exists() and "Z" not in _state(p) for p in pids):
        assert time.monotonic() < end, what
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return "Z"


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().split(") ")[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            pass
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent watch is Linux's")
def test_a_killed_benchmark_leaves_no_command_of_its_own_computing(tmp_path):
    # kill -9 of python -m bandits.bench --kernels: the run it started ends with it
    proc = subprocess.Popen([sys.executable, "-m", "bandits.bench", "--kernels", "--rounds",
                             "1", "--out", str(tmp_path / "b")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    while not (children := _children(proc.pid)):
        assert proc.poll() is None and time.monotonic() < end, "it started no command"
        time.sleep(0.1)
    proc.kill()
    proc.communicate()
    _all_end(children, "a command outlived the benchmark that started it")
