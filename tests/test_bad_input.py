"""Bad input and signals: every case gives the right result, or one line and a clear exit
status, and leaves no empty output directory behind.

NeuralUCB and NeuralTS with the learned likelihood, the design's regulariser and its
exact form, data sets registered from a script, and Ctrl-C, SIGTERM and SIGHUP of every
command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import numpy as np
import pandas as pd
import pytest
import torch

import envs
from agents import AgentConfig, make_agent
from agents.neural_ucb import UCB_LAMBDA_RANGE, design_size
from bandits.core.buffer import ReplayBuffer
from bandits.run import main
from envs import classification
from envs.classification import ClassificationEnv

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--env", "wheel", "--seeds", "1", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "1", "--no-progress", "--workers", "1"]


def _one_line(text: str) -> str:
    text = text.strip()
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    return text


# ------------------------------------------------- NeuralUCB, NeuralTS: learned likelihood


def test_the_learned_likelihood_explores_with_the_mean_outputs_gradient():
    d = 4
    agent = make_agent("neuralucb", d, 2, 2, 0,
                       AgentConfig(hidden=(16,), batch_size=8, likelihood="learned"))
    assert agent.model.n_params == (d + 2 + 1) * 16 + (16 + 1) * 2  # the mean and the noise
    x = np.random.default_rng(0).random((2, d), dtype=np.float32)
    inputs = agent.all_action_inputs(x)
    f, g = agent.scores_and_gradients(inputs)
    for r in range(2):
        for a in range(2):
            w = agent.model.mu.detach()[r].clone().requires_grad_()
            out = agent.model.apply_layers(inputs[r:r + 1, a:a + 1],
                                           agent.model.split(w.unsqueeze(0)))
            assert out.shape[-1] == 2
            (grad,) = torch.autograd.grad(out[..., 0].sum(), w)
            torch.testing.assert_close(g[r, a], grad)
            torch.testing.assert_close(f[r, a], out[..., 0].sum().detach())
    buf = ReplayBuffer(64, 2, d)
    for _ in range(5):  # acts and trains by the Gaussian likelihood of both outputs
        x = np.random.default_rng(1).random((2, d), dtype=np.float32)
        a = agent.act(x)
        buf.add(x, a, x[:, 0] * a.numpy())
        assert torch.isfinite(agent.update(buf, 2)).all()


def test_neuralucb_and_neuralts_run_with_the_learned_likelihood(tmp_path):
    out = tmp_path / "run"
    assert main([*TINY, "--agent", "neuralucb", "neuralts", "--likelihood", "learned",
                 "--steps", "10", "--out", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["agent"]) == ["neuralts", "neuralucb"]
    assert (summary["steps"] == 10).all()


# ------------------------------------------------- the design: lambda and its exact form


def test_a_ucb_lambda_that_underflows_float32_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*TINY, "--agent", "neuralucb", "--ucb-lambda", "1e-300", "--steps", "5",
                 "--out", str(out)]) == 2
    assert "--ucb-lambda must be in [1e-06, " in _one_line(capsys.readouterr().err)
    assert not out.exists()
    with pytest.raises(ValueError, match="--ucb-lambda must be in"):  # the agent itself too
        make_agent("neuralucb", 4, 2, 1, 0, AgentConfig(hidden=(8,), ucb_lambda=1e-300))


@pytest.mark.parametrize("exact", [False, True], ids=["diagonal", "exact"])
@pytest.mark.parametrize("ucb_lambda", UCB_LAMBDA_RANGE)
@pytest.mark.parametrize("nu", [5e-324, 1e6])  # the ends of --nu's range (0, 1e6]
def test_every_accepted_lambda_and_nu_gives_finite_widths(exact, ucb_lambda, nu):
    d, runs = 6, 2
    agent = make_agent("neuralucb", d, 3, runs, 0,
                       AgentConfig(hidden=(16,), batch_size=8, ucb_lambda=ucb_lambda, nu=nu,
                                   exact_design=exact))
    buf = ReplayBuffer(64, runs, d)
    rng = np.random.default_rng(0)
    for _ in range(40):
        x = (rng.normal(size=(runs, d)) * 3).astype(np.float32)
        _, g = agent.scores_and_gradients(agent.all_action_inputs(x))
        assert torch.isfinite(agent.widths(g)).all()
        a = agent.act(x)
        buf.add(x, a, x[:, 0] * a.numpy())
        agent.update(buf, 1)


def test_an_exact_design_too_large_is_refused_before_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    # mushroom: 117 features + 2 arms in, hidden 100 100, one output: 22,201 parameters
    assert main(["--agent", "neuralucb", "--exact-design", "--env", "mushroom", "--seeds",
                 "1", "--steps", "10", "--no-progress", "--workers", "1",
                 "--out", str(out)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "22,201 x 22,201" in err and "leave out --exact-design" in err and "--hidden" in err
    assert not out.exists()
    # a network small enough runs
    assert main([*TINY, "--agent", "neuralts", "--exact-design", "--steps", "5",
                 "--out", str(out)]) == 0


@pytest.mark.parametrize("likelihood", ["fixed", "learned"])
def test_the_size_refused_is_the_agents_network(likelihood):
    agent = make_agent("neuralucb", 117, 2, 1, 0,
                       AgentConfig(hidden=(100, 100), likelihood=likelihood))
    assert agent.model.n_params == design_size(119, (100, 100),
                                               2 if likelihood == "learned" else 1)


# ------------------------------------------------- data sets registered from a script


@pytest.fixture
def register(monkeypatch):
    """Register a data set for one test: every registry gets its state back after it."""

    def make(name, loader, context_size=3, n_classes=2):
        for registry, key in ((envs.SPECS, name), (classification.DATASETS, name),
                              (gymnasium.registry, f"bandits/{name}-v0")):
            monkeypatch.setitem(registry, key, None)
            del registry[key]
        monkeypatch.setattr(classification, "_LOADED", {})
        return envs.register_dataset(name, loader, context_size, n_classes)

    return make


def _raises(data_dir):
    raise RuntimeError("the disk is\non fire")


BAD_LOADERS = {
    "raises": (_raises, "its loader raised RuntimeError: the disk is on fire"),
    "returns None": (lambda d: None, "returned None; it must return a pair"),
    "three items": (lambda d: (np.zeros((4, 3)), np.zeros(4, int), 1),
                    "returned a tuple of 3 items"),
    "object features": (lambda d: (np.array([[0, "a", None]] * 4, dtype=object),
                                   np.zeros(4, int)),
                        "features must be real numbers, got dtype object"),
    "numbers as objects": (lambda d: (np.zeros((4, 3)).astype(object), np.zeros(4, int)),
                           "features must be real numbers, got dtype object"),
    "ragged features": (lambda d: ([[0.0, 1.0, 2.0], [0.0]], [0, 1]), "must be arrays"),
    "object labels": (lambda d: (np.zeros((4, 3)), np.array([0, 1, None, 0], dtype=object)),
                      "labels must be integers, got object"),
    "complex features": (lambda d: (np.ones((4, 3)) * (1 + 2j), np.zeros(4, int)),
                         r"features are complex \(complex128\)"),
}


@pytest.mark.parametrize("case", list(BAD_LOADERS))
def test_a_bad_loader_is_one_error_naming_the_data_set(case, register, tmp_path, capsys):
    loader, message = BAD_LOADERS[case]
    register("bad", loader)
    with pytest.raises(ValueError, match=f"^data set 'bad': .*{message}") as info:
        ClassificationEnv("bad")
    assert "\n" not in str(info.value)
    out = tmp_path / "run"
    assert main(["--agent", "uniform", "--env", "bad", "--seeds", "1", "--steps", "5",
                 "--no-progress", "--out", str(out)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert err.startswith("bandits.run: error: data set 'bad': ")
    assert not out.exists()


def test_complex_features_are_refused_without_a_warning(register, recwarn):
    register("waves", BAD_LOADERS["complex features"][0])
    with pytest.raises(ValueError, match="complex"):
        ClassificationEnv("waves")
    assert not [w for w in recwarn if "complex" in str(w.message).lower()]


@pytest.mark.parametrize("loader, sizes, message", [
    (42, (3, 2), "the loader must be a function .* got int"),
    ("data/wine.csv", (3, 2), "the loader must be a function .* got str"),
    (lambda d: None, ("3", 2), "context_size and n_classes must be integers"),
    (lambda d: None, (3, 2.5), "context_size and n_classes must be integers"),
])
def test_registration_refuses_what_is_not_a_loader(loader, sizes, message, register):
    with pytest.raises(TypeError, match=f"^data set 'bad': {message}"):
        register("bad", loader, *sizes)
    assert "bad" not in envs.ENV_IDS and "bad" not in classification.DATASETS


def test_a_registered_data_set_still_runs(register, tmp_path):
    def loader(data_dir):
        x = np.random.default_rng(0).normal(size=(40, 3))  # float64: converted
        return x, (x[:, 0] > 0).astype(np.int32)

    register("fine", loader)
    assert main(["--agent", "uniform", "--env", "fine", "--seeds", "1", "--steps", "5",
                 "--no-progress", "--out", str(tmp_path / "run")]) == 0


def test_resume_without_the_data_set_registered_is_one_line(register, tmp_path, capsys):
    def loader(data_dir):
        x = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
        return x, (x[:, 0] > 0).astype(np.int64)

    register("scripted", loader)
    out = tmp_path / "run"
    assert main(["--agent", "uniform", "--env", "scripted", "--seeds", "1", "--steps", "5",
                 "--no-progress", "--out", str(out)]) == 0
    for registry in (envs.SPECS, classification.DATASETS):
        del registry["scripted"]  # as on a command line that did not register it
    capsys.readouterr()
    assert main(["--resume", str(out), "--steps", "8"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "'scripted'" in err and "registers 'scripted' first" in err
    assert pd.read_csv(out / "summary.csv")["steps"].eq(5).all()  # the run is untouched


# ------------------------------------------------- signals


# Runs a command as `python -m` does, with its first output file stuck until a signal
# comes: the signal arrives in the command's own work, never while it starts.
STUCK = """
import runpy, sys, time
from pathlib import Path
from bandits.core import files

ready = Path(sys.argv[1])

def stuck(path, data):
    ready.write_text("writing")
    while True:
        time.sleep(0.05)

files.write_atomic = stuck
module = sys.argv[2]
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("signals") / "run"
    assert main([*TINY, "--agent", "greedy", "--steps", "20", "--out", str(out)]) == 0
    return out


def _commands(run_dir: Path, out: Path) -> dict[str, list[str]]:
    return {
        "bandits.plot": [str(run_dir), "--out", str(out.with_suffix(".png"))],
        "bandits.diagnose": [str(run_dir)],
        "bandits.regression": ["--steps", "5", "--hidden", "4", "--samples", "2",
                               "--heldout", "10", "--no-plot", "--out", str(out)],
        "bandits.bench": ["--runs", "1", "--updates", "1", "--rounds", "1", "--out", str(out)],
    }


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            pytest.fail(f"never got there: {proc.communicate()}")
        time.sleep(0.05)


@pytest.mark.parametrize("module, ignored", [
    *[(m, True) for m in ("bandits.plot", "bandits.diagnose", "bandits.regression",
                          "bandits.bench")],
    ("bandits.plot", False),  # a terminal's Ctrl-C (the ignored case above covers it too)
], ids=["plot-started-with-sigint-ignored", "diagnose-started-with-sigint-ignored",
        "regression-started-with-sigint-ignored", "bench-started-with-sigint-ignored",
        "plot-ctrl-c"])
def test_ctrl_c_in_the_work_is_one_line_and_exit_130(module, ignored, run_dir, tmp_path):
    ready, out = tmp_path / "ready", tmp_path / "out"
    (tmp_path / "stuck.py").write_text(STUCK)
    pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored else None
    proc = subprocess.Popen(
        [sys.executable, "stuck.py", str(ready), module, *_commands(run_dir, out)[module]],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=pre)
    _wait_for(ready, proc)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{module} went on after Ctrl-C: {proc.communicate()}")
    assert proc.returncode == 130, err
    assert _one_line(err) == f"{module}: interrupted; every output written so far is whole"
    if module in ("bandits.regression", "bandits.bench"):
        assert not out.exists()  # nothing was written: no empty directory


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_term_and_hup_say_so_and_leave_no_worker(sig, tmp_path):
    out = tmp_path / "run"
    args = ["--env", "wheel", "--seeds", "1", "--hidden", "8", "--batch-size", "8",
            "--updates-per-step", "1", "--no-progress", "--agent", "bbb", "greedy",
            "--steps", "1000000", "--checkpoint-every", "inf", "--workers", "2",
            "--out", str(out)]
    def default_signals():  # as from a terminal, whatever this test run was started under
        for s in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-m", "bandits.run", *args], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)
    workers: list[int] = []
    try:
        assert proc.stdout.readline().startswith("bandits.run: preset"), proc.communicate()
        end = time.monotonic() + 120
        while len(workers := _children(proc.pid)) < 2:
            assert time.monotonic() < end and proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:  # never leave a million-step run behind, whatever failed
        for pid in [proc.pid, *workers]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    assert proc.returncode == -sig  # as before: ended by the signal
    assert _one_line(err) == f"bandits.run: stopped by signal {signal.Signals(sig).name}"
    end = time.monotonic() + 20
    while any(_alive(w) for w in workers):
        assert time.monotonic() < end, "a worker outlived its parent"
        time.sleep(0.1)


def test_a_hangup_ignored_at_start_stays_ignored(tmp_path):
    """`nohup cmd &`: the command keeps running when the terminal goes."""
    code = ("import os, signal, time\n"
            "from bandits.core.startup import interruptible\n"
            "interruptible('bandits.x')\n"
            "os.kill(os.getpid(), signal.SIGHUP)\n"
            "time.sleep(0.2)\n"
            "print('still running')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    assert (done.returncode, done.stdout, done.stderr) == (0, "still running\n", "")


@pytest.mark.parametrize("argv, flag", [
    (["--agent", "greedy", "--heads", "3"], "--heads"),
    (["--agent", "greedy", "--exact-design"], "--exact-design"),
    (["--agent", "greedy", "eps1", "--mean-decay", "0.5"], "--mean-decay"),
    (["--agent", "linucb", "--lin-lambda", "0.5"], "--lin-lambda"),
])
def test_a_setting_no_listed_agent_reads_is_refused_in_one_line(argv, flag):
    from bandits.core.config import UsageError
    from bandits.simulator.settings import parse_config

    with pytest.raises(UsageError) as e:
        parse_config(argv)
    msg = str(e.value)
    assert msg.startswith(flag) and "none of which this run lists" in msg
    assert len(msg.splitlines()) == 1


def test_a_setting_an_agent_reads_or_its_preset_gives_is_accepted():
    from bandits.simulator.settings import parse_config

    assert parse_config(["--agent", "bootstrap", "--heads", "3"]).agents.heads == 3
    assert parse_config(["--agent", "linucb", "greedy", "--lr", "0.01"]).network.lr == 0.01
    assert parse_config(["--preset", "paper", "--agent", "greedy"]).agents.act_samples == 2
    assert parse_config(["--agent", "linfullpost", "--lin-lambda", "0.5"]).agents.lin_lambda == 0.5


@pytest.mark.parametrize("argv, flag_", [
    (["--agent", "bbb", "--prior-pi", "0.3"], "--prior-pi 0.3"),
    (["--agent", "bbb", "--prior", "mixture", "--prior-sigma", "2"], "--prior-sigma 2"),
    (["--agent", "greedy", "--compile"], "--compile"),
    (["--agent", "greedy", "--no-cuda-graph"], "--no-cuda-graph"),
    (["--agent", "greedy", "--fit-tolerance", "0.01"], "--fit-tolerance 0.01"),
])
def test_a_setting_another_setting_leaves_without_effect_is_refused(argv, flag_, capsys):
    from bandits.run import main as run_main

    assert run_main([*argv, "--steps", "1", "--seeds", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{flag_} has no effect" in err


HOOKS = '''
class Raises:
    def __init__(self, cfg, out): pass
    def after_step(self, populations, log, stopping):
        if log.done == 3: raise RuntimeError("boom")
class NoStep:
    def __init__(self, cfg, out): pass
class Ctor:
    def __init__(self, cfg, out): raise ValueError("bad ctor")
def wrong_signature(): return None
class AfterRun:
    def __init__(self, cfg, out): pass
    def after_step(self, *a): pass
    def after_run(self, log, out): raise KeyError("x")
'''


@pytest.mark.parametrize("hook, said", [
    ("round5hooks:Raises", "after_step raised at step 3: RuntimeError: boom"),
    ("round5hooks:NoStep", "has no after_step"),
    ("round5hooks:Ctor", "raised ValueError: bad ctor"),
    ("round5hooks:wrong_signature", "raised TypeError"),
    ("round5hooks:AfterRun", "after_run raised: KeyError"),
    ("round5syntax:x", "has a syntax error"),
    ("round5import:x", "importing round5import raised RuntimeError: on import"),
])
def test_a_hook_that_fails_is_one_line(hook, said, tmp_path, monkeypatch, capsys):
    from bandits.run import main as run_main

    (tmp_path / "round5hooks.py").write_text(HOOKS)
    (tmp_path / "round5syntax.py").write_text("def broken(:\n")
    (tmp_path / "round5import.py").write_text("raise RuntimeError('on import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert run_main(["--env", "wheel", "--agent", "greedy", "--seeds", "1", "--steps", "5",
                     "--hidden", "8", "--no-progress", "--workers", "1", "--hook", hook,
                     "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and said in err, err


@pytest.mark.parametrize("argv, said", [
    (["-m", "bandits.same_bytes", "--mkl-cbwr", "NOTAMODE"], "not a mode of MKL's"),
    (["-m", "bandits.same_bytes", "--mkl-cbwr", ""], "not a mode of MKL's"),
    (["-m", "bandits.bench", "--kernels", "--scaling"], "give one at a time"),
    (["-m", "bandits.bench", "--kernel-modes", "mkl_strict"], "effect in this run; add --kernels,"),
    (["-m", "bandits.bench", "--busy", "1"], "--busy 1 has no effect in this run"),
    (["-m", "bandits.bench", "--scaling-steps", "5", "9"], "effect in this run; add --scaling,"),
    (["-m", "bandits.bench", "--papers-setup"], "add --agents-per-step"),
    (["-m", "bandits.sweep", "--gpus-per-point", "-1", "--set", "hidden=8", "--out", "s"],
     "--gpus-per-point must be in"),
])
def test_round5_flags_that_were_taken_are_one_line(argv, said, tmp_path):
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    err = done.stderr.strip()
    assert done.returncode == 2 and err.count("\n") == 0 and said in err, err


def test_simulate_resumes_a_run_it_is_given(tmp_path, monkeypatch):
    import json

    import bandits
    from bandits.core.config import UsageError

    monkeypatch.chdir(tmp_path)
    bandits.simulate(out="q1", agent=["greedy"], env="wheel", seeds=1, steps=20, hidden=[8])
    table = bandits.simulate(resume="q1", steps=40)
    record = json.loads((tmp_path / "q1" / "config.json").read_text())
    assert record["steps_completed"] == 40 and record["resumed"][0]["at_step"] == 20
    assert list(table["agent"]) == ["greedy"]
    with pytest.raises(UsageError, match="--lr cannot be given with --resume"):
        bandits.simulate(resume="q1", steps=50, lr=0.5)


def test_diagnose_refuses_a_probes_file_of_0_bytes(tmp_path, capsys):
    import shutil

    from bandits.analysis.diagnose import main as diagnose

    run = tmp_path / "quick"
    shutil.copytree(Path(__file__).parents[1] / "results" / "mushroom" / "quick", run)
    (run / "probes.csv").write_bytes(b"")
    assert diagnose([str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "0 bytes" in err


def test_a_list_setting_is_refused_only_away_from_its_default():
    """``acts_when`` on a list setting compares with its ``default_factory``: the default
    given again passes, another list is refused in one line."""
    from bandits.core.conditions import refuse_settings_without_effect
    from bandits.core.config import UsageError
    from bandits.tools.bench import Settings
    refuse_settings_without_effect(Settings, {**vars(Settings()), "busy": [0, 1, 2]})
    with pytest.raises(UsageError, match="^--busy 2 has no effect in this run; add "
                       "--threads-under-load, or leave --busy out$"):
        refuse_settings_without_effect(Settings, {**vars(Settings()), "busy": [2]})
    refuse_settings_without_effect(Settings, {**vars(Settings()), "busy": [2],
                                              "threads_under_load": True})
