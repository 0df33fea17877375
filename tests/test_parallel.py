"""--workers: populations in worker processes, the same bytes for every N."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bandits.run import main
from bandits.simulator import parallel

ROOT = Path(__file__).parents[1]
TINY = ["--env", "wheel", "--seeds", "2", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "1", "--no-progress", "--agent", "bbb", "greedy", "eps1",
        "eps5", "uniform", "linfullpost"]
FILES = ("metrics.csv", "summary.csv", "phases.csv", "memory.csv", "probes.csv")


def _outputs(d: Path) -> tuple[bytes, ...]:
    return tuple((d / f).read_bytes() for f in FILES)


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("w1") / "run"
    assert main([*TINY, "--steps", "300", "--workers", "1", "--out", str(out)]) == 0
    return out


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 3])
def test_the_same_bytes_for_every_number_of_workers(one_worker, tmp_path, workers):
    out = tmp_path / "run"
    assert main([*TINY, "--steps", "300", "--workers", str(workers), "--out", str(out)]) == 0
    assert _outputs(out) == _outputs(one_worker)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["workers"] == workers and len(cfg["parts"]) == workers
    assert (out / "regret.png").is_file()


def test_agents_are_balanced_over_the_workers_in_the_runs_order():
    names = ["bbb", "greedy", "eps1", "eps5", "uniform", "linfullpost"]
    bins = parallel.assign(names, 2)
    assert len(bins) == 2 and sorted(a for b in bins for a in b) == sorted(names)
    for b in bins:  # each worker's agents in the run's order
        assert b == sorted(b, key=names.index)
    assert parallel.assign(names, 10) == [[a] for a in names]


def test_the_default_is_the_cores_at_most_one_per_population(monkeypatch):
    from bandits.simulator.run import parse_config

    monkeypatch.delenv("BANDITS_WORKERS")
    monkeypatch.setattr(parallel, "available_cores", lambda: 8)
    # one population per agent (neighbour-free agents): three here
    assert parallel.worker_count(parse_config(["--agent", "bbb", "greedy", "eps1"])) == 3
    monkeypatch.setattr(parallel, "available_cores", lambda: 1)
    assert parallel.worker_count(parse_config(["--agent", "bbb", "greedy"])) == 1
    monkeypatch.setenv("BANDITS_WORKERS", "3")
    monkeypatch.setattr(parallel, "available_cores", lambda: 8)
    assert parallel.worker_count(parse_config(["--agent", "bbb", "greedy", "uniform",
                                               "linfullpost"])) == 3


def test_a_run_too_short_to_pay_a_worker_runs_in_one_process(monkeypatch):
    from bandits.simulator.run import parse_config

    monkeypatch.delenv("BANDITS_WORKERS")
    monkeypatch.setattr(parallel, "available_cores", lambda: 8)
    # 100 steps x 16 updates x 3 seeds x 4 agents = 19,200 updates: one process
    short = parse_config(["--steps", "100"])
    assert parallel.training_updates(short) == 19_200 < parallel.WORKER_PAYS
    assert parallel.worker_count(short) == 1
    assert parallel.worker_count(parse_config(["--steps", "105"])) == 4  # 20,160
    # training every 4th step after training at every one of the first 10
    sparse = parse_config(["--steps", "100", "--train-every", "4", "--train-always-until",
                           "10"])
    assert parallel.training_updates(sparse) == (25 + 10 - 2) * 16 * 3 * 4
    # what is asked for is run as asked
    assert parallel.worker_count(parse_config(["--steps", "1", "--workers", "2"])) == 2
    monkeypatch.setenv("BANDITS_WORKERS", "2")
    assert parallel.worker_count(short) == 2


def _start(out: Path, steps: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "bandits.run", *TINY, "--steps", str(steps), "--workers", "2",
           "--checkpoint-every", "0", "--out", str(out)]
    return subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for(out: Path, n: int = 2, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while len(list(out.glob("parts/*/checkpoint.pt"))) < n:
        assert time.monotonic() < end, "no checkpoint"
        time.sleep(0.1)


@pytest.mark.slow
def test_ctrl_c_stops_every_worker_at_a_checkpoint_and_resume_is_exact(one_worker, tmp_path):
    out = tmp_path / "run"
    proc = _start(out, 300)
    _wait_for(out)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and f"--resume {out}" in err
    assert main(["--resume", str(out), "--no-progress"]) == 0
    assert _outputs(out) == _outputs(one_worker)


@pytest.mark.slow
def test_a_killed_worker_is_one_line_never_a_hang(one_worker, tmp_path):
    out = tmp_path / "run"
    proc = _start(out, 300)
    _wait_for(out)
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                             text=True).stdout.split()
    os.kill(int(workers[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and "died (signal 9)" in err
    assert main(["--resume", str(out), "--no-progress"]) == 0
    assert _outputs(out) == _outputs(one_worker)


@pytest.mark.slow
def test_workers_die_with_their_coordinator(tmp_path):
    out = tmp_path / "run"
    proc = _start(out, 100_000)
    _wait_for(out)
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                             text=True).stdout.split()
    assert len(workers) == 2
    proc.kill()
    proc.wait()
    end = time.monotonic() + 20
    while any(Path(f"/proc/{w}").exists() and _state(w) != "Z" for w in workers):
        assert time.monotonic() < end, "a worker outlived its coordinator"
        time.sleep(0.1)


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return "Z"


@pytest.mark.slow
def test_divergence_in_a_worker_is_reported(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["--env", "wheel", "--seeds", "2", "--hidden", "8", "--agent", "greedy",
                 "uniform", "bbb", "--lr", "1e30", "--steps", "200", "--no-progress",
                 "--workers", "2", "--out", str(out)])
    assert code == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "diverged" in err


@pytest.mark.slow
def test_bench_scaling_writes_its_table(tmp_path, mushroom_data_dir, monkeypatch):
    from bandits.tools import bench

    monkeypatch.setenv("BANDITS_DATA_DIR", str(mushroom_data_dir))
    # horizons far enough apart that the steps' time outweighs start-up noise on a busy
    # machine (the bench refuses a difference it cannot measure)
    assert bench.main(["--scaling", "--scaling-steps", "2", "24", "--rounds", "1",
                       "--out", str(tmp_path)]) == 0
    import pandas as pd

    df = pd.read_csv(tmp_path / "scaling.csv")
    assert list(df["workers"]) == list(range(1, parallel.available_cores() + 1))
    assert (df["paper_protocol_hours_projected"] > 0).all()
    assert df["speedup_over_1_worker"].iloc[0] == 1


@pytest.mark.slow
def test_bench_default_command_times_each_worker_count_and_checks_the_bytes(
        mushroom_data_dir, monkeypatch):
    from bandits.tools import bench

    monkeypatch.setenv("BANDITS_DATA_DIR", str(mushroom_data_dir))
    df = bench.default_command([1, 2], rounds=1,
                               extra=["--steps", "4", "--seeds", "1", "--log-points", "4"])
    assert list(df["workers"]) == [1, 2]
    assert df["same_bytes_as_1_worker"].all() and (df["wall_seconds_median"] > 0).all()


def test_a_pool_worker_prints_no_traceback_for_a_ctrl_c_in_a_callback(monkeypatch):
    import types

    from bandits.core.processes import _unraisable
    reported = []
    monkeypatch.setattr(sys, "__unraisablehook__", reported.append)
    interrupt = types.SimpleNamespace(exc_type=KeyboardInterrupt)
    other = types.SimpleNamespace(exc_type=ValueError)
    _unraisable(interrupt)
    _unraisable(other)
    assert reported == [other]


HOOK = '''
import json


class StepCounter:
    """Counts the steps it sees and writes, at the last one, what it saw."""

    def __init__(self, cfg, out):
        self.out, self.steps, self.seen = out, cfg.run.steps, 0

    def after_step(self, populations, log, stopping):
        self.seen += 1
        if log.done == self.steps:
            names = [pop.agent.name for pop in populations]
            (self.out / "hook.json").write_text(json.dumps({"seen": self.seen,
                                                            "agents": names}))
'''


@pytest.mark.slow
def test_a_hook_named_by_import_path_runs_in_every_worker_and_changes_no_result(
        one_worker, tmp_path):
    (tmp_path / "my_hooks.py").write_text(HOOK)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "bandits.run", *TINY, "--steps", "300",
                           "--workers", "2", "--hook", "my_hooks:StepCounter",
                           "--out", str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _outputs(out) == _outputs(one_worker)  # looking changes nothing
    parts = json.loads((out / "config.json").read_text())["parts"]
    seen = [json.loads((out / "parts" / str(k) / "hook.json").read_text())
            for k in range(len(parts))]
    assert [s["seen"] for s in seen] == [300, 300]
    assert sorted(a for s in seen for a in s["agents"]) == sorted(TINY[TINY.index("--agent") + 1:])
    # and in one process, from Python, the same hook by the same path
    import bandits
    sys.path.insert(0, str(tmp_path))
    try:
        bandits.simulate(out=tmp_path / "py", env="wheel", agent=["greedy"], steps=20,
                         seeds=2, hidden=[8], batch_size=8, updates_per_step=1,
                         hook=["my_hooks:StepCounter"])
    finally:
        sys.path.remove(str(tmp_path))
    assert json.loads((tmp_path / "py" / "hook.json").read_text()) == {
        "seen": 20, "agents": ["greedy"]}


@pytest.mark.parametrize("path, why", [
    ("my_hooks", "write it as MODULE:CALLABLE"),
    ("no_such_module_here:Hook", "cannot import no_such_module_here"),
    ("json:NoSuchHook", "module json has no NoSuchHook"),
    ("json:__doc__", "json:__doc__ is not callable")])
def test_a_hook_that_cannot_be_loaded_is_one_line(tmp_path, capsys, path, why):
    assert main([*TINY, "--steps", "5", "--hook", path, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--hook {path}: {why}" in err, err
    assert not (tmp_path / "r").exists()


def test_workers_receive_the_runs_settings_as_they_are(tmp_path):
    # the record itself (parts/settings.json), never the settings re-spelled as flags: a
    # float that str() and repr() spell differently arrives exactly
    out = tmp_path / "run"
    lr = 0.1 + 0.2  # 0.30000000000000004
    assert main([*TINY, "--steps", "5", "--lr", repr(lr), "--workers", "2",
                 "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    settings = json.loads((out / "parts" / "settings.json").read_text())
    assert settings["lr"] == lr and "agent" not in settings and "out" not in settings
    for part in config["parts"]:
        assert part["argv"][:2] == ["--settings-file", str(out / "parts" / "settings.json")]
        assert "--lr" not in part["argv"]
        worker = json.loads((out / part["dir"] / "config.json").read_text())
        assert worker["lr"] == lr and worker["agent"] == part["agents"]
