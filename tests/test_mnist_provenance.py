"""What an MNIST run records beside its settings, as ``bandits.run`` does: the versions and
the git commit (``versions``) and the ``--data-dir`` the user gave; and runs made before
it, without versions and with ``"DIR"`` in place of the data directory, still resume,
redraw and report. Tiny runs on made-up data: no MNIST files needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bandits import mnist
from bandits.core import checkpoint
from bandits.core.files import package_versions
from bandits.core.version import VERSION_LINE, __version__
from bandits.mnist.data.splits import Split
from bandits.mnist.reports.report import report
from bandits.mnist.training import train
from bandits.mnist.training.training_state import CHECKPOINT_KIND

TINY = ["--train-size", "64", "--test-size", "32", "--hidden", "8", "--batch-size", "32",
        "--eval-samples", "1", "--ood-images", "8", "--prune", "0,50", "--threads", "1",
        "--no-progress", "--checkpoint-every", "0"]


def _split(n: int, seed: int) -> Split:
    g = torch.Generator().manual_seed(seed)
    return Split(torch.rand(n, 784, generator=g) * 2, torch.randint(0, 10, (n,), generator=g))


@pytest.fixture
def data_dirs(monkeypatch) -> list:
    """Made-up splits in place of MNIST; the ``data_dir`` of each load, in order."""
    loads = []

    def load_splits(cfg):
        loads.append(cfg.data_dir)
        return {"train": _split(64, 0), "val": _split(32, 1), "test": _split(32, 2)}

    monkeypatch.setattr(train, "load_splits", load_splits)
    return loads


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_a_run_records_the_versions_and_the_data_dir_it_was_given(tmp_path, data_dirs):
    out = tmp_path / "grid"
    assert mnist.main([*TINY, "--seeds", "2", "--epochs", "1", "--data-dir", "my/mnist",
                       "--out", str(out)]) == 0
    keys = package_versions().keys()
    for config in (out / "config.json", out / "seed=0" / "config.json"):
        saved = _json(config)
        assert saved["versions"].keys() == keys and saved["data_dir"] == "my/mnist"
        assert saved["versions"]["bbb-bandits"] == __version__
    summary = _json(out / "seed=1" / "summary.json")
    assert summary["versions"].keys() == keys and "git" in summary["versions"]
    assert summary["settings"]["data_dir"] == "my/mnist"
    assert data_dirs == ["my/mnist"]
    # not given: null, as bandits.run records it
    assert mnist.main([*TINY, "--epochs", "1", "--out", str(tmp_path / "one")]) == 0
    assert _json(tmp_path / "one" / "config.json")["data_dir"] is None


def _as_before(run: Path) -> None:
    """Make ``run``'s files as a run made before versions and data_dir were recorded
    left them: no ``versions``, ``"DIR"`` for the data directory, in its checkpoint too."""
    config = _json(run / "config.json")
    del config["versions"]
    (run / "config.json").write_text(json.dumps({**config, "data_dir": "DIR"}))
    summary = _json(run / "summary.json")
    del summary["versions"]
    summary["settings"]["data_dir"] = "DIR"
    (run / "summary.json").write_text(json.dumps(summary))
    path = run / checkpoint.NAME
    identity = json.loads(path.read_bytes().split(b"\n", 1)[0])["identity"]
    state = checkpoint.load(path, CHECKPOINT_KIND)
    state["config"]["data_dir"] = "DIR"
    checkpoint.save(path, CHECKPOINT_KIND, state, identity=identity)


def test_a_run_made_before_still_reports_redraws_and_resumes(tmp_path, data_dirs):
    run = tmp_path / "old"
    assert mnist.main([*TINY, "--epochs", "1", "--data-dir", "my/mnist",
                       "--out", str(run)]) == 0
    _as_before(run)
    assert "Table 1" in report(tmp_path)
    assert mnist.main(["redraw", str(run)]) == 0
    assert mnist.main(["--resume", str(run), "--epochs", "2"]) == 0
    assert data_dirs == ["my/mnist", None]  # the placeholder is never taken for a path
    resumed = _json(run / "config.json")
    assert resumed["data_dir"] is None and "versions" in resumed
    assert "Table 1" in report(tmp_path)


def test_a_resume_reads_the_data_dir_the_run_was_given(tmp_path, data_dirs):
    run = tmp_path / "run"
    assert mnist.main([*TINY, "--epochs", "1", "--data-dir", "my/mnist",
                       "--out", str(run)]) == 0
    assert mnist.main(["--resume", str(run), "--epochs", "2"]) == 0
    assert data_dirs == ["my/mnist", "my/mnist"]
    assert _json(run / "config.json")["data_dir"] == "my/mnist"


def test_the_help_ends_with_the_version_as_every_commands_does(capsys):
    assert mnist.main(["--help"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == VERSION_LINE == f"bbb-bandits {__version__}"
