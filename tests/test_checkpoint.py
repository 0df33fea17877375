"""Atomic checkpoint files and their errors."""

import pytest
import torch

from bandits.core import checkpoint
from bandits.core.checkpoint import CheckpointError


def test_round_trip_and_kind(tmp_path):
    p = tmp_path / "checkpoint.pt"
    checkpoint.save(p, "k", {"x": torch.arange(3), "d": {"a": 1.5, "b": [None, "s"]}})
    state = checkpoint.load(p, "k")
    assert torch.equal(state["x"], torch.arange(3)) and state["d"] == {"a": 1.5, "b": [None, "s"]}
    with pytest.raises(CheckpointError, match="written by 'k', not by 'other'"):
        checkpoint.load(p, "other")


def test_a_write_that_dies_midway_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    p = tmp_path / "checkpoint.pt"
    checkpoint.save(p, "k", {"step": 1})

    def dying_save(obj, f, *a, **k):
        f.write(b"half a checkpoint")
        raise KeyboardInterrupt  # killed while writing

    monkeypatch.setattr(checkpoint.torch, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(p, "k", {"step": 2})
    monkeypatch.undo()
    assert checkpoint.load(p, "k")["step"] == 1  # the name still holds the complete old one
