"""Slow learning tests: the agents actually learn (run in CI; deselect with -m 'not slow')."""

import pandas as pd
import pytest

from bandits.run import main


@pytest.mark.slow
def test_bbb_ends_below_uniform_on_mushroom(tmp_path, mushroom_data_dir):
    out = tmp_path / "run"
    code = main(["--agent", "bbb", "uniform", "--steps", "600", "--seeds", "2",
                 "--updates-per-step", "4", "--threads", "1", "--no-progress",
                 "--data-dir", str(mushroom_data_dir), "--out", str(out)])
    assert code == 0
    s = pd.read_csv(out / "summary.csv").set_index("agent")
    bbb, uniform = s.loc["bbb"], s.loc["uniform"]
    # Uniform's expected regret is about 4.9 per step; a learner must do clearly better.
    assert bbb.cumulative_expected_regret_mean < 0.7 * uniform.cumulative_expected_regret_mean
    assert bbb.cumulative_regret_max < uniform.cumulative_regret_min


@pytest.mark.slow
def test_bbb_learns_the_wheel(tmp_path):
    out = tmp_path / "run"
    # delta 0.95: the high-reward region is 10 % of the disc, so learning it takes a while
    # and varies from seed to seed; 6 seeds x 1500 steps: BBB's mean is about 0.65 x uniform's.
    code = main(["--env", "wheel", "--agent", "bbb", "uniform", "--steps", "1500", "--seeds", "6",
                 "--updates-per-step", "4", "--threads", "1", "--no-progress", "--out", str(out)])
    assert code == 0
    s = pd.read_csv(out / "summary.csv").set_index("agent")
    assert (s.loc["bbb"].cumulative_expected_regret_mean
            < 0.8 * s.loc["uniform"].cumulative_expected_regret_mean)


@pytest.mark.slow
def test_linfullpost_ends_below_uniform_on_mushroom(tmp_path, mushroom_data_dir):
    out = tmp_path / "run"
    code = main(["--agent", "linfullpost", "uniform", "--steps", "600", "--seeds", "2",
                 "--no-progress", "--data-dir", str(mushroom_data_dir), "--out", str(out)])
    assert code == 0
    s = pd.read_csv(out / "summary.csv").set_index("agent")
    lin, uniform = s.loc["linfullpost"], s.loc["uniform"]
    assert lin.cumulative_expected_regret_mean < 0.5 * uniform.cumulative_expected_regret_mean


@pytest.mark.slow
def test_dropout_ends_below_uniform_on_mushroom(tmp_path, mushroom_data_dir):
    out = tmp_path / "run"
    code = main(["--agent", "dropout", "uniform", "--steps", "600", "--seeds", "2",
                 "--updates-per-step", "4", "--no-progress", "--data-dir", str(mushroom_data_dir),
                 "--out", str(out)])
    assert code == 0
    s = pd.read_csv(out / "summary.csv").set_index("agent")
    drop, uniform = s.loc["dropout"], s.loc["uniform"]
    assert drop.cumulative_expected_regret_mean < 0.7 * uniform.cumulative_expected_regret_mean


@pytest.mark.slow
def test_bootstrap_ends_below_uniform_on_mushroom(tmp_path, mushroom_data_dir):
    out = tmp_path / "run"
    code = main(["--agent", "bootstrap", "uniform", "--steps", "600", "--seeds", "2",
                 "--updates-per-step", "4", "--no-progress", "--data-dir", str(mushroom_data_dir),
                 "--out", str(out)])
    assert code == 0
    s = pd.read_csv(out / "summary.csv").set_index("agent")
    boot, uniform = s.loc["bootstrap"], s.loc["uniform"]
    assert boot.cumulative_expected_regret_mean < 0.7 * uniform.cumulative_expected_regret_mean


@pytest.mark.slow
def test_neurallinear_ends_below_uniform_on_mushroom(tmp_path, mushroom_data_dir):
    out = tmp_path / "run"
    code = main(["--agent", "neurallinear", "uniform", "--steps", "600", "--seeds", "2",
                 "--updates-per-step", "4", "--refresh-every", "20", "--no-progress",
                 "--data-dir", str(mushroom_data_dir), "--out", str(out)])
    assert code == 0
    s = pd.read_csv(out / "summary.csv").set_index("agent")
    nl, uniform = s.loc["neurallinear"], s.loc["uniform"]
    assert nl.cumulative_expected_regret_mean < 0.7 * uniform.cumulative_expected_regret_mean
