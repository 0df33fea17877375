"""Runs that survive being killed: checkpoints, exact resume, divergence, bad checkpoints."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from bandits.core import checkpoint
from bandits.run import main

TINY = ["--env", "wheel", "--seeds", "2", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "2", "--no-progress", "--agent", "bbb", "greedy", "eps5", "uniform",
        "linfullpost", "linucb", "dropout", "bootstrap", "neurallinear", "neuralucb", "neuralts",
        "--refresh-every", "7"]
ROOT = Path(__file__).parents[1]


def _outputs(d: Path) -> tuple[bytes, ...]:
    return tuple((d / name).read_bytes()
                 for name in ("metrics.csv", "summary.csv", "phases.csv", "memory.csv",
                              "probes.csv"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted 40-step run."""
    out = tmp_path_factory.mktemp("ref") / "run"
    assert main([*TINY, "--steps", "40", "--out", str(out)]) == 0
    return out


def _interrupt_at_act_call(monkeypatch, n: int) -> None:
    import agents.uniform

    calls = {"n": 0}
    original = agents.uniform.UniformAgent.act

    def act(self, contexts):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return original(self, contexts)

    monkeypatch.setattr(agents.uniform.UniformAgent, "act", act)


@pytest.mark.parametrize("stop_at", [1, 17, 33])
def test_interrupted_then_resumed_equals_uninterrupted(reference, tmp_path, monkeypatch, capsys,
                                                       stop_at):
    out = tmp_path / "run"
    _interrupt_at_act_call(monkeypatch, stop_at + 1)  # mid-step stop_at (0-based)
    assert main([*TINY, "--steps", "40", "--checkpoint-every", "0", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"--resume {out}" in err and len(err.strip().splitlines()) == 1
    monkeypatch.undo()
    assert main(["--resume", str(out), "--no-progress"]) == 0
    assert _outputs(out) == _outputs(reference)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["steps_completed"] == 40 and cfg["resumed"][0]["at_step"] == stop_at


def test_resume_extends_the_horizon(reference, tmp_path):
    out = tmp_path / "run"
    assert main([*TINY, "--steps", "25", "--out", str(out)]) == 0
    assert main(["--resume", str(out), "--steps", "40", "--no-progress"]) == 0
    assert _outputs(out) == _outputs(reference)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--lr", "0.1"], "--lr cannot be given with --resume"),
        (["--seeds", "3"], "--seeds cannot be given with --resume"),
        (["--steps", "5"], "--steps 5 is fewer than the 10 steps"),
    ],
)
def test_resume_refuses_flags_that_change_results(tmp_path, capsys, extra, message):
    out = tmp_path / "run"
    assert main([*TINY, "--steps", "10", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["--resume", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"\x00not a checkpoint" * 100)
    elif how == "foreign":
        torch.save({"weights": torch.zeros(3)}, path)
    elif how == "wrong version":
        header, payload = data.split(b"\n", 1)
        path.write_bytes(header.replace(b'"version": 2', b'"version": 99') + b"\n" + payload)
    elif how == "old version":  # the first format: a bare torch file with version 1
        torch.save({"format": checkpoint.FORMAT, "version": 1, "kind": "bandits.run"}, path)
    elif how == "flipped byte":  # one bit of the tensor data, deep in the payload
        flipped = bytearray(data)
        flipped[len(data) * 2 // 3] ^= 0x01
        path.write_bytes(bytes(flipped))
    elif how == "code":  # a pickle that would run code if loaded unsafely
        import pickle

        class Evil:
            def __reduce__(self):
                return (os.system, ("echo pwned",))

        path.write_bytes(pickle.dumps(Evil()))
    elif how == "missing":
        path.unlink()


@pytest.mark.parametrize("how, message", [
    ("truncated", "damaged or truncated"), ("garbage", "damaged or truncated"),
    ("foreign", "not a checkpoint of this project"), ("wrong version", "format version 99"),
    ("old version", "format version 1"), ("flipped byte", "does not match its checksum"),
    ("code", "damaged or truncated"), ("missing", "nothing to resume"),
])
def test_bad_checkpoints_give_one_line_naming_the_file(tmp_path, capsys, how, message):
    out = tmp_path / "run"
    assert main([*TINY, "--steps", "5", "--out", str(out)]) == 0
    _damage(out / "checkpoint.pt", how)
    capsys.readouterr()
    assert main(["--resume", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "checkpoint.pt" in err and len(err.splitlines()) == 1


def test_resume_of_a_directory_without_a_run(tmp_path, capsys):
    assert main(["--resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "nothing to resume" in err and len(err.splitlines()) == 1


def _poison_eps5_seed1_at_step_30(monkeypatch) -> None:
    # Poison one run's parameters (eps5, seed 1) in the first update of step 30: the
    # second update of that step computes a NaN loss for that run alone.
    import agents.greedy

    original = agents.greedy.EpsilonGreedyAgent.gradients
    calls = {"n": 0}

    def gradients(self, *args):
        grads, loss = original(self, *args)
        if self.name != "eps5":
            return grads, loss
        calls["n"] += 1
        if calls["n"] == 2 * 29 + 1:
            grads[0][1] = float("nan")
        return grads, loss

    monkeypatch.setattr(agents.greedy.EpsilonGreedyAgent, "gradients", gradients)


def test_divergence_is_caught_with_agent_seed_and_step(tmp_path, capsys, monkeypatch):
    _poison_eps5_seed1_at_step_30(monkeypatch)
    out = tmp_path / "run"
    assert main([*TINY, "--steps", "100", "--checkpoint-every", "0", "--out", str(out)]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "agent eps5, seed 1 diverged at step 30" in err
    assert "the last good checkpoint (step 29) is kept" in err
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["diverged"] and cfg["steps_completed"] == 30
    state = checkpoint.load(out / "checkpoint.pt", "bandits.run")
    assert state["steps_done"] == 29
    assert all(torch.isfinite(p).all() for pop in state["populations"] if "model" in pop["agent"]
               for p in pop["agent"]["model"].values())


def test_skip_diverged_lets_the_other_runs_go_on_unchanged(reference, tmp_path, capsys,
                                                           monkeypatch):
    _poison_eps5_seed1_at_step_30(monkeypatch)
    out = tmp_path / "run"
    assert main([*TINY, "--steps", "40", "--skip-diverged", "--out", str(out)]) == 0
    err = capsys.readouterr().err.strip()
    assert "warning: agent eps5, seed 1 diverged at step 30" in err
    assert len(err.splitlines()) == 1
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["diverged_runs"] == [{"step": 30, "agent": "eps5", "seed": 1}]
    # runs are independent: every other run, eps5's seed 0 included, is bit for bit the same
    a, b = (pd.read_csv(d / "metrics.csv") for d in (out, reference))
    keep = ~((a["agent"] == "eps5") & (a["seed"] == 1))
    pd.testing.assert_frame_equal(a[keep], b[keep])


def test_an_absurd_learning_rate_stops_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["--env", "wheel", "--seeds", "2", "--hidden", "8", "--agent", "greedy",
                 "--lr", "1e30", "--steps", "200", "--no-progress", "--out", str(out)])
    assert code == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "agent greedy, seed" in err and "diverged" in err


def test_a_failing_checkpoint_write_keeps_the_previous_one(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    calls = {"n": 0}
    original = torch.save

    def save(obj, f, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            f.write(b"partial")
            raise OSError(28, "No space left on device")
        return original(obj, f, *a, **k)

    monkeypatch.setattr(checkpoint.torch, "save", save)
    assert main([*TINY, "--steps", "10", "--checkpoint-every", "0", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "No space left on device" in err and "previous checkpoint is kept" in err
    assert len(err.splitlines()) == 1
    assert checkpoint.load(out / "checkpoint.pt", "bandits.run")["steps_done"] == 2
    assert not (out / "checkpoint.pt.tmp").exists()
    monkeypatch.undo()
    assert main(["--resume", str(out), "--no-progress"]) == 0


# ------------------------------------------------------------------ real processes, killed

SLOW_RUN = [*TINY, "--steps", "300", "--checkpoint-every", "0"]


def _start(out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bandits.run", *SLOW_RUN, "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for_checkpoint(out: Path, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not (out / "checkpoint.pt").exists():
        assert time.monotonic() < end, "no checkpoint appeared"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def slow_reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("slowref") / "run"
    assert main([*SLOW_RUN, "--out", str(out)]) == 0
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kill_9_at_a_random_point_then_resume(slow_reference, tmp_path, seed):
    # Checkpoints after every step: a random kill often lands inside a checkpoint write.
    out = tmp_path / "run"
    proc = _start(out)
    _wait_for_checkpoint(out)
    time.sleep(float(np.random.default_rng(seed).uniform(0.0, 1.5)))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = checkpoint.load(out / "checkpoint.pt", "bandits.run")["steps_done"]
    assert 0 < done <= 300
    assert main(["--resume", str(out), "--no-progress"]) == 0
    assert _outputs(out) == _outputs(slow_reference)


@pytest.mark.slow
def test_ctrl_c_leaves_a_checkpoint_then_resume(slow_reference, tmp_path):
    out = tmp_path / "run"
    proc = _start(out)
    _wait_for_checkpoint(out)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == 130
    assert b"--resume" in err
    assert main(["--resume", str(out), "--no-progress"]) == 0
    assert _outputs(out) == _outputs(slow_reference)


SMALL = ["--env", "wheel", "--seeds", "2", "--hidden", "8", "--batch-size", "8",
         "--updates-per-step", "1", "--no-progress", "--agent", "bbb", "greedy"]


def test_resume_of_a_worker_run_whose_parts_are_gone_is_refused_and_keeps_its_outputs(
        tmp_path, capsys):
    import shutil

    out = tmp_path / "run"
    assert main([*SMALL, "--steps", "30", "--workers", "2", "--out", str(out)]) == 0
    kept = {n: (out / n).read_bytes() for n in ("summary.csv", "metrics.csv", "config.json")}
    shutil.rmtree(out / "parts")  # as in a clone of shipped results
    capsys.readouterr()
    assert main(["--resume", str(out), "--steps", "40"]) == 2
    err = capsys.readouterr().err.strip()
    assert "checkpoint" in err and "missing" in err and len(err.splitlines()) == 1
    assert {n: (out / n).read_bytes() for n in kept} == kept


def test_a_checkpoint_copied_from_a_shorter_run_is_refused(tmp_path, capsys):
    short, full = tmp_path / "short", tmp_path / "full"
    assert main([*SMALL, "--steps", "20", "--out", str(short)]) == 0
    assert main([*SMALL, "--steps", "30", "--out", str(full)]) == 0
    kept = (full / "summary.csv").read_bytes()
    (full / "checkpoint.pt").write_bytes((short / "checkpoint.pt").read_bytes())
    capsys.readouterr()
    assert main(["--resume", str(full), "--steps", "30"]) == 2
    err = capsys.readouterr().err.strip()
    assert "another run" in err and "at step 20" in err and len(err.splitlines()) == 1
    assert (full / "summary.csv").read_bytes() == kept


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "foreign"])
def test_a_worker_run_checks_every_part_before_any_worker_starts(tmp_path, capsys, damage):
    out, other = tmp_path / "run", tmp_path / "other"
    assert main([*SMALL, "--steps", "20", "--workers", "2", "--out", str(out)]) == 0
    part0 = out / "parts" / "0" / "checkpoint.pt"
    if damage == "truncated":
        part0.write_bytes(part0.read_bytes()[:-100])
    else:  # a checkpoint of the same agents and settings, from another run
        assert main([*SMALL, "--steps", "20", "--workers", "2", "--out", str(other)]) == 0
        part0.write_bytes((other / "parts" / "0" / "checkpoint.pt").read_bytes())
    kept = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.suffix != ".pt"}
    capsys.readouterr()
    assert main(["--resume", str(out), "--steps", "30"]) == 2
    err = capsys.readouterr().err.strip()
    assert str(part0) in err and len(err.splitlines()) == 1
    # no worker ran: the other part, the gathered outputs and config.json are as they were
    assert {p: p.read_bytes() for p in kept} == kept
    assert json.loads((out / "config.json").read_text())["steps"] == 20


def test_the_resume_hint_of_a_folder_with_a_space_pastes_back(tmp_path, monkeypatch, capsys):
    import shlex

    out = tmp_path / "sp ace run"
    small = ["--env", "wheel", "--seeds", "1", "--hidden", "8", "--batch-size", "8",
             "--updates-per-step", "1", "--no-progress", "--agent", "uniform", "greedy"]
    _interrupt_at_act_call(monkeypatch, 5)
    assert main([*small, "--steps", "10", "--checkpoint-every", "0", "--out", str(out)]) == 130
    hint = capsys.readouterr().err.strip().split(" with: ")[-1]
    argv = shlex.split(hint)
    assert argv[:5] == ["python", "-m", "bandits.run", "--resume", str(out)], hint
    monkeypatch.undo()
    assert main(argv[3:]) == 0  # the hint as pasted into a shell
    assert json.loads((out / "config.json").read_text())["steps_completed"] == 10


def test_every_printed_or_recorded_command_quotes_its_arguments():
    import shlex

    from bandits.mnist.evaluation.model_files import command_line
    from bandits.simulator.resume import RUN

    assert shlex.split(RUN.resume_command("a b/c'd", exact=True)) == [
        "python", "-m", "bandits.run", "--resume", "a b/c'd", "--exact"]
    assert shlex.split(command_line(["--out", "sp ace", "--data-dir", "x y"])) == [
        "python", "-m", "bandits.mnist", "--out", "sp ace", "--data-dir", "DIR"]
