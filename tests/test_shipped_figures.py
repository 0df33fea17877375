"""Every shipped figure is drawn by the current drawing rules (its style stamp), or is
listed, with what is missing, among those its shipped files cannot redraw."""

from __future__ import annotations

import subprocess
from pathlib import Path

import matplotlib
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bandits.core.files import save_figure  # noqa: E402
from bandits.core.style import STAMP  # noqa: E402
from bandits.tools import figures  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _shipped_pngs() -> set[str]:
    listed = subprocess.run(["git", "ls-files", "results/*.png", "docs/*.png"], cwd=REPO,
                            capture_output=True, text=True).stdout.split()
    return set(listed) or {str(p.relative_to(REPO)) for p in (REPO / "results").rglob("*.png")}


def test_every_figure_the_project_writes_carries_the_current_stamp(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    save_figure(fig, tmp_path / "a.png")
    plt.close(fig)
    assert figures.stamp(tmp_path / "a.png") == STAMP


def test_every_shipped_figure_is_redrawn_by_the_current_rules_or_says_what_it_lacks():
    shipped = _shipped_pngs()
    assert len(shipped) > 30
    redrawn = set(figures.redraws())
    known = redrawn | set(figures.RERUN) | set(figures.NOT_REDRAWN)
    assert shipped - known == set(), "a figure with no redraw"
    assert figures.stale() == [], "run python -m bandits.tools.figures"
    # a figure listed as not redrawable is one that really was not: the list only shrinks
    assert [f for f in figures.NOT_REDRAWN if figures.stamp(REPO / f) == STAMP] == []


def test_a_run_without_its_metrics_is_drawn_from_its_phases():
    phases = pd.DataFrame({"agent": ["bbb"] * 3, "seed": [0] * 3, "start": [1, 3, 5],
                           "end": [2, 4, 6], "regret": [5, 0, 40]})
    drawn = figures.metrics_from_phases(phases)
    assert drawn["step"].tolist() == [2, 4, 6]
    assert drawn["cumulative_regret"].tolist() == [5, 5, 45]


def test_runs_on_other_seeds_are_drawn_joined_and_an_agent_seed_twice_is_refused(tmp_path):
    import json

    import pytest

    whole = REPO / "results/mushroom/memory-decay-0.3"
    phases = pd.read_csv(whole / "phases.csv")
    record = json.loads((whole / "config.json").read_text())
    runs = tmp_path / "runs"
    for name, agents in (("bbb", ["bbb"]), ("others", ["greedy", "eps1", "eps5"])):
        (runs / name).mkdir(parents=True)
        phases[phases.agent.isin(agents)].to_csv(runs / name / "phases.csv", index=False)
        (runs / name / "config.json").write_text(json.dumps({**record, "agent": agents}))
    drawn = figures.draw_joined(tmp_path / "regret.png", runs, "joined")
    assert figures.stamp(drawn) == STAMP
    phases[phases.agent == "bbb"].to_csv(runs / "others" / "phases.csv", index=False)
    (runs / "others" / "config.json").write_text(json.dumps({**record, "agent": ["bbb"]}))
    with pytest.raises(ValueError, match="agent bbb, seed 0 is in two folders"):
        figures.draw_joined(tmp_path / "again.png", runs, "joined")
