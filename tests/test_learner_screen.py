"""The learner screen: its buffers, what each measure is taken over, and a tiny screen."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

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


def test_a_tiny_screen_writes_every_learner_with_the_oracle(tmp_path, mushroom_data_dir):
    out = tmp_path / "screen"
    argv = ["--learner", "greedy", "bbb", "--updates", "30", "--buffers", "2", "--seeds", "1",
            "--buffer-size", "256", "--samples", "3", "--data-dir", str(mushroom_data_dir),
            "--out", str(out)]
    assert ls.main(argv) == 0
    runs = pd.read_csv(out / "runs.csv")
    assert list(runs.learner.unique()) == ["oracle", "greedy", "bbb"]  # the floor first
    assert len(runs) == 6
    shares = runs.filter(regex="^(greedy|thompson)_").stack().dropna()  # NaN: an empty group
    assert shares.between(0, 1).all()
    assert runs.loc[runs.learner == "bbb", "thompson_never_eaten"].notna().all()
    assert runs.loc[runs.learner == "greedy", "thompson_never_eaten"].isna().all()
    summary = pd.read_csv(out / "summary.csv")
    assert summary.loc[summary.learner == "oracle", "times_oracle"].iloc[0] == pytest.approx(1)
    table = (out / "table.md").read_text()
    assert "| oracle |" in table and "Thompson (3 samples)" in table
    # the same command gives the same numbers
    assert ls.main([*argv[:-1], str(tmp_path / "again")]) == 0
    pd.testing.assert_frame_equal(runs.drop(columns="train_seconds"),
                                  pd.read_csv(tmp_path / "again" / "runs.csv")
                                  .drop(columns="train_seconds"))


def test_an_unknown_learner_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        ls.main(["--learner", "nope"])
    assert e.value.code == 2
    assert "unknown learner 'nope'" in capsys.readouterr().err
