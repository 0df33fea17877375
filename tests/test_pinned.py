"""tests/pinned.py: a test comparing bytes with a shipped result skips under another torch
than the result's, saying both versions in one line, and fails instead where
BANDITS_REQUIRE_PINNED=1 (CI). Its users: test_doc_tables.py's reruns of the shipped
regression and default command (through its _pinned_or_skip)."""

from __future__ import annotations

import json

import pytest
import torch
from pinned import REPO, REQUIRE, needs_recorded_torch, recorded_torch


def _config(tmp_path, version):
    config = tmp_path / "result" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"versions": {"torch": version}}))
    return config


def test_the_recorded_torch_goes_on_and_another_skips_naming_both(tmp_path, monkeypatch):
    monkeypatch.delenv(REQUIRE, raising=False)
    needs_recorded_torch(_config(tmp_path / "a", torch.__version__))  # no skip
    with pytest.raises(pytest.skip.Exception) as skipped:
        needs_recorded_torch(_config(tmp_path / "b", "0.0.1+cpu"))
    why = str(skipped.value)
    assert "\n" not in why and "torch 0.0.1+cpu" in why and f"torch {torch.__version__}" in why


def test_with_require_pinned_another_torch_fails(tmp_path, monkeypatch):
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE}=1: install torch 0.0.1"):
        needs_recorded_torch(_config(tmp_path, "0.0.1"))


def test_the_shipped_results_compared_byte_for_byte_record_a_torch():
    for run in ("results/regression", "results/mushroom/quick"):
        assert recorded_torch(REPO / run / "config.json"), run
