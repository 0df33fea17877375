"""The generated tables (:mod:`bandits.tools.doc_tables`) of the runs at the papers' own
protocols: Figure 6 at Blundell et al.'s (``figure6-paper-protocol``, the ``paper`` preset
to 50,000 steps, as every other Figure 6 table) and the Wheel at the Showdown's
(``wheel-showdown-protocol``, the analysis its page pre-registered), each from its run's
exact per-phase records.

Each agent's cumulative regret is divided by the uniform agent's on the same seed (as
Riquelme et al. 2018 report it), at the run's end and at an early step; BBB is compared
with every other agent by the paired difference of the final cumulative regret over the
seeds, with a two-sided exact sign-flip p (all 2^n sign patterns).

Written before the runs finish: :data:`GENERATORS` joins ``doc_tables``'s when each run
ships with its page (a generator without a page fails the tables' tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bandits.analysis.confirm import sign_flip_p
from bandits.mnist.reports.rows import t975
from bandits.records import reader
from bandits.tools.memory_tables import figure6_memory, p_text
from bandits.tools.table_cells import NAMES, TableError, mean_se

PAPER_RUN = "results/mushroom/paper-protocol"
"""Figure 6 at the paper's protocol: the ``paper`` preset's run to 50,000 steps."""
SHOWDOWN_RUN = "results/wheel/showdown-protocol/run"
"""The Wheel at the Showdown's protocol: the run's ``phases.csv`` and ``config.json``."""
SHOWDOWN_AGENTS = ("uniform", "greedy", "eps1", "bbb", "linfullpost", "neurallinear")
SHOWDOWN_EARLY = 5000
"""The early step set beside the end: the first phase's end. The page pre-registered
2,000 steps (the horizon of the project's other Wheel runs), but at 80,000 steps a phase
of ``phases.csv`` is 5,000 steps long, so no exact record ends at 2,000 (its deviation,
stated on the page before the run finished)."""


def figure6_paper_protocol(root: Path, run: str = PAPER_RUN, late: int = 10_000) -> str:
    """:func:`bandits.tools.memory_tables.figure6_memory` of the ``paper`` preset's run."""
    return figure6_memory(root, run, late, label="the paper's protocol")


def two_sided_p(d: np.ndarray) -> float:
    """Two-sided exact sign-flip p of "the mean of ``d`` is 0" (all 2^n sign patterns, n at
    most 16): :func:`bandits.analysis.confirm.sign_flip_p`'s."""
    return sign_flip_p(d, two_sided=True)


def regret_at(phases: pd.DataFrame, step: int) -> pd.DataFrame:
    """Per seed (rows) and agent (columns): the cumulative regret over steps 1 to
    ``step``, which must end a phase."""
    if step not in set(phases["end"]):
        raise TableError(f"no phase ends at step {step}: the table wants one there")
    upto = phases[phases["end"] <= step]
    return upto.groupby(["seed", "agent"])["regret"].sum().unstack("agent")


def _paired(a: pd.Series, b: pd.Series) -> str:
    d = (a - b).to_numpy()
    se = d.std(ddof=1) / np.sqrt(len(d))
    return (f"{mean_se(d.mean(), se, 0, sign='+')} ({int((d < 0).sum())} / "
            f"{int((d == 0).sum())} / {int((d > 0).sum())}; {p_text(two_sided_p(d))})")


def _interval(a: pd.Series, b: pd.Series) -> str:
    """The 95 % interval (Student's t) of the mean paired difference ``a - b``, and
    whether it leaves zero out."""
    d = (a - b).to_numpy()
    half = t975(len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    low, high = d.mean() - half, d.mean() + half
    return (f"[{low:+.0f}, {high:+.0f}]: "
            + ("separated" if low > 0 or high < 0 else "not separated"))


def _ratio(regret: pd.DataFrame, agent: str) -> str:
    r = regret[agent] / regret["uniform"]
    return mean_se(r.mean(), r.std(ddof=1) / np.sqrt(len(r)), 3)


def wheel_showdown_protocol(root: Path, run: str = SHOWDOWN_RUN,
                            early: int = SHOWDOWN_EARLY) -> str:
    """Per agent: its final cumulative regret (mean +- s.e. over the seeds), that regret
    as a fraction of the uniform agent's on the same seed at the end and at ``early``;
    then BBB minus each other agent, paired over the seeds, at both steps (mean +- s.e.;
    BBB's wins, ties and losses; the two-sided exact p), and at the end its 95 % interval
    with "not separated" where that holds zero."""
    phases = reader.read(root / run / "phases.csv")
    end = int(phases["end"].max())
    final, first = regret_at(phases, end), regret_at(phases, early)
    missing = [a for a in SHOWDOWN_AGENTS if a not in final.columns]
    if missing:
        raise TableError(f"{root / run / 'phases.csv'}: no rows of {', '.join(missing)}")
    seeds = len(final)
    lines = [f"| agent ({seeds} seeds) | cumulative regret at {end:,}, mean +- s.e. | "
             f"regret / uniform's at {end:,} | regret / uniform's at {early:,} |",
             "| --- | ---: | ---: | ---: |"]
    for a in SHOWDOWN_AGENTS:
        x = final[a]
        lines.append(f"| {NAMES[a]} | {mean_se(x.mean(), x.std(ddof=1) / np.sqrt(seeds), 0)} "
                     f"| {_ratio(final, a)} | {_ratio(first, a)} |")
    lines += ["", f"| paired over the {seeds} seeds (BBB's wins / ties / losses; two-sided "
              f"exact p) | at {end:,} | its 95 % interval (Student's t) | at {early:,} |",
              "| --- | ---: | ---: | ---: |"]
    for a in SHOWDOWN_AGENTS:
        if a != "bbb":
            lines.append(f"| BBB - {NAMES[a]} | {_paired(final['bbb'], final[a])} | "
                         f"{_interval(final['bbb'], final[a])} | "
                         f"{_paired(first['bbb'], first[a])} |")
    return "\n".join(lines) + "\n"


GENERATORS = {"figure6-paper-protocol": figure6_paper_protocol,
              "wheel-showdown-protocol": wheel_showdown_protocol}
