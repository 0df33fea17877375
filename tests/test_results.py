"""Claims the shipped results make about each other, checked on their own files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
GPU_RUNS = REPO / "results/mushroom/paper-preset-h100"


def _per_2000_steps(path: Path, last: int) -> pd.DataFrame:
    phases = pd.read_csv(path)
    phases = phases[phases.end <= last].assign(block=lambda p: (p.start - 1) // 2000)
    return (phases.groupby(["agent", "seed", "block"])[["regret", "expected_regret"]]
            .sum().sort_index())


def test_the_paper_preset_gives_one_trajectory_on_the_h100_and_the_h200():
    # The H200 run logged phases of 1000 steps and the H100 run of 2000: compare sums.
    h100 = _per_2000_steps(GPU_RUNS / "phases.csv", 24_000)
    h200 = _per_2000_steps(GPU_RUNS / "h200-rerun/phases.csv", 24_000)
    assert len(h100) == 4 * 5 * 12
    pd.testing.assert_frame_equal(h100, h200)
