"""The toy regression: outputs, determinism, bad input, and (slow) the bands it shows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bandits.tools.regression import MODELS, main

FAST = ["--steps", "60", "--samples", "10", "--heldout", "50", "--hidden", "16"]


def test_outputs_and_same_seed_same_bytes(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([*FAST, "--out", str(a)]) == 0
    assert main([*FAST, "--out", str(b), "--no-plot"]) == 0
    assert (a / "regression.csv").read_bytes() == (b / "regression.csv").read_bytes()
    assert (a / "regression.png").is_file() and (a / "config.json").is_file()
    table = pd.read_csv(a / "regression.csv")
    assert list(table["model"]) == list(MODELS)
    mlp = table.set_index("model").loc["mlp"]
    assert math.isnan(mlp["coverage_95_inside"]) and math.isnan(mlp["predictive_std_inside"])
    assert mlp["rmse_inside"] > 0
    bbb = table.set_index("model").loc["bbb-fixed"]
    assert 0 <= bbb["coverage_95_inside"] <= 1 and bbb["predictive_std_outside"] > 0


@pytest.mark.parametrize("args, message", [
    (["--points", "0"], "--points must be a positive integer"),
    (["--dropout", "1"], "--dropout must be in (0, 1)"),
    (["--noise", "abc"], "invalid float value"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, message):
    assert main([*args, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_bbb_band_covers_the_data_and_widens_away_from_it(tmp_path):
    assert main(["--out", str(tmp_path), "--no-plot"]) == 0
    row = pd.read_csv(tmp_path / "regression.csv").set_index("model").loc["bbb-fixed"]
    assert row["coverage_95_inside"] >= 0.9
    assert row["predictive_std_outside"] >= 3 * row["predictive_std_inside"]
