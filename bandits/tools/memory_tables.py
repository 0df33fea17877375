"""The generated tables (:mod:`bandits.tools.doc_tables`) of Figure 6 with the learner with a
memory: the 20,000-step comparison of the paper's set-up and the memory settings on the
same seeds (``memory-20k``), and the 50,000-step run of the winner (``figure6-memory``),
each read from the runs' exact per-phase records (``phases.csv``, checked by
:mod:`bandits.records.reader`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from bandits.analysis.confirm import sign_flip_p
from bandits.records import reader
from bandits.tools.table_cells import TableError, bold_if, mean_se

ORDER = ("bbb", "greedy", "eps1", "eps5")
LABELS = {"bbb": "BBB (Thompson)", "greedy": "greedy", "eps1": "1 % greedy",
          "eps5": "5 % greedy"}
EPSILON = {"eps1": 0.01, "eps5": 0.05}
# what a random action costs on Mushroom: it is wrong half the time, and a wrong one costs
# 5 on the 4208 edible mushrooms (left) and 15 in expectation on the 3916 poisonous ones
RANDOM_ACTION_COST = (4208 * 5 + 3916 * 15) / 8124 / 2  # 4.91
SETTINGS = {  # the 20,000-step comparison: name -> (run, label)
    "paper": ("results/mushroom/paper-horizon",
              "the paper's set-up (buffer 4,096, no decay, BBB acting on 2 samples)"),
    "memory-16k": ("results/mushroom/memory-20k/memory-16k",
                   "memory: decay 1, buffer 16,384"),
    "memory-50k": ("results/mushroom/memory-horizon", "memory: decay 1, buffer 50,000"),
}


def at_step(run: Path | pd.DataFrame, step: int, late: int) -> pd.DataFrame:
    """Per agent and seed: the cumulative regret at ``step`` and the expected regret per
    step over the ``late`` steps before it, from a run's ``phases.csv`` (or the phases of
    runs :func:`bandits.records.reader.joined`), whose windows must meet ``step`` and
    ``step - late``.

    Raises:
        ValueError: A damaged ``phases.csv``, a run shorter than ``step``, or windows that
            do not meet them.
    """
    phases = run if isinstance(run, pd.DataFrame) else reader.read(Path(run) / "phases.csv")
    ends = set(phases["end"])
    if step not in ends or (step - late) not in ends:
        where = "the phases" if isinstance(run, pd.DataFrame) else Path(run) / "phases.csv"
        raise ValueError(f"{where}: no phase ends at step {step} and at {step - late}")
    rows = []
    for (agent, seed), g in phases.groupby(["agent", "seed"], sort=False):
        upto = g[g["end"] <= step]
        tail = upto[upto["start"] > step - late]
        rows.append({"agent": agent, "seed": seed, "regret": upto["regret"].sum(),
                     "late": tail["expected_regret"].sum() / late})
    return pd.DataFrame(rows)


def _cell(values: pd.Series, digits: int, best: bool = False, median: bool = True) -> str:
    n = len(values)
    se = values.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
    text = mean_se(values.mean(), se, digits, best)
    return text + (f" ({values.median():.{digits}f})" if median else "")


def _paired(tables: dict[str, pd.DataFrame], first: str, second: str, column: str,
            digits: int, sign: str = "") -> tuple[str, int]:
    """BBB's ``column`` in ``first`` minus ``second``, paired over the seeds both have:
    ``mean +- s.e.`` and the number of seeds."""
    a, b = (tables[n][tables[n].agent == "bbb"].set_index("seed")[column]
            for n in (first, second))
    diff = (a - b).dropna()
    se = diff.std(ddof=1) / math.sqrt(len(diff))
    return mean_se(diff.mean(), se, digits, sign=sign), len(diff)


def _lowest(means: dict[str, pd.Series], agent: str) -> str:
    """The setting whose mean for ``agent`` is lowest (the first of equals)."""
    return min(means, key=lambda name: means[name][agent])


def memory_20k(root: Path, step: int = 20_000, late: int = 6_000) -> str:
    """Each setting's cumulative regret at ``step`` (mean +- s.e. (median) over its seeds)
    and expected regret per step over the ``late`` steps before, per agent; then BBB's
    paired difference between the two memory settings (the winner rule)."""
    tables = {name: at_step(root / run, step, late) for name, (run, _) in SETTINGS.items()}
    means = {name: t.groupby("agent")["regret"].mean() for name, t in tables.items()}
    lows = {a: _lowest(means, a) for a in ORDER}
    seeds = {name: t["seed"].nunique() for name, t in tables.items()}
    head = ("| setting | seeds | " + " | ".join(LABELS[a] for a in ORDER)
            + " |\n| --- | ---: |" + " ---: |" * len(ORDER))
    lines = [head]
    for name, (_run, label) in SETTINGS.items():
        g = tables[name].groupby("agent")
        lines.append(f"| {label} | {seeds[name]} | " + " | ".join(
            _cell(g.get_group(a)["regret"], 0, lows[a] == name) for a in ORDER) + " |")
    lines.append(f"| *expected regret per step, steps {step - late + 1:,}-{step:,}* | | | | | |")
    late_means = {name: t.groupby("agent")["late"].mean() for name, t in tables.items()}
    late_lows = {a: _lowest(late_means, a) for a in ORDER}
    for name, (_run, label) in SETTINGS.items():
        g = tables[name].groupby("agent")
        lines.append(f"| {label} | {seeds[name]} | " + " | ".join(
            _cell(g.get_group(a)["late"], 3, late_lows[a] == name, median=False)
            for a in ORDER) + " |")
    paired, n = _paired(tables, "memory-16k", "memory-50k", "regret", 0)
    lines.append("")
    lines.append(f"BBB, buffer 16,384 minus buffer 50,000, paired over {n} seeds: "
                 f"**{paired}**.")
    return "\n".join(lines) + "\n"


def p_text(p: float) -> str:
    """``p = `` a p-value to three decimals, or its bound where it rounds to zero."""
    return f"p = {p:.3f}" if p >= 0.0005 or math.isnan(p) else "p < 0.001"


def paired_rows(t: pd.DataFrame, final: str = "regret", late: str = "late",
                order: tuple[str, ...] = ("bbb", "greedy", "eps1", "eps5")) -> list[str]:
    """Two rows of a Figure 6 table: BBB minus each other agent, paired seed by seed, of
    the final cumulative regret and of the late regret per step (mean +- s.e.; BBB's wins,
    ties and losses; the one-sided sign-flip p-value of "BBB is lower",
    :func:`bandits.analysis.confirm.sign_flip_p`). ``t``: one row per agent and seed."""
    rows = []
    for column, digits, what in ((final, 0, "final regret"), (late, 3, "late regret")):
        wide = t.pivot(index="seed", columns="agent", values=column)
        cells = []
        for other in order[1:]:
            d = (wide[order[0]] - wide[other]).to_numpy()
            se = d.std(ddof=1) / math.sqrt(len(d))
            cells.append(f"{mean_se(d.mean(), se, digits)} "
                         f"({(d < 0).sum()} / {(d == 0).sum()} / {(d > 0).sum()}; "
                         f"{p_text(sign_flip_p(d))})")
        rows.append(f"| BBB - agent, {what}, paired over {len(wide)} seeds (BBB's wins / "
                    f"ties / losses; one-sided p) | | " + " | ".join(cells) + " |")
    return rows


def figure6_memory(root: Path, run: str | tuple[str, ...] = "results/mushroom/memory-horizon",
                   late: int = 10_000, label: str = "learner with a memory") -> str:
    """The winner's final cumulative regret (mean +- s.e. (median)) and expected regret
    per step over the last ``late`` steps per agent, with what exploration alone costs
    the epsilon-greedy agents and their late regret as a multiple of it. ``run``: one
    run, or several on the same seeds and horizon that hold the four agents between
    them."""
    runs = (run,) if isinstance(run, str) else run
    phases = reader.joined([root / r / "phases.csv" for r in runs])
    phases_end = int(phases["end"].max())
    t = at_step(phases, phases_end, late)
    seeds = {a: frozenset(s) for a, s in t.groupby("agent")["seed"]}
    if set(seeds) != set(ORDER) or len(set(seeds.values())) != 1:
        raise TableError(f"{', '.join(runs)}: every agent of {', '.join(ORDER)} needs its "
                         "rows for the same seeds (a seed's rows are missing)")
    g = t.groupby("agent")
    low_mean = g["regret"].mean().idxmin()
    low_median = g["regret"].median().idxmin()
    low_late = g["late"].mean().idxmin()
    n = int(g.size().iloc[0])
    head = ("| Final cumulative regret, mean +- s.e. (median) | "
            + " | ".join(LABELS[a] for a in ORDER) + " |\n| --- |" + " ---: |" * len(ORDER))
    final = {a: g.get_group(a)["regret"] for a in ORDER}
    row1 = f"| {label}, {n} seeds | " + " | ".join(
        mean_se(final[a].mean(), final[a].std(ddof=1) / math.sqrt(n), 0, a == low_mean)
        + " (" + bold_if(f"{final[a].median():.0f}", a == low_median) + ")"
        for a in ORDER) + " |"
    row2 = (f"| expected regret per step, steps {phases_end - late + 1:,}-{phases_end:,} | "
            + " | ".join(_cell(g.get_group(a)["late"], 3, a == low_late, median=False)
                         for a in ORDER) + " |")
    floors = {a: EPSILON[a] * RANDOM_ACTION_COST for a in EPSILON}
    row3 = ("| exploration's own cost per step (late regret / it) | | | "
            + " | ".join(f"{floors[a]:.3f} ({g.get_group(a)['late'].mean() / floors[a]:.1f}x)"
                         for a in ("eps1", "eps5")) + " |")
    return "\n".join([head, row1, row2, row3, *paired_rows(t)]) + "\n"


PILOT = {  # the decay 0.3 pilot against decay 1, both with every interaction kept
    "decay 1": ("results/mushroom/memory-horizon", "memory: decay 1, buffer 50,000"),
    "decay 0.3": ("results/mushroom/memory-20k/decay-0.3-50k",
                  "memory: decay 0.3, buffer 50,000"),
}


def decay_pilot(root: Path, step: int = 20_000, late: int = 6_000) -> str:
    """BBB's and 1 % greedy's cumulative regret at ``step`` and expected regret per step
    over the ``late`` steps before it, at decay 1 and 0.3 on the same seeds; then BBB's
    paired difference of the late regret (the pilot's rule) and of the regret."""
    agents = ("bbb", "eps1")
    tables = {name: at_step(root / run, step, late) for name, (run, _) in PILOT.items()}
    head = ("| setting | seeds | " + " | ".join(
        f"{LABELS[a]}: {what}" for what in ("regret", "late regret per step") for a in agents)
        + " |\n| --- | ---: |" + " ---: |" * (2 * len(agents)))
    lines = [head]
    for name, (_run, label) in PILOT.items():
        t = tables[name]
        g = t[t.agent.isin(agents)].groupby("agent")
        lines.append(f"| {label} | {t['seed'].nunique()} | " + " | ".join(
            [_cell(g.get_group(a)["regret"], 0) for a in agents]
            + [_cell(g.get_group(a)["late"], 3, median=False) for a in agents]) + " |")
    lines.append("")
    for column, digits, what in (("late", 3, f"expected regret per step, steps "
                                               f"{step - late + 1:,}-{step:,}"),
                                 ("regret", 0, f"cumulative regret at step {step:,}")):
        paired, n = _paired(tables, "decay 0.3", "decay 1", column, digits, "+")
        lines.append(f"BBB's {what}, decay 0.3 minus decay 1, paired over {n} "
                     f"seeds: **{paired}**.")
        lines.append("")
    return "\n".join(lines[:-1]) + "\n"


def figure6_decay(root: Path) -> str:
    """:func:`figure6_memory` of the four agents at decay 0.3 (two runs, the same seeds)."""
    return figure6_memory(root, ("results/mushroom/memory-20k/decay-0.3-50k",
                                 "results/mushroom/memory-20k/decay-0.3-50k-greedy"),
                          label="decay 0.3, buffer 50,000")


PRESET_RUN = "results/mushroom/memory-decay-0.3"
"""The ``memory`` preset's run: Figure 6's four agents at decay 0.3 in one folder."""


def figure6_preset(root: Path) -> str:
    """:func:`figure6_memory` of the ``memory`` preset's run (decay 0.3)."""
    return figure6_memory(root, PRESET_RUN, label="learner with a memory, decay 0.3")


def decay_pilot_50k(root: Path) -> str:
    """:func:`decay_pilot` at the paper's horizon: step 50,000, the last 10,000 steps."""
    return decay_pilot(root, 50_000, 10_000)


GENERATORS: dict[str, Callable[[Path], str]] = {
    "memory-20k": memory_20k, "figure6-memory": figure6_memory, "decay-pilot": decay_pilot,
    "decay-pilot-50k": decay_pilot_50k, "figure6-decay": figure6_decay,
    "figure6-preset": figure6_preset}
