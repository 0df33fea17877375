"""The gradient-variance benchmark: every estimator and layer, and what it shows."""

from __future__ import annotations

import pandas as pd
import pytest

from bandits.gradient_variance import main


@pytest.mark.slow
def test_every_estimator_and_layer_and_flipout_below_reparam_on_convolutions(
        tmp_path, mnist_data_dir):
    out = tmp_path / "gv"
    assert main(["--draws", "50", "--batch", "128", "--data-dir", str(mnist_data_dir),
                 "--out", str(out)]) == 0
    table = pd.read_csv(out / "gradient_variance.csv")
    assert (out / "gradient_variance.json").is_file()
    assert set(table["estimator"]) == {"reparam", "lrt", "flipout"}
    assert table.groupby("arch")["layer"].nunique().to_dict() == {"lenet5": 5, "mlp": 3}
    assert (table["gradient_variance"] > 0).all()
    conv = table[(table["kind"] == "BayesConv2d") & (table["estimator"] == "flipout")]
    assert (conv["relative_to_reparam"] < 1).all()


def test_bad_input_is_one_line(tmp_path, capsys):
    assert main(["--draws", "1", "--out", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
