"""The garbage collector's settings inside the simulator's loop (bandits.core.collector)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from bandits.core import collector


def test_the_loop_freezes_what_exists_and_puts_python_settings_back(monkeypatch):
    monkeypatch.delenv(collector.VARIABLE, raising=False)
    before = gc.get_threshold()
    with collector.quiet():
        assert gc.get_threshold() == collector.THRESHOLD and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    monkeypatch.setenv(collector.VARIABLE, "python")
    with collector.quiet():
        assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_malformed_bandits_gc_is_one_line_before_anything_runs(tmp_path):
    env = {**os.environ, collector.VARIABLE: "maybe"}
    proc = subprocess.run([sys.executable, "-m", "bandits.run", "--steps", "2", "--out",
                           str(tmp_path / "r")], env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and not (tmp_path / "r").exists()
    assert proc.stderr.strip().splitlines() == [
        "bandits.run: error: BANDITS_GC='maybe': use 'python' (Python's own collector "
        "settings in the loop) or leave it unset"]


def test_the_collector_changes_no_number_of_a_run(tmp_path, monkeypatch):
    import bandits

    small = dict(agent=["bbb", "greedy"], steps=40, seeds=2, hidden=[8], buffer_size=64,
                 updates_per_step=2, batch_size=8, workers=1)
    monkeypatch.setenv(collector.VARIABLE, "python")
    bandits.simulate(tmp_path / "python", **small)
    monkeypatch.delenv(collector.VARIABLE)
    bandits.simulate(tmp_path / "quiet", **small)
    for name in ("metrics.csv", "phases.csv", "summary.csv"):
        assert ((tmp_path / "python" / name).read_bytes()
                == (tmp_path / "quiet" / name).read_bytes()), name


def test_the_api_refuses_a_malformed_bandits_gc(monkeypatch, tmp_path):
    import bandits
    from bandits.core.config import UsageError

    monkeypatch.setenv(collector.VARIABLE, "sometimes")
    with pytest.raises(UsageError, match="BANDITS_GC='sometimes'"):
        bandits.simulate(tmp_path / "r", steps=2)
    assert not (tmp_path / "r").exists()


def test_the_benchmark_times_both_collectors_and_finds_the_same_bytes(monkeypatch):
    from bandits.tools import bench_commands

    tiny = ["--agent", "greedy", "--steps", "20", "--seeds", "1", "--hidden", "8",
            "--buffer-size", "32", "--updates-per-step", "1", "--batch-size", "8"]
    df = bench_commands.gc_cost(rounds=1, extra=tiny)
    assert list(df["unit"]) == ["wall seconds", "CPU seconds"]
    assert (df["quiet"] > 0).all() and (df["python"] > 0).all() and df["same_bytes"].all()
