"""The pre-registered analysis of the Wheel at the Showdown's protocol
(:mod:`bandits.tools.protocol_tables`), on a short run of the same six agents: regret as a
fraction of uniform's per seed, and BBB paired against each agent with a two-sided exact
sign-flip p."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import bandits
from bandits.tools import protocol_tables
from bandits.tools.table_cells import TableError


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("repo")
    bandits.simulate(root / "run", env="wheel", wheel_delta=0.95,
                     agent=list(protocol_tables.SHOWDOWN_AGENTS), seeds=3, seed=100,
                     steps=400, train_every=20, updates_per_step=2, batch_size=16,
                     buffer_size=400, hidden=[8, 8], log_points=4, workers=1)
    return root


def test_two_sided_p_counts_every_pattern_as_far_as_the_observed_one():
    assert protocol_tables.two_sided_p(np.array([-1.0] * 5)) == pytest.approx(2 / 32)
    d = np.array([3.0, -1.0, 2.0])
    means = [abs(np.mean(np.array(s) * d)) for s in itertools.product((1, -1), repeat=3)]
    expected = np.mean([m >= abs(d.mean()) - 1e-12 for m in means])
    assert protocol_tables.two_sided_p(d) == pytest.approx(expected)
    with pytest.raises(ValueError, match="1 to 16"):
        protocol_tables.two_sided_p(np.zeros(17))


def test_the_table_holds_each_agent_over_uniform_and_bbb_paired(run):
    text = protocol_tables.wheel_showdown_protocol(run, "run", early=200)
    phases = pd.read_csv(run / "run" / "phases.csv")
    final = phases.groupby(["seed", "agent"])["regret"].sum().unstack("agent")
    ratio = final["greedy"] / final["uniform"]
    greedy_row = next(line for line in text.splitlines() if line.startswith("| greedy |"))
    assert f"{ratio.mean():.3f} +- {ratio.std(ddof=1) / np.sqrt(3):.3f}" in greedy_row
    assert "| uniform | " in text and "1.000 +- 0.000" in text
    d = (final["bbb"] - final["greedy"]).to_numpy()
    paired = next(line for line in text.splitlines() if line.startswith("| BBB - greedy |"))
    assert f"{d.mean():+.0f} +- " in paired
    assert f"p = {protocol_tables.two_sided_p(d):.3f}" in paired
    half = 4.302653 * d.std(ddof=1) / np.sqrt(3)  # Student's t, 2 degrees of freedom
    low, high = d.mean() - half, d.mean() + half
    verdict = "not separated" if low <= 0 <= high else "separated"
    assert f"[{low:+.0f}, {high:+.0f}]: {verdict} |" in paired
    assert text.count("| BBB - ") == 5 and "at 400" in text and "at 200" in text


def test_figure6_at_the_paper_protocol_is_the_figure6_table_of_its_run(tmp_path):
    bandits.simulate(tmp_path / "run", preset="paper", seeds=2, steps=300,
                     updates_per_step=1, workers=1)
    text = protocol_tables.figure6_paper_protocol(tmp_path, "run", late=100)
    assert text.startswith("| Final cumulative regret, mean +- s.e. (median) |")
    assert "| the paper's protocol, 2 seeds |" in text and "steps 201-300" in text


def test_an_early_step_that_ends_no_phase_is_refused(run):
    with pytest.raises(TableError, match="no phase ends at step 250"):
        protocol_tables.wheel_showdown_protocol(run, "run", early=250)
