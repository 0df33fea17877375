"""What the simulator and the MNIST trainer share (bandits.core.runner): a run's identity, the
resume's checks, the worker count and divergence, one implementation for both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bandits.core import runner
from bandits.core.config import UsageError
from bandits.mnist.training import train
from bandits.mnist.training.training_state import TRAINING
from bandits.simulator import hooks
from bandits.simulator.resume import RUN

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _shipped_runs() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("config.json")
                  if "identity" in json.loads(p.read_text()))


def test_every_shipped_run_keeps_its_identity():
    # A checkpoint stores its run's identity; --resume recomputes it from config.json and
    # refuses a mismatch. Every shipped run, including those made before a setting was
    # added (their config.json lacks it), must recompute to the identity it recorded, or
    # its checkpoints could never be resumed.
    runs = _shipped_runs()
    assert len(runs) >= 10
    for path in runs:
        config = json.loads(path.read_text())
        assert RUN.identity(config) == config["identity"], path


def test_identity_leaves_out_what_does_not_decide_the_results():
    kind = runner.RunKind("prog", "kind/1", frozenset({"steps"}),
                          not_settings=frozenset({"threads"}), added_later={"fit": "steps"})
    base = {"lr": 0.1, "seed": 0, "fit": "steps"}
    same = [{**base, "steps": 5}, {**base, "threads": 4}, {**base, "out": "elsewhere"},
            {k: v for k, v in base.items() if k != "fit"}]  # made before --fit existed
    for config in same:
        assert kind.identity(config) == kind.identity(base), config
    for config in [{**base, "lr": 0.2}, {**base, "fit": "epochs"}, {**base, "new": 1}]:
        assert kind.identity(config) != kind.identity(base), config
    # with a fixed list of settings, a name outside it does not count
    listed = runner.RunKind("prog", "kind/1", frozenset(), settings=lambda: ["lr", "seed"])
    assert listed.identity({**base, "new": 1}) == listed.identity(base)


def test_a_setting_added_since_the_first_settings_counts_only_away_from_its_default():
    # FIRST_SETTINGS is frozen: every setting of the command is in it or was added since
    import dataclasses

    from bandits.simulator.resume import FIRST_SETTINGS
    from bandits.simulator.settings import Flags
    assert FIRST_SETTINGS <= {f.name for f in dataclasses.fields(Flags)}
    kind = runner.RunKind("prog", "kind/1", frozenset(), first_settings=frozenset({"lr"}),
                          defaults=lambda: {"lr": 0.1, "temperature": 1.0})
    base = {"lr": 0.1}
    assert kind.identity({**base, "temperature": 1.0}) == kind.identity(base)
    assert kind.identity({**base, "temperature": 0.5}) != kind.identity(base)
    # a first setting counts at its default too, as it always did
    assert kind.identity({}) != kind.identity(base)


def test_a_resume_goes_on_never_back(tmp_path):
    RUN.check_continues("steps", 10, 10, "steps", tmp_path)
    with pytest.raises(UsageError, match="--steps 5 is fewer than the 10 steps the checkpoint"
                                         " in .* has done; give --steps 10 or more"):
        RUN.check_continues("steps", 5, 10, "steps", tmp_path)


def test_both_commands_refuse_result_changing_flags_by_one_check():
    for kind, flag in ((RUN, "lr"), (TRAINING, "lr")):
        kind.refuse_changes({"resume", "workers"})
        with pytest.raises(UsageError, match="--lr cannot be given with --resume"):
            kind.refuse_changes({"resume", flag})


def test_both_commands_claim_their_directory_the_same_way(tmp_path):
    with RUN.claimed(tmp_path) as out:
        assert (out / ".bandits.lock").exists()
    assert not (tmp_path / ".bandits.lock").exists()  # given up however the run ends
    with pytest.raises(RuntimeError), TRAINING.claimed(tmp_path):
        raise RuntimeError
    assert not (tmp_path / ".bandits.lock").exists()


def test_worker_count(monkeypatch):
    monkeypatch.delenv("BANDITS_WORKERS", raising=False)
    assert runner.worker_count(4, 2) == 2  # never more than the parts
    assert runner.worker_count(None, 8, default=3) == 3
    monkeypatch.setenv("BANDITS_WORKERS", "2")
    assert runner.worker_count(None, 8, default=3) == 2
    monkeypatch.setenv("BANDITS_WORKERS", "many")
    with pytest.raises(UsageError, match="BANDITS_WORKERS='many'"):
        runner.worker_count(None, 1)  # checked even when one part leaves no choice
    with pytest.raises(UsageError, match="BANDITS_WORKERS='many'"):
        runner.worker_count(2, 8)  # and when --workers is given


def test_one_divergence_for_both_commands():
    assert hooks.Diverged is runner.Diverged and train.Diverged is runner.Diverged
