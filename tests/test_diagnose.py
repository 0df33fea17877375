"""The per-phase record, the probes of the reward models, and ``bandits.diagnose``."""

import json

import numpy as np
import pandas as pd
import pytest

from bandits.analysis import diagnose
from bandits.records.regret import RegretLog, phase_length
from bandits.run import main
from bandits.simulator.hooks import Probe

TINY = ["--env", "wheel", "--seeds", "2", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "1", "--no-progress", "--agent", "bbb", "greedy", "eps5",
        "uniform", "--steps", "60"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("diag") / "run"
    assert main([*TINY, "--out", str(out)]) == 0
    return out


def test_phases_count_every_step_exactly(tiny_run):
    phases = pd.read_csv(tiny_run / "phases.csv")
    summary = pd.read_csv(tiny_run / "summary.csv").set_index("agent")
    cells = [c for c in phases.columns if c.startswith("a") and "_best" in c]
    assert len(cells) == 25  # the wheel's 5 x 5 (action taken, best action)
    per_run = phases.groupby(["agent", "seed"])
    assert (per_run[cells].sum().sum(axis=1) == 60).all()
    assert (per_run.apply(lambda g: (g["end"] - g["start"] + 1).sum(),
                          include_groups=False) == 60).all()
    means = per_run["expected_regret"].sum().groupby("agent").mean()
    for agent, v in means.items():
        assert v == pytest.approx(summary.loc[agent, "cumulative_expected_regret_mean"],
                                  rel=1e-5)
    # the metrics (every step logged here) agree with the counts
    m = pd.read_csv(tiny_run / "metrics.csv")
    bbb0 = m[(m["agent"] == "bbb") & (m["seed"] == 0)]
    ph = phases[(phases["agent"] == "bbb") & (phases["seed"] == 0)]
    assert ph[[f"a{a}_best{b}" for a in range(5) for b in range(5) if a == b]].sum().sum() \
        == (bbb0["expected_regret"] == 0).sum()


def test_phase_length_gives_round_windows():
    assert [phase_length(n) for n in (5, 2000, 10_000, 50_000)] == [1, 100, 500, 2000]


def test_a_phase_frame_by_hand():
    log = RegretLog(["x"], [0], 4)
    for t, (a, b, e) in enumerate([(1, 1, 0.0), (1, 0, 15.0), (0, 1, 5.0), (0, 0, 0.0)]):
        log.record(0, t, np.array([a]), np.array([0.0]),
                   {"regret": np.array([e]), "expected_regret": np.array([e]),
                    "optimal_action": np.array([b])})
    log.done = 4
    f = log.phases_frame(2)
    assert list(f["end"]) == [1, 2, 3, 4]  # windows of one step
    assert f[["a0_best0", "a0_best1", "a1_best0", "a1_best1"]].to_numpy().tolist() == [
        [0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]]


def test_probes_describe_the_models(tiny_run):
    probes = pd.read_csv(tiny_run / "probes.csv")
    assert set(probes["agent"]) == {"bbb", "greedy", "eps5"}  # uniform has no model
    assert sorted(probes["step"].unique()) == [1, 2, 3, 5, 7, 10, 20, 30, 50]
    share = probes.groupby(["agent", "seed", "step", "best_action"])["chosen_share"].sum()
    assert np.allclose(share, 1.0)  # each sample takes exactly one action
    greedy = probes[probes["agent"] == "greedy"]
    bbb = probes[probes["agent"] == "bbb"]
    assert (greedy["predicted_std"] == 0).all() and (bbb["predicted_std"] > 0).all()


def test_looking_changes_nothing(tiny_run, tmp_path, monkeypatch):
    monkeypatch.setattr(Probe, "look", lambda self, *a: None)
    out = tmp_path / "blind"
    assert main([*TINY, "--out", str(out)]) == 0
    for name in ("metrics.csv", "summary.csv", "phases.csv"):
        assert (out / name).read_bytes() == (tiny_run / name).read_bytes()


def test_diagnose_writes_a_table_and_a_figure(tiny_run, capsys):
    assert diagnose.main([str(tiny_run), "--last", "20"]) == 0
    table = pd.read_csv(tiny_run / "diagnosis.csv")
    assert {"agent", "start", "end", "expected_regret_per_step",
            "expected_regret_per_step_sem"} <= set(table.columns)
    assert (tiny_run / "diagnosis.png").stat().st_size > 10_000
    seeds = pd.read_csv(tiny_run / "diagnosis_seeds.csv")
    summary = pd.read_csv(tiny_run / "summary.csv").set_index("agent")
    for agent, g in seeds.groupby("agent"):
        assert g["cumulative_regret"].mean() == pytest.approx(
            summary.loc[agent, "cumulative_regret_mean"], rel=1e-5)
    assert (seeds["last_steps"] == 20).all()
    out = capsys.readouterr().out
    assert "from_step" in out and "bbb" in out


def test_exploration_sets_each_models_spread_beside_its_gap(tiny_run):
    # by hand: one agent, one step, two seeds, contexts of best action 0 with 3 actions
    rows = [("a", 0, 5, 0, a, mean, std, share) for a, mean, std, share in
            ((0, 0.9, 0.1, 0.7), (1, 0.5, 0.3, 0.2), (2, 0.6, 0.2, 0.1))]
    rows += [("a", 1, 5, 0, a, mean, std, share) for a, mean, std, share in
             ((0, 0.8, 0.0, 1.0), (1, 0.2, 0.0, 0.0), (2, 0.1, 0.0, 0.0))]
    probes = pd.DataFrame(rows, columns=["agent", "seed", "step", "best_action", "action",
                                         "predicted_mean", "predicted_std", "chosen_share"])
    t = diagnose.exploration(probes)
    assert len(t) == 1 and t.loc[0, "agent"] == "a" and t.loc[0, "step"] == 5
    assert t.loc[0, "spread_best"] == pytest.approx((0.1 + 0.0) / 2)
    assert t.loc[0, "spread_other"] == pytest.approx((0.25 + 0.0) / 2)
    assert t.loc[0, "gap"] == pytest.approx(((0.9 - 0.6) + (0.8 - 0.2)) / 2)
    assert t.loc[0, "wrong_share"] == pytest.approx((0.3 + 0.0) / 2)
    # a run's: written beside the diagnosis, point estimates without spread
    assert diagnose.main([str(tiny_run)]) == 0
    run = pd.read_csv(tiny_run / "exploration.csv")
    assert list(run["agent"].unique()) == ["bbb", "greedy", "eps5"]
    assert (run.loc[run["agent"] == "greedy", "spread_best"] == 0).all()
    assert (run.loc[run["agent"] == "bbb", "spread_best"] > 0).all()
    assert run["wrong_share"].between(0, 1).all()


def test_diagnose_names_mushroom_mistakes():
    phases = pd.DataFrame({"agent": "bbb", "seed": [0, 1], "start": 1, "end": 10,
                           "regret": 0.0, "expected_regret": [15.0, 5.0],
                           "a0_best0": [4, 5], "a0_best1": [0, 1], "a1_best0": [1, 0],
                           "a1_best1": [5, 4]})
    t = diagnose.phase_table(phases, "mushroom")
    assert t["ate_poisonous_rate"].iloc[0] == pytest.approx(0.05)
    assert t["left_edible_rate"].iloc[0] == pytest.approx(0.05)
    assert t["expected_regret_per_step"].iloc[0] == pytest.approx(1.0)


def test_diagnose_of_a_directory_without_phases_is_one_line(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"env": "wheel"}))
    assert diagnose.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "phases.csv" in err and len(err.splitlines()) == 1


def _damaged_copy(src, dst, name, how):
    import shutil

    shutil.copytree(src, dst)
    path = dst / name
    lines = path.read_text().splitlines(keepends=True)
    if how == "cut":  # a file cut short: its last rows lost
        path.write_text("".join(lines[:-7]))
    elif how == "cut mid-row":
        path.write_text("".join(lines)[:-25])
    elif how == "nan":
        cells = lines[5].split(",")
        cells[-1] = "nan\n"
        lines[5] = ",".join(cells)
        path.write_text("".join(lines))
    elif how == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif how == "column":
        path.write_text(lines[0].replace("seed", "sed") + "".join(lines[1:]))
    return path


@pytest.mark.parametrize("name", ["phases.csv", "probes.csv"])
@pytest.mark.parametrize("how", ["cut", "cut mid-row", "nan", "binary", "column"])
def test_diagnose_refuses_a_damaged_file_in_one_line(tiny_run, tmp_path, capsys, name, how):
    path = _damaged_copy(tiny_run, tmp_path / "run", name, how)
    assert diagnose.main([str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err, err


@pytest.mark.parametrize("how", ["cut", "cut mid-row", "nan", "binary", "column"])
def test_plot_refuses_a_damaged_metrics_file_in_one_line(tiny_run, tmp_path, capsys, how):
    from bandits.analysis import plot

    path = _damaged_copy(tiny_run, tmp_path / "run", "metrics.csv", how)
    assert plot.main([str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err, err


def test_a_new_run_leaves_no_earlier_diagnosis_and_a_run_without_probes_says_so(
        tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*TINY, "--out", str(out)]) == 0
    assert diagnose.main([str(out)]) == 0
    assert "bbb" in set(pd.read_csv(out / "exploration.csv")["agent"])
    # the same directory, a new run of another agent: no diagnosis of the old one survives
    assert main(["--env", "wheel", "--seeds", "2", "--no-progress", "--agent", "uniform",
                 "--steps", "60", "--out", str(out),
                 "--overwrite"]) == 0
    assert not (out / "exploration.csv").exists() and not (out / "diagnosis.csv").exists()
    (out / "exploration.csv").write_text("agent,step\nbbb,1\n")  # left by hand
    capsys.readouterr()
    assert diagnose.main([str(out)]) == 0
    err = capsys.readouterr().err
    assert "exploration.csv is left from an earlier diagnosis" in err
    assert (out / "exploration.csv").read_text() == "agent,step\nbbb,1\n"  # never deleted


def test_the_diagnosis_figure_names_bbb_acting_on_a_mean_of_samples(tiny_run, tmp_path,
                                                                    monkeypatch):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    record = json.loads((run / "config.json").read_text())
    drawn = {}
    monkeypatch.setattr(diagnose, "save_figure",
                        lambda fig, path, **kw: drawn.setdefault("legend", [
                            t.get_text() for ax in fig.axes if ax.get_legend()
                            for t in ax.get_legend().get_texts()]))
    for samples, label in ((1, "Bayes by Backprop (Thompson)"),
                           (2, "Bayes by Backprop (mean of 2 samples)")):
        (run / "config.json").write_text(json.dumps({**record, "act_samples": samples}))
        drawn.clear()
        diagnose.diagnose(run, 20)
        assert label in drawn["legend"], drawn["legend"]
