"""The generated tables (:mod:`bandits.tools.doc_tables`) of the speed benchmarks' own
files: the A/B against an earlier commit (``bench-against``, from
``python -m bandits.bench --against REV``'s ``against.csv``)."""

from __future__ import annotations

import json
from pathlib import Path

from bandits.tools.table_cells import TableError, read_table

AGAINST = "results/bench/against"
"""Where the shipped A/B lies: ``against.csv`` and ``against.json``."""


def bench_against(root: Path) -> str:
    """Per command, each side's median wall seconds over the rounds with its ratio to the
    earlier commit's, and the exact mode's ratio to the native one."""
    folder = root / AGAINST
    table = read_table(folder / "against.csv", ["command", "side", "seconds", "each"],
                       ["seconds"])
    rounds = len(str(table["each"].iloc[0]).split())
    sides = list(dict.fromkeys(table["side"]))
    if len(sides) != 3:
        raise TableError(f"{folder / 'against.csv'}: wants three sides, has {len(sides)}")
    native, exact, old = sides
    try:
        wall = json.loads((folder / "against.json").read_text())["wall_seconds"]
    except (OSError, ValueError, KeyError) as e:
        raise TableError(f"{folder / 'against.json'}: no wall time ({e})") from None
    lines = [f"| command (median of {rounds} interleaved rounds, wall seconds) | "
             + " | ".join(sides) + " | exact / native |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for command, g in table.groupby("command", sort=False):
        t = g.set_index("side")["seconds"]
        cells = [f"{t[s]:.1f} ({t[s] / t[old]:.2f}x)" for s in (native, exact)]
        lines.append(f"| {command} | " + " | ".join(cells)
                     + f" | {t[old]:.1f} | {t[exact] / t[native]:.2f}x |")
    lines.append("")
    lines.append(f"The whole A/B took {wall / 60:.0f} minutes.")
    return "\n".join(lines) + "\n"


GENERATORS = {"bench-against": bench_against}
