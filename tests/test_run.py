"""The command line of the bandit simulator: outputs, determinism and bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bandits.run import main

TINY = ["--env", "wheel", "--steps", "30", "--seeds", "2", "--hidden", "8",
        "--batch-size", "8", "--updates-per-step", "1", "--no-progress"]
PLAIN = ["--env", "wheel", "--steps", "30", "--seeds", "2", "--no-progress"]  # no network


def test_tiny_run_writes_every_output(tmp_path):
    out = tmp_path / "run"
    assert main([*TINY, "--agent", "bbb", "greedy", "uniform", "--out", str(out)]) == 0
    for name in ("metrics.csv", "summary.csv", "config.json", "regret.png", "regret.pdf"):
        assert (out / name).is_file(), name
    m = pd.read_csv(out / "metrics.csv")
    assert list(m.columns) == ["agent", "seed", "step", "action", "reward", "regret",
                               "expected_regret", "cumulative_regret",
                               "cumulative_expected_regret"]
    assert len(m) == 3 * 2 * 30  # every step of a short run
    for (_, _), g in m.groupby(["agent", "seed"]):
        assert g["cumulative_regret"].iloc[-1] == pytest.approx(g["regret"].sum(), rel=1e-5)
    assert (m["expected_regret"] >= 0).all()
    s = pd.read_csv(out / "summary.csv")
    assert set(s["agent"]) == {"bbb", "greedy", "uniform"}
    assert {"cumulative_regret_mean", "cumulative_regret_std", "cumulative_regret_min",
            "cumulative_regret_max", "train_loss"} <= set(s.columns)
    assert s.set_index("agent")["train_loss"].isna().tolist() == [False, False, True]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["seeds"] == 2 and cfg["steps"] == 30 and cfg["interrupted"] is False
    assert set(cfg["wall_seconds_per_agent"]) == {"bbb", "greedy", "uniform"}
    assert cfg["checkpoint_step"] == 30 and (out / "checkpoint.pt").is_file()
    assert cfg["seed_list"] == [0, 1] and "torch" in cfg["versions"]


def test_same_seed_gives_byte_identical_metrics(tmp_path):
    args = [*TINY, "--agent", "bbb", "eps5"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert main([*args, "--seed", "7", "--out", str(tmp_path / "c")]) == 0
    a = (tmp_path / "a" / "metrics.csv").read_bytes()
    assert a == (tmp_path / "b" / "metrics.csv").read_bytes()
    assert a != (tmp_path / "c" / "metrics.csv").read_bytes()


def test_agents_see_the_same_contexts_and_draws(tmp_path):
    # Common random numbers: the oracle's regret-free reward is the same for all agents,
    # so regret + reward (= the oracle's realised reward) matches across agents.
    assert main([*TINY, "--agent", "greedy", "uniform", "--out", str(tmp_path / "r")]) == 0
    m = pd.read_csv(tmp_path / "r" / "metrics.csv")
    m["oracle"] = m["reward"] + m["regret"]
    wide = m.pivot_table(index=["seed", "step"], columns="agent", values="oracle")
    pd.testing.assert_series_equal(wide["greedy"], wide["uniform"], check_names=False)


def test_long_runs_write_a_bounded_number_of_rows(tmp_path):
    out = tmp_path / "r"
    assert main([*PLAIN[:2], *PLAIN[4:], "--agent", "uniform", "--steps", "500",
                 "--log-points", "50",
                 "--out", str(out)]) == 0
    m = pd.read_csv(out / "metrics.csv")
    steps = m["step"].unique()
    assert len(steps) <= 60 and steps.min() == 1 and steps.max() == 500


@pytest.mark.parametrize(
    "args, message",
    [
        (["--agent", "nope"], "unknown agent 'nope'"),
        (["--env", "nope"], "invalid choice: 'nope'"),
        (["--preset", "nope"], "invalid choice: 'nope'"),
        (["--steps", "0"], "--steps must be a positive integer"),
        (["--seeds", "-1"], "--seeds must be a positive integer"),
        (["--steps", "ten"], "invalid int value: 'ten'"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        given = {args[0]}  # each flag once: TINY's value of a flag tested here is left out
        base = [a for i, a in enumerate(TINY) if a not in given
                and (i == 0 or TINY[i - 1] not in given)]
        code = main([*base, *args, "--out", str(tmp_path / "x")])
        raise SystemExit(code)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_existing_output_is_never_overwritten_without_flag(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert main([*PLAIN, "--agent", "uniform", "--out", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["precious.txt"]
    assert main([*PLAIN, "--agent", "uniform", "--out", str(out), "--overwrite"]) == 0
    assert (out / "precious.txt").read_text() == "keep me"
    assert (out / "metrics.csv").is_file()


def test_unwritable_output_directory(tmp_path, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory would have to be")
    assert main([*PLAIN, "--agent", "uniform", "--out", str(blocker / "sub")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot write to output directory" in err and len(err.splitlines()) == 1


def test_output_path_that_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("data")
    assert main([*PLAIN, "--agent", "uniform", "--out", str(f)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert f.read_text() == "data"


def test_missing_data_is_one_clear_line(tmp_path, capsys, monkeypatch):
    import urllib.request

    def no_network(*a, **k):
        raise OSError("network unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    monkeypatch.delenv("BANDITS_DATA_DIR", raising=False)
    # Mushroom ships inside the package; MNIST does not
    code = main(["--env", "mnist", "--agent", "uniform", "--steps", "5", "--no-progress",
                 "--data-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "train-images-idx3-ubyte.gz" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("failure", ["late setting", "disk"])
def test_a_run_that_fails_leaves_no_empty_folder_it_made(failure, tmp_path, monkeypatch,
                                                         capsys):
    """A run that announced its folder and then failed before writing a file (a --hook
    that cannot be made; the disk) leaves no folder it made, runs/ and the parents of an
    --out included; a folder that was there before stays, even an empty one."""
    (tmp_path / "late_hook.py").write_text(
        "class Hook:\n    def __init__(self, cfg, out): raise ValueError('late')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    if failure == "disk":
        import bandits.simulator.run as command

        def full(*args, **kwargs):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(command, "simulate", full)
    work, existing = tmp_path / "work", tmp_path / "existing"
    work.mkdir()
    existing.mkdir()
    monkeypatch.chdir(work)
    argv = ["--env", "wheel", "--agent", "greedy", "--seeds", "1", "--steps", "5",
            "--no-progress", "--workers", "1",
            *(["--hook", "late_hook:Hook"] if failure == "late setting" else [])]
    for out in ([], ["--out", str(tmp_path / "a" / "b")], ["--out", str(existing)]):
        assert main([*argv, *out]) == 2
        assert " -> " in capsys.readouterr().out  # the folder was made and announced
    assert list(work.iterdir()) == [] and not (tmp_path / "a").exists()
    assert existing.is_dir() and list(existing.iterdir()) == []


def test_interrupt_writes_what_was_measured(tmp_path, monkeypatch):
    import agents.uniform

    calls = {"n": 0}
    original = agents.uniform.UniformAgent.act

    def act(self, contexts):
        calls["n"] += 1
        if calls["n"] == 12:
            raise KeyboardInterrupt
        return original(self, contexts)

    monkeypatch.setattr(agents.uniform.UniformAgent, "act", act)
    out = tmp_path / "r"
    assert main([*PLAIN, "--agent", "uniform", "--out", str(out), "--checkpoint-every", "0"]) == 130
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["interrupted"] is True and cfg["steps_completed"] == 11
    assert cfg["checkpoint_step"] == 11
    m = pd.read_csv(out / "metrics.csv")
    assert m["step"].max() == 11


def test_help_states_defaults():
    r = subprocess.run([sys.executable, "-m", "bandits.run", "--help"], capture_output=True,
                       text=True, cwd=Path(__file__).parents[1], timeout=120)
    assert r.returncode == 0
    for text in ("--updates-per-step", "paper: 64", "--act-samples", "(default: 1)",
                 "quick: 1, memory: 1, paper: 2, long: 2",
                 "--noise-sigma", "--lr"):
        assert text in r.stdout, text


def test_plot_redraws_from_csv(tmp_path):
    from bandits.analysis.plot import main as plot_main

    out = tmp_path / "r"
    assert main([*TINY, "--agent", "uniform", "greedy", "--out", str(out)]) == 0
    (out / "regret.png").unlink()
    assert plot_main([str(out), "--log-y"]) == 0
    assert (out / "regret.png").stat().st_size > 10_000
    other = tmp_path / "other"
    assert main([*PLAIN, "--agent", "uniform", "--seed", "5", "--out", str(other)]) == 0
    combined = tmp_path / "both.png"
    assert plot_main([str(out), str(other), "--out", str(combined)]) == 0
    assert combined.is_file()
    assert plot_main([str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize("argv", [
    ["--agent", "bbb", "--agent", "greedy"],
    ["--steps", "10", "--steps", "20"],
    ["--lr", "0.001", "--lr=0.002"],
    ["--log-y", "--log-y"],  # a switch too
    ["--no-progress"],  # with the one below: given twice
])
def test_a_flag_given_twice_is_one_line_and_exit_2(argv, capsys):
    from bandits.run import main

    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "given twice" in err and len(err.splitlines()) == 1


def test_sweep_refuses_a_setting_set_twice(tmp_path, capsys):
    from bandits.sweep import main

    assert main(["--set", "lr=0.001", "--set", "lr=0.002", "--out", str(tmp_path / "s"),
                 "--", "--agent", "uniform", "--env", "wheel", "--steps", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert "given twice" in err and len(err.splitlines()) == 1
    assert main(["--out", "a", "--out", "b"]) == 2  # the sweep's own flags: one line too
    err = capsys.readouterr().err.strip()
    assert "given twice" in err and len(err.splitlines()) == 1


def test_the_closing_ranking_states_standard_errors_and_separation():
    from bandits.records.regret import ranking

    rows = []
    for seed in range(5):
        for agent, value in (("a", 100 + seed), ("b", 200 + seed), ("c", 205 - seed)):
            rows.append({"agent": agent, "seed": seed, "step": 10, "cumulative_regret": value})
            rows.append({"agent": agent, "seed": seed, "step": 5, "cumulative_regret": 0})
    table = ranking(pd.DataFrame(rows)).set_index("agent")
    assert list(table.index) == ["a", "b", "c"]
    assert table.loc["a", "mean"] == 102 and abs(table.loc["a", "s.e."] - 0.7071) < 1e-3
    assert table.loc["a", "next"].endswith("lower than b")
    assert table.loc["b", "next"] == "not separated from c at 5 seeds"


def test_one_seed_says_1_seed_and_no_standard_error(tmp_path, capsys):
    """Over one seed a standard error (and deviation) is undefined: the closing table
    prints it as n/a, never NaN, and summary.csv leaves its cell empty, never 0."""
    out = tmp_path / "one"
    assert main([*TINY[:4], "--seeds", "1", *TINY[6:], "--agent", "greedy", "uniform",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "(1 seed, env wheel)" in text and "n/a: one seed has no standard error" in text
    assert "NaN" not in text and "1 seeds" not in text
    rows = [line.split() for line in text.splitlines() if line.split()[:1] == ["greedy"]]
    assert rows and rows[-1][2] == "n/a"  # agent, mean, s.e.
    summary = pd.read_csv(out / "summary.csv")
    assert summary["cumulative_regret_std"].isna().all()
    assert summary["cumulative_expected_regret_std"].isna().all()
    assert summary["cumulative_regret_mean"].notna().all()


def test_a_summary_of_agents_at_different_steps_ranks_nothing(tmp_path, capsys):
    from bandits.simulator.run import print_summary

    pd.DataFrame({"agent": ["bbb", "eps1"], "steps": [53, 32], "seeds": 2,
                  "cumulative_regret_mean": [10.0, 20.0],
                  "cumulative_regret_std": [1.0, 2.0]}).to_csv(tmp_path / "summary.csv",
                                                               index=False)
    (tmp_path / "config.json").write_text(json.dumps({"env": "mushroom"}))
    print_summary(tmp_path)
    out = capsys.readouterr().out
    assert "different steps (bbb 53, eps1 32)" in out and "lowest" not in out


def test_a_run_starts_with_a_line_saying_what_runs(tmp_path, capsys):
    assert main([*TINY, "--agent", "bbb", "greedy", "--out", str(tmp_path / "r")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("bandits.run: preset quick: bbb greedy on wheel, 30 steps x 2 seeds")
    assert "1 updates of 8 per step" in first and str(tmp_path / "r") in first


@pytest.mark.parametrize("args, message", [
    (["--seed", "9223372036854775807", "--seeds", "3"], "runs past the largest seed"),
    (["--lr", "inf"], "--lr must be a finite number in (0, inf), got inf"),
])
def test_errors_that_say_what_is_wrong(args, message, tmp_path, capsys):
    base = [a for i, a in enumerate(TINY) if a not in args and (i == 0 or TINY[i - 1] not in args)]
    assert main([*base, *args, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_a_users_hook_looks_after_every_step_and_changes_nothing(tmp_path):
    """A hook of one's own (bandits.simulator.hooks.Hook) goes into simulate without editing the
    loop; looking changes no number of the run."""
    from bandits.simulator.loop import simulate
    from bandits.simulator.settings import parse_config

    class MeanLoss:  # a toy per-step metric: each population's mean training loss
        def __init__(self):
            self.rows = []

        def after_step(self, populations, log, stopping):
            for pop in populations:
                if pop.loss is not None:
                    self.rows.append((log.done, pop.agent.name, float(pop.loss.mean())))

    argv = [*TINY, "--agent", "bbb", "greedy"]
    plain = tmp_path / "plain"
    assert main([*argv, "--out", str(plain)]) == 0
    hook = MeanLoss()
    watched = tmp_path / "watched"
    cfg = parse_config([*argv, "--out", str(watched)])
    watched.mkdir()
    assert simulate(cfg, watched, hooks=[hook]).status == 0
    assert [r[0] for r in hook.rows if r[1] == "bbb"] == list(range(1, 31))
    for name in ("metrics.csv", "summary.csv", "probes.csv"):
        assert (watched / name).read_bytes() == (plain / name).read_bytes(), name


def test_only_agents_with_a_reward_model_to_probe_are_probed():
    import torch

    from agents import SPECS, make_agent

    g = torch.Generator().manual_seed(0)
    contexts = torch.rand(3, 4)
    for name in SPECS:
        agent = make_agent(name, 4, 2, 2, 0)
        pred = agent.predict_samples(contexts, 5, g)
        if name in ("uniform", "linfullpost", "linucb", "dropout", "bootstrap"):
            assert pred is None, name
        else:
            assert pred.shape == (2, 5, 3, 2), name
