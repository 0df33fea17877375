"""The learner screen: its buffers, what each measure is taken over, and a tiny screen."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bandits.learner_screen import main as command
from bandits.studies import learner_screen as ls


def test_buffers_follow_the_fixed_policy_and_their_means():
    edible = np.array([True, False] * 50)
    data = ls.fill_buffer(np.random.default_rng(0), edible, 5000, eat_rate=0.2)
    good = edible[data["row"]]
    assert data["eat"][good].all()  # every edible mushroom eaten
    assert 0.15 < data["eat"][~good].mean() < 0.25  # poisonous ones at the eat rate
    assert set(np.unique(data["reward"][good])) == {5.0}
    assert set(np.unique(data["reward"][~good & data["eat"]])) == {5.0, -35.0}
    assert (data["reward"][~data["eat"]] == 0).all()
    assert set(np.unique(data["mean"][~good & data["eat"]])) == {-15.0}


def test_groups_follow_the_last_eating_of_each_mushroom():
    edible = np.array([True, False, False, False, False])
    data = {"row": np.array([1, 1, 2, 3, 0]), "eat": np.array([True, True, True, False, True]),
            "reward": np.array([5.0, -35.0, 5.0, 0.0, 5.0])}
    g = ls.groups(data, edible)
    assert g["last_paid_35"].tolist() == [False, True, False, False, False]  # last wins
    assert g["last_paid_5"].tolist() == [False, False, True, False, False]
    assert g["never_eaten"].tolist() == [False, False, False, True, True]  # seen, not eaten
    assert g["edible_uneaten"].tolist() == edible.tolist()


def test_the_oracle_buffer_holds_mean_rewards():
    edible = np.array([True, False])
    data = ls.fill_buffer(np.random.default_rng(1), edible, 200, eat_rate=1.0)
    features = np.eye(2, dtype=np.float32)
    means = ls._buffer([data], 2, features, "means")
    outcomes = ls._buffer([data], 2, features, "outcomes")
    assert means.rewards.shape == (2, 200) and len(means) == 200
    assert set(means.rewards[0].unique().tolist()) == {5.0, -15.0}
    assert set(outcomes.rewards[1].unique().tolist()) == {5.0, -35.0}
    assert (means.contexts[1] == features[data["row"]]).all()


def test_a_tiny_screen_writes_every_learner_with_the_reference_rows(tmp_path,
                                                                    mushroom_data_dir):
    out = tmp_path / "screen"
    argv = ["--learner", "greedy", "bbb", "--updates", "30", "--buffers", "2", "--seeds", "1",
            "--buffer-size", "256", "--samples", "3", "--data-dir", str(mushroom_data_dir),
            "--out", str(out)]
    assert ls.main(argv) == 0
    runs = pd.read_csv(out / "runs.csv")
    assert list(runs.learner.unique()) == [*ls.REFERENCES, "greedy", "bbb"]  # references first
    assert len(runs) == 12 and (runs.buffer_size == 256).all()
    shares = runs.filter(regex="^(greedy|thompson)_").stack().dropna()  # NaN: an empty group
    assert shares.between(0, 1).all()
    assert runs.loc[runs.learner == "bbb", "thompson_never_eaten"].notna().all()
    assert runs.loc[runs.learner == "greedy", "thompson_never_eaten"].isna().all()
    summary = pd.read_csv(out / "summary.csv").set_index("learner")
    assert summary.loc["oracle", "times_oracle"] == pytest.approx(1)
    assert summary.loc["oracle-half", "times_half_oracle"] == pytest.approx(1)
    assert summary.loc["ridge", "vs_ridge"] == 0
    assert not summary.loc[list(ls.REFERENCES), "passes"].any()  # references never pass
    table = (out / "table.md").read_text()
    assert "| oracle |" in table and "| ridge-means |" in table
    assert "Thompson (3 samples)" in table
    # the same command gives the same numbers
    assert ls.main([*argv[:-1], str(tmp_path / "again")]) == 0
    pd.testing.assert_frame_equal(runs.drop(columns="train_seconds"),
                                  pd.read_csv(tmp_path / "again" / "runs.csv")
                                  .drop(columns="train_seconds"))


def test_training_is_given_as_draws_per_item_so_every_size_trains_equally(
        tmp_path, mushroom_data_dir):
    out = tmp_path / "screen"
    assert ls.main(["--learner", "greedy", "--draws-per-item", "2", "--buffers", "2",
                    "--buffer-size", "320", "--data-dir",
                    str(mushroom_data_dir), "--out", str(out)]) == 0
    runs = pd.read_csv(out / "runs.csv")
    nets = runs[runs.agent != "ridge"]
    assert (nets.updates == 10).all()  # 2 draws x 320 items / 64 per minibatch
    assert (runs.loc[runs.agent == "ridge", "updates"] == 0).all()
    assert ls.updates_for(ls.Settings(draws_per_item=300), 50_000, 64) == 234_375
    assert ls.updates_for(ls.Settings(draws_per_item=300, updates=7), 50_000, 64) == 7


@pytest.mark.parametrize("argv, message", [
    (["--updates", "10", "--draws-per-item", "2"], "--draws-per-item 2 has no effect in this "
                                                   "run; leave --updates out"),
    (["--learner", "greedy", "--samples", "3"], "--samples 3 has no effect in this run; add "
                                                "a BBB learner"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--buffers", "1000", "--buffer-size", "10000000"], "lower --buffers, --seeds or "
                                                         "--buffer-size"),
    (["--data-dir", "{tmp}/cut"], "agaricus-lepiota.data, line 1: "),  # a file cut short
])
def test_bad_input_is_one_line_before_any_folder_is_made(argv, message, tmp_path, capsys,
                                                          monkeypatch):
    monkeypatch.delenv("BANDITS_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no cached copy either
    def offline(url, target, sha256, timeout=30.0):
        raise OSError("offline")

    monkeypatch.setattr("bandits.core.data._download", offline)  # never the network
    (tmp_path / "cut" / "mushroom").mkdir(parents=True)
    (tmp_path / "cut" / "mushroom" / "agaricus-lepiota.data").write_text("p,x\n")
    out = tmp_path / "screen"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert command([*argv, "--out", str(out)]) == 2  # the command, as python -m runs it
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert err.startswith("bandits.learner_screen: error: ")
    assert not out.exists()


def test_a_ctrl_c_in_the_screen_is_one_line_and_leaves_no_folder(tmp_path, capsys,
                                                                  monkeypatch,
                                                                  mushroom_data_dir):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ls, "screen_learner", interrupted)
    out = tmp_path / "screen"
    assert ls.main(["--learner", "greedy", "--data-dir", str(mushroom_data_dir),
                    "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "interrupted" in err and "starting" not in err
    assert not out.exists()


def test_the_half_information_oracle_sees_the_same_mushrooms_with_half_the_bites():
    edible = np.array([True, False] * 50)
    rng = np.random.default_rng([0, 500])
    full = ls.fill_buffer(rng, edible, 500, 0.2)
    rng = np.random.default_rng([0, 500])
    half = ls.fill_buffer(rng, edible, 500, 0.1)
    assert (full["row"] == half["row"]).all()
    assert (half["eat"] <= full["eat"]).all() and half["eat"].sum() < full["eat"].sum()


def test_ridge_regression_on_the_means_eats_exactly_the_edible_mushrooms():
    features = np.eye(6, dtype=np.float32)  # six mushrooms, each its own feature
    edible = np.array([True, True, True, False, False, False])
    rows = np.tile(np.arange(6), 50)
    eat = np.ones(len(rows), bool)
    mean = np.where(edible[rows], ls.REWARD_EAT, ls.MEAN_POISONOUS)
    eat[::7] = False  # some left, reward 0
    mean = np.where(eat, mean, 0.0)
    buffer = {"row": rows, "eat": eat, "reward": mean, "mean": mean}
    assert (ls.ridge_eats(buffer, features, "means") == edible).all()


@pytest.mark.parametrize("flag, value", [("--eat-rate", "1.5"), ("--eat-rate", "nan"),
                                         ("--updates", "0"), ("--samples", "0"),
                                         ("--buffer-size", "0"), ("--buffers", "0"),
                                         ("--seed", "-1"), ("--seeds", "100000"),
                                         ("--draws-per-item", "0")])
def test_every_declared_range_is_checked_in_one_line(flag, value, capsys, tmp_path):
    out = tmp_path / "screen"
    assert ls.main([flag, value, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err
    assert not out.exists()


def test_an_unknown_learner_is_one_line(capsys):
    assert ls.main(["--learner", "nope"]) == 2
    assert "unknown learner 'nope'" in capsys.readouterr().err
