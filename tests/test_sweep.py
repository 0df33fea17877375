"""Sweeps on the local backend (and on a local Ray where ray is installed)."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from bandits.core.command_line import with_flags
from bandits.experiments.sweep import main, make_points, parse_sets
from bandits.simulator import run as runner

ROOT = Path(__file__).parents[1]
BASE = ["--", "--env", "wheel", "--agent", "bbb", "greedy", "--seeds", "2", "--steps", "15",
        "--hidden", "8", "--batch-size", "8", "--updates-per-step", "1"]
GRID = ["--set", "noise_sigma=0.1,0.5", "--set", "lr=0.001,0.003"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "s"
    assert main([*GRID, "--out", str(out), "--workers", "2", "--no-progress", *BASE]) == 0
    return out


def test_every_point_has_its_own_run_and_one_tidy_table(swept):
    points = sorted(p.name for p in (swept / "points").iterdir())
    assert points == ["noise_sigma=0.1__lr=0.001", "noise_sigma=0.1__lr=0.003",
                      "noise_sigma=0.5__lr=0.001", "noise_sigma=0.5__lr=0.003"]
    for p in points:
        for name in ("config.json", "metrics.csv", "summary.csv", "checkpoint.pt"):
            assert (swept / "points" / p / name).is_file()
    df = pd.read_csv(swept / "sweep.csv")
    assert len(df) == 4 * 2 * 2 and (df["status"] == "ok").all()
    assert {"noise_sigma", "lr", "agent", "seed", "cumulative_regret",
            "cumulative_expected_regret", "wall_seconds", "status"} <= set(df.columns)
    s = pd.read_csv(swept / "sweep_summary.csv")
    assert len(s) == 8 and (s["seeds"] == 2).all()
    assert (swept / "sweep.png").stat().st_size > 5000
    meta = json.loads((swept / "sweep.json").read_text())
    assert meta["swept"] == ["noise_sigma", "lr"] and meta["failed"] == 0


def test_a_point_equals_the_same_run_made_directly(swept, tmp_path):
    direct = tmp_path / "direct"
    argv = [*BASE[1:], "--noise-sigma", "0.5", "--lr", "0.003", "--out", str(direct),
            "--no-progress"]
    assert runner.main(argv) == 0
    point = swept / "points" / "noise_sigma=0.5__lr=0.003"
    for name in ("metrics.csv", "summary.csv"):
        assert (point / name).read_bytes() == (direct / name).read_bytes()


def test_rerun_skips_finished_points(swept):
    before = {p: (p / "metrics.csv").stat().st_mtime_ns for p in (swept / "points").iterdir()}
    table = (swept / "sweep.csv").read_bytes()
    assert main([*GRID, "--out", str(swept), "--workers", "2", "--no-progress", *BASE]) == 0
    after = {p: (p / "metrics.csv").stat().st_mtime_ns for p in (swept / "points").iterdir()}
    assert before == after
    assert (swept / "sweep.csv").read_bytes() == table


def test_a_bad_point_is_reported_and_the_others_run(tmp_path, capsys):
    out = tmp_path / "s"
    code = main(["--set", "noise_sigma=0.1,-1", "--out", str(out), "--no-progress", *BASE])
    assert code == 1
    df = pd.read_csv(out / "sweep.csv")
    bad = df[df["noise_sigma"] == -1]
    assert (bad["status"] == "bad setting").all()
    assert "--noise-sigma must be in [0.001, 1000], got -1" in bad["message"].iloc[0]
    assert (df[df["noise_sigma"] == 0.1]["status"] == "ok").all()
    assert "noise_sigma=-1" in capsys.readouterr().err


@pytest.mark.slow
def test_an_interrupted_point_is_resumed(tmp_path, swept, monkeypatch):
    # A point left with a checkpoint (its worker was killed) continues from it.
    out = tmp_path / "s"
    point = out / "points" / "noise_sigma=0.1__lr=0.001"
    import agents.bbb

    calls, original = {"n": 0}, agents.bbb.BBBAgent.act

    def act(self, contexts):
        calls["n"] += 1
        if calls["n"] == 9:
            raise KeyboardInterrupt
        return original(self, contexts)

    monkeypatch.setattr(agents.bbb.BBBAgent, "act", act)
    argv = [*BASE[1:], "--noise-sigma", "0.1", "--lr", "0.001", "--checkpoint-every", "0",
            "--out", str(point), "--no-progress"]
    assert runner.main(argv) == 130
    monkeypatch.undo()
    assert main([*GRID, "--out", str(out), "--workers", "2", "--no-progress", *BASE]) == 0
    ref = swept / "points" / point.name
    assert (point / "metrics.csv").read_bytes() == (ref / "metrics.csv").read_bytes()
    cfg = json.loads((point / "config.json").read_text())
    assert cfg["resumed"][0]["at_step"] == 8


def test_redraw_from_the_csv(swept):
    (swept / "sweep.png").unlink()
    assert main(["--redraw", str(swept)]) == 0
    assert (swept / "sweep.png").is_file()


def test_grid_file(tmp_path):
    spec = tmp_path / "grid.toml"
    spec.write_text('[base]\nagent = ["bbb"]\nseeds = 3\n[grid]\nprior = ["mixture", "gaussian"]\n'
                    'init_sigma = [0.01, 0.02]\n')
    from bandits.experiments.sweep import load_spec

    base, grid = load_spec(spec)
    points = make_points(base, grid, tmp_path)
    assert [p.settings for p in points][:2] == [{"prior": "mixture", "init_sigma": 0.01},
                                                 {"prior": "mixture", "init_sigma": 0.02}]
    assert points[0].argv == ["--agent", "bbb", "--seeds", "3", "--prior", "mixture",
                              "--init-sigma", "0.01"]
    assert parse_sets(["act_samples=1,2", "log_y=true"]) == {"act_samples": [1, 2],
                                                             "log_y": [True]}


def test_a_grid_over_a_list_setting_is_summarised_by_its_values(tmp_path):
    spec = tmp_path / "grid.toml"
    spec.write_text("[grid]\nhidden = [[8, 8], [4]]\n")
    out = tmp_path / "s"
    assert main(["--grid", str(spec), "--out", str(out), "--workers", "1", "--no-progress",
                 "--", "--agent", "greedy", "--env", "wheel", "--steps", "5",
                 "--seeds", "1"]) == 0
    summary = pd.read_csv(out / "sweep_summary.csv")
    assert sorted(summary["hidden"]) == ["[4]", "[8, 8]"] and (summary["seeds"] == 1).all()


@pytest.mark.parametrize("args, message", [
    (["--set", "noise_sigmaa=1,2"], "unknown setting 'noise_sigmaa'"),
    (["--set", "noise_sigma"], "write NAME=V1,V2"),
    ([], "nothing to sweep"),
    (["--grid", "missing.toml"], "grid file missing.toml not found"),
    (["--set", "out=a,b"], "'out' is set by the sweep"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, message):
    assert main([*args, "--out", str(tmp_path / "s"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_ray_backend_gives_the_same_csvs(swept, tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "s"
    assert main([*GRID, "--out", str(out), "--backend", "ray", "--workers", "2",
                 "--no-progress", *BASE]) == 0
    for p in (swept / "points").iterdir():
        for name in ("metrics.csv", "summary.csv"):
            assert (out / "points" / p.name / name).read_bytes() == (p / name).read_bytes()
    import ray

    ray.shutdown()


def crash_once(point):
    """A sweep task whose worker dies (os._exit) the first time it runs a point."""
    import os

    from bandits.experiments.sweep import run_point

    marker = Path(point.out + ".crashed")
    if not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("")
        os._exit(1)
    return run_point(point)


@pytest.mark.slow
def test_a_dead_worker_is_retried(tmp_path):
    from bandits.experiments.sweep import _local, _Progress

    points = make_points({"env": "wheel", "agent": ["greedy"], "seeds": 2, "steps": 15,
                          "hidden": [8], "batch_size": 8, "updates_per_step": 1},
                         {"noise_sigma": [0.1]}, tmp_path)
    progress = _Progress(len(points), disable=True)
    _local(points, workers=1, retries=1, progress=progress, task=crash_once)
    assert progress.results[points[0].name]["status"] == "ok"
    assert (Path(points[0].out) / "summary.csv").is_file()
    # with no retries left the point is reported as failed, not lost
    again = make_points({"env": "wheel", "seeds": 2}, {"noise_sigma": [0.2]}, tmp_path)
    progress = _Progress(len(again), disable=True)
    _local(again, workers=1, retries=0, progress=progress, task=crash_once)
    assert progress.results[again[0].name]["status"] == "failed"


# ------------------------------------------------------------------ never reuse stale points

SMALL = ["--", "--env", "wheel", "--agent", "greedy", "--seeds", "2", "--steps", "6",
         "--hidden", "8", "--batch-size", "8", "--updates-per-step", "1"]


@pytest.fixture
def small_sweep(tmp_path) -> Path:
    out = tmp_path / "s"
    assert main(["--set", "lr=0.001,0.003", "--out", str(out), "--workers", "1",
                 "--no-progress", *SMALL]) == 0
    return out


@pytest.mark.parametrize("change, reason", [
    (["--steps", "4"], "it has done 6 steps, 4 asked for"),
    (["--noise-sigma", "0.5"], "noise_sigma is 0.1 there, 0.5 asked for"),
    (["--seeds", "3"], "seeds is 2 there, 3 asked for"),
])
def test_a_rerun_with_other_shared_settings_is_refused(small_sweep, capsys, change, reason):
    table = (small_sweep / "sweep.csv").read_bytes()
    capsys.readouterr()
    code = main(["--set", "lr=0.001,0.003", "--out", str(small_sweep), "--workers", "1",
                 "--no-progress", *with_flags(SMALL, change)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert reason in err and "--overwrite" in err and len(err.splitlines()) == 1
    assert (small_sweep / "sweep.csv").read_bytes() == table


def test_overwrite_reruns_the_stale_points(small_sweep):
    assert main(["--set", "lr=0.001,0.003", "--out", str(small_sweep), "--workers", "1",
                 "--no-progress", "--overwrite", *SMALL, "--noise-sigma", "0.5"]) == 0
    for p in (small_sweep / "points").iterdir():
        assert json.loads((p / "config.json").read_text())["noise_sigma"] == 0.5


def test_more_steps_extend_the_finished_points(small_sweep, tmp_path):
    assert main(["--set", "lr=0.001,0.003", "--out", str(small_sweep), "--workers", "1",
                 "--no-progress", *[a if a != "6" else "9" for a in SMALL]]) == 0
    df = pd.read_csv(small_sweep / "sweep.csv")
    assert (df["steps"] == 9).all()
    direct = tmp_path / "direct"
    argv = with_flags(SMALL[1:], ["--steps", "9", "--lr", "0.003", "--out", str(direct),
                                  "--no-progress"])
    assert runner.main(argv) == 0
    point = small_sweep / "points" / "lr=0.003"
    assert (point / "metrics.csv").read_bytes() == (direct / "metrics.csv").read_bytes()


def test_more_steps_for_a_point_whose_checkpoint_is_gone_is_refused(small_sweep, capsys):
    kept = {p: p.read_bytes() for p in small_sweep.rglob("*.csv")}
    for p in (small_sweep / "points").iterdir():
        (p / "checkpoint.pt").unlink()  # as in a clone of committed sweep results
    capsys.readouterr()
    more = [a if a != "6" else "9" for a in SMALL]
    assert main(["--set", "lr=0.001,0.003", "--out", str(small_sweep), "--workers", "1",
                 "--no-progress", *more]) == 2
    err = capsys.readouterr().err.strip()
    assert "results up to step 6 but no checkpoint.pt" in err and "--overwrite" in err
    assert len(err.splitlines()) == 1
    assert {p: p.read_bytes() for p in kept} == kept  # nothing rerun over them
    # the steps they reached are still a finished sweep; --overwrite starts again
    assert main(["--set", "lr=0.001,0.003", "--out", str(small_sweep), "--workers", "1",
                 "--no-progress", *SMALL]) == 0
    assert main(["--set", "lr=0.001,0.003", "--out", str(small_sweep), "--workers", "1",
                 "--no-progress", "--overwrite", *more]) == 0
    assert (pd.read_csv(small_sweep / "sweep.csv")["steps"] == 9).all()


def test_a_rerun_that_drops_points_is_refused(small_sweep, capsys):
    table = (small_sweep / "sweep.csv").read_bytes()
    capsys.readouterr()
    assert main(["--set", "lr=0.001", "--out", str(small_sweep), "--no-progress",
                 *SMALL]) == 2
    err = capsys.readouterr().err.strip()
    assert "leaves out (lr=0.003)" in err and len(err.splitlines()) == 1
    assert (small_sweep / "sweep.csv").read_bytes() == table
    # a larger grid keeps every old point and adds the new one
    assert main(["--set", "lr=0.001,0.003,0.01", "--out", str(small_sweep), "--workers", "1",
                 "--no-progress", *SMALL]) == 0
    assert set(pd.read_csv(small_sweep / "sweep.csv")["lr"]) == {0.001, 0.003, 0.01}


@pytest.mark.parametrize("values", ["2", "1,2"])
def test_sweeping_over_seeds(tmp_path, values):
    out = tmp_path / "s"
    argv = [a for a in SMALL if a not in ("--seeds",)]
    argv.remove("2")
    assert main(["--set", f"seeds={values}", "--out", str(out), "--workers", "1",
                 "--no-progress", *argv]) == 0
    s = pd.read_csv(out / "sweep_summary.csv")
    assert list(s["seeds"]) == list(s["swept_seeds"])
    assert (out / "sweep.png").is_file() and (out / "sweep.json").is_file()


def test_a_bad_shared_setting_is_reported_once(tmp_path, capsys):
    code = main(["--set", "lr=0.001,0.003", "--out", str(tmp_path / "s"), "--no-progress",
                 *SMALL, "--noise-sigma", "-1"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "--noise-sigma must be in" in err and len(err.splitlines()) == 1


def test_each_point_records_its_own_runnable_command(small_sweep, tmp_path):
    point = small_sweep / "points" / "lr=0.003"
    command = json.loads((point / "config.json").read_text())["command"]
    assert command.startswith("python -m bandits.run ") and "--set" not in command
    argv = shlex.split(command)[3:]
    out = argv[argv.index("--out") + 1]
    argv[argv.index("--out") + 1] = str(tmp_path / "again")
    assert out == str(point)
    assert runner.main(argv) == 0
    assert ((tmp_path / "again" / "metrics.csv").read_bytes()
            == (point / "metrics.csv").read_bytes())


def _sweep_process(out: Path, steps: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "bandits.sweep", "--set", "lr=0.001,0.002,0.003,0.004",
           "--out", str(out), "--workers", "2", "--no-progress", *SMALL[:-8], "--steps",
           str(steps), "--hidden", "8", "--batch-size", "8", "--updates-per-step", "1",
           "--checkpoint-every", "0"]
    # started with SIGINT ignored, as a shell script's `cmd &` starts it: kill -INT still works
    return subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=partial(signal.signal, signal.SIGINT, signal.SIG_IGN))


def _wait_for_checkpoints(out: Path, n: int, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while len(list(out.glob("points/*/checkpoint.pt"))) < n:
        assert time.monotonic() < end, "the sweep never checkpointed"
        time.sleep(0.2)


@pytest.mark.slow
def test_ctrl_c_on_a_sweep_is_one_line_and_the_rerun_continues(tmp_path):
    out = tmp_path / "s"
    proc = _sweep_process(out, 3000)
    _wait_for_checkpoints(out, 2)
    proc.send_signal(signal.SIGINT)  # as `kill -INT`; a terminal's Ctrl-C reaches the same
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("bandits.sweep")]
    assert "Traceback" not in err and len(lines) == 1 and "same command again" in lines[0]
    # the two points that were running stopped; of the two waiting, none started (the
    # pool had already queued one of them, where cancelling cannot reach it)
    started = [p for p in out.glob("points/*") if any(p.glob("*.csv")) or any(p.glob("*.pt"))]
    assert len(started) == 2, started


@pytest.mark.slow
def test_workers_die_with_a_killed_sweep(tmp_path):
    out = tmp_path / "s"
    proc = _sweep_process(out, 100_000)
    _wait_for_checkpoints(out, 2)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                              text=True).stdout.split()
    assert children
    proc.kill()
    proc.wait()
    end = time.monotonic() + 20
    while any(Path(f"/proc/{c}").exists() and "Z" not in _state(c) for c in children):
        assert time.monotonic() < end, "a worker outlived its sweep"
        time.sleep(0.2)


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return "Z"


def test_the_summary_has_the_second_half_regret_per_step_from_the_phases(small_sweep):
    df = pd.read_csv(small_sweep / "sweep.csv")
    for row in df.itertuples():
        phases = pd.read_csv(small_sweep / "points" / row.point / "phases.csv")
        p = phases[(phases["agent"] == row.agent) & (phases["seed"] == row.seed)]
        late = p[p["start"] > p["end"].max() // 2]
        expected = late["expected_regret"].sum() / (late["end"] - late["start"] + 1).sum()
        assert row.expected_regret_per_step_second_half == pytest.approx(expected, rel=1e-5)
    summary = pd.read_csv(small_sweep / "sweep_summary.csv")
    assert {"expected_regret_per_step_second_half_mean",
            "expected_regret_per_step_second_half_sem"} <= set(summary.columns)


def test_redraw_collects_the_points_again_where_they_are_there(small_sweep, tmp_path):
    import shutil

    from bandits.experiments.sweep import redraw

    copy = tmp_path / "copy"
    shutil.copytree(small_sweep, copy)
    full = pd.read_csv(copy / "sweep.csv")
    full.drop(columns=["expected_regret_per_step_second_half"]).to_csv(copy / "sweep.csv",
                                                                       index=False)
    redraw(copy)  # an older table gains the column from the points' phases.csv
    pd.testing.assert_frame_equal(pd.read_csv(copy / "sweep.csv"), full)
    shutil.rmtree(copy / "points")  # shipped: no points, the table as it is
    redraw(copy)
    pd.testing.assert_frame_equal(pd.read_csv(copy / "sweep.csv"), full)


def test_a_grid_of_a_million_points_is_refused_with_its_size_before_anything_is_made(
        tmp_path, capsys):
    values = {name: ",".join(str(v) for v in range(1, 101))
              for name in ("hidden", "batch_size", "updates_per_step")}
    out = tmp_path / "huge"
    args = [a for name, v in values.items() for a in ("--set", f"{name}={v}")]
    assert main([*args, "--out", str(out), "--no-progress", *BASE]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1,000,000 points (100 x 100 x 100)" in err[0]
    assert "--max-points" in err[0] and not out.exists()
    assert main([*args, "--max-points", "0", "--out", str(out), *BASE]) == 2
    assert "--max-points must be in [1" in capsys.readouterr().err


def test_a_one_point_sweep_tells_a_bad_shared_setting_from_a_bad_swept_value(tmp_path, capsys):
    shared = main(["--set", "lr=0.001", "--out", str(tmp_path / "s"), "--no-progress",
                   *SMALL, "--noise-sigma", "-1"])
    err = capsys.readouterr().err.strip()
    assert shared == 2 and "--noise-sigma must be in" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "s").exists()  # refused before anything was written
    swept = main(["--set", "noise_sigma=-1", "--out", str(tmp_path / "p"), "--no-progress",
                  *SMALL])
    err = capsys.readouterr().err.strip()
    assert swept == 2 and len(err.splitlines()) == 1, err
    assert "point noise_sigma=-1: --noise-sigma must be in" in err  # the swept value's fault
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("spec, args, said", [
    ('[grid]\nlr = ["fast"]\n', [], "point lr=fast: argument --lr: invalid float value: 'fast'"),
    ('[grid]\nlr = ["fast", "slow"]\n', [], "point lr=fast: argument --lr: invalid float "
     "value: 'fast' (and the 1 other point too: no point of this grid can run)"),
    ("[grid]\nlr = [{a = 1}]\n", [], "argument --lr: invalid float value: '{'a': 1}'"),
    ("[base]\nlr = {a = 1}\n[grid]\nnoise_sigma = [0.1, 0.5]\n", [],
     "bandits.sweep: error: argument --lr: invalid float value: '{'a': 1}'"),
    ('[base]\nagent = ["greedy"]\n[grid]\nprior_pi = [0.25, 0.75]\n', [],
     "point prior_pi=0.25: --prior-pi 0.25 is read by --agent bbb"),
    (None, ["--set", "lr=abc"], "point lr=abc: argument --lr: invalid float value: 'abc'"),
    (None, ["--set", "lr={a=1}"], "argument --lr: invalid float value: '{'a': 1}'"),
    (None, ["--set", "lr=0.001", "--cpus-per-point", "-1"], "--cpus-per-point must be in"),
    (None, ["--set", "lr=0.001", "--address", "auto"],
     "--address auto has no effect in this run; add --backend ray"),
])
def test_a_sweep_no_point_of_which_can_run_is_refused_in_one_line_and_makes_no_folder(
        tmp_path, capsys, spec, args, said):
    if spec is not None:
        (tmp_path / "grid.toml").write_text(spec)
        args = ["--grid", str(tmp_path / "grid.toml"), *args]
    out = tmp_path / "s"
    assert main([*args, "--out", str(out), "--no-progress", *SMALL]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err, err
    assert not out.exists()
