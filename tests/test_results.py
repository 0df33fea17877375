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


def _shipped(folder: Path) -> list[Path]:
    """The files git tracks under ``folder``; every file there when this is no git checkout."""
    import subprocess
    try:
        listed = subprocess.run(["git", "ls-files", "-z", str(folder)], cwd=REPO, check=True,
                                capture_output=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        return [p for p in folder.rglob("*") if p.is_file()]
    return [REPO / name for name in listed if name]


def test_the_results_folder_stays_under_10_mb():
    files = _shipped(REPO / "results")
    assert len(files) > 100, "the shipped results were not found"
    size = sum(p.stat().st_size for p in files if p.is_file())
    assert size < 10_000_000, (f"results/ holds {size:,} bytes, over 10 MB: ship fewer or "
                               "smaller files (raw run files stay out of git)")
    assert not [p for p in files if p.suffix == ".pdf"], "figures are shipped as PNG only"


def test_the_real_second_processor_check_names_the_shipped_bytes():
    """``results/same-bytes/intel-host``: every file it found the same bytes is, byte for
    byte, the file shipped now (a result changed since must be checked again)."""
    import hashlib

    rows = pd.read_csv(REPO / "results/same-bytes/intel-host/comparison.csv")
    assert len(rows) == 6 and rows["same"].all()
    assert (rows["shipped_sha256"] == rows["rerun_sha256"]).all()
    for _, r in rows.iterrows():
        now = hashlib.sha256((REPO / r["result"] / r["file"]).read_bytes()).hexdigest()
        assert now == r["shipped_sha256"], f"{r['result']}/{r['file']} changed since"
