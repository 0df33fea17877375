"""The generated tables (:mod:`bandits.tools.doc_tables`) of the pre-registered
confirmations on held-out seeds: Figure 6 on Mushroom (``figure6-heldout``, from the
runs' exact per-phase records, as every other Figure 6 table) and the Wheel at each delta
(``wheel-heldout``, from the per-seed values ``python -m bandits.confirm`` wrote for each
delta, its test made again from them)."""

from __future__ import annotations

from pathlib import Path

from bandits.analysis import confirm
from bandits.records import reader
from bandits.tools import memory_tables
from bandits.tools.table_cells import TableError, mean_se

HELDOUT_RUNS = "results/mushroom/heldout/runs"
"""Mushroom's held-out blocks: one folder per run, each with its ``phases.csv``."""

WHEEL_ANALYSIS = "results/wheel/heldout/analysis"
"""The Wheel's analysis: one folder ``dD`` per delta ``D``, as ``bandits.confirm`` wrote it."""

WHEEL_AGENTS = ("bbb", "greedy", "eps1", "linfullpost", "neurallinear")
WHEEL_LABELS = {"bbb": "BBB (Thompson)", "greedy": "greedy", "eps1": "1 % greedy",
                "linfullpost": "LinFullPost", "neurallinear": "NeuralLinear"}
WHEEL_LEVEL = 0.01
"""The level of each delta's primary test (Bonferroni over five deltas: 5 % family-wise)."""


def figure6_heldout(root: Path) -> str:
    """:func:`bandits.tools.memory_tables.figure6_memory` of every held-out block joined
    agent by agent (each agent's rows are the bytes it gives alone)."""
    folder = root / HELDOUT_RUNS
    # a run's folder by its record or its phases: one without its phases.csv is refused
    # (naming it), never left out of the table
    runs = tuple(sorted(p.relative_to(root).as_posix() for p in folder.iterdir()
                        if (p / "config.json").is_file() or (p / "phases.csv").is_file())
                 ) if folder.is_dir() else ()
    if not runs:
        raise TableError(f"{folder}: no run folders with a phases.csv")
    return memory_tables.figure6_memory(
        root, runs, label="held-out seeds, each baseline at its own decay")


def wheel_heldout(root: Path) -> str:
    """Per delta, from its ``seeds.csv``: each agent's final cumulative regret (mean +-
    s.e.), then BBB minus greedy paired over the seeds (mean +- s.e.; BBB's wins, ties and
    losses; the one-sided p-value) and whether BBB is below greedy at the primary test's
    level."""
    folders = sorted((root / WHEEL_ANALYSIS).glob("d*"), key=lambda p: float(p.name[1:]))
    if not folders:
        raise TableError(f"{root / WHEEL_ANALYSIS}: no analysis folders d<delta>")
    head = ("| delta | seeds | " + " | ".join(WHEEL_LABELS[a] for a in WHEEL_AGENTS)
            + " | BBB - greedy, paired (wins / ties / losses; one-sided p) "
            f"| BBB below greedy at {WHEEL_LEVEL * 100:g} % |\n| --- | ---: |"
            + " ---: |" * (len(WHEEL_AGENTS) + 1) + " --- |")
    lines = [head]
    for folder in folders:
        seeds = reader.read(folder / "seeds.csv")
        agents = confirm.agents_table(seeds)
        final = agents[agents["measure"] == "final"].set_index("agent")
        if "bbb" not in final.index:
            raise TableError(f"{folder}: no final regret of bbb")
        paired = confirm.paired_table(seeds, "bbb")
        row = paired[(paired["measure"] == "final") & (paired["other"] == "greedy")]
        missing = [a for a in WHEEL_AGENTS if a not in final.index]
        if missing or len(row) != 1:
            raise TableError(f"{folder}: no final regret of {', '.join(missing) or 'greedy'}")
        low = final.loc[list(WHEEL_AGENTS), "mean"].idxmin()
        r = row.iloc[0]
        cells = [mean_se(final.loc[a, "mean"], final.loc[a, "se"], 0, a == low)
                 for a in WHEEL_AGENTS]
        p = float(r["p_one_sided"])
        lines.append(
            f"| {folder.name[1:]} | {int(r['seeds'])} | " + " | ".join(cells)
            + f" | {mean_se(r['mean_diff'], r['se'], 0)} ({int(r['wins'])} / {int(r['ties'])}"
            f" / {int(r['losses'])}; {memory_tables.p_text(p)}) | "
            f"{'yes' if p < WHEEL_LEVEL else 'no'} |")
    return "\n".join(lines) + "\n"


GENERATORS = {"figure6-heldout": figure6_heldout, "wheel-heldout": wheel_heldout}
