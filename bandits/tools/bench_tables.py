"""The generated tables (:mod:`bandits.tools.doc_tables`) of the speed benchmarks' own
files: the A/B against an earlier commit (``bench-against``, from
``python -m bandits.bench --against REV``'s ``against.csv``) and the distance to the
floor (``bench-floor``, from ``python -m bandits.bench --floor``'s ``floor.csv``)."""

from __future__ import annotations

import json
from pathlib import Path

from bandits.tools.table_cells import TableError, read_table

AGAINST = "results/bench/against"
"""Where the shipped A/B lies: ``against.csv`` and ``against.json``."""
FLOOR = "results/bench/floor"
"""Where the shipped distance to the floor lies: ``floor.csv`` and ``floor.json``."""


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise TableError(f"{path}: cannot be read ({e})") from None


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
    wall = _json(folder / "against.json").get("wall_seconds")
    if not isinstance(wall, (int, float)):
        raise TableError(f"{folder / 'against.json'}: no wall time")
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


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def bench_floor(root: Path) -> str:
    """Per agent and run count, one update's CPU time against its own matrix products
    replayed alone at the same shapes; then the default command end to end against its
    products' FLOP at the rate measured at its seeds; the machine and the wall time."""
    folder = root / FLOOR
    numbers = ["runs", "seconds", "floor_seconds", "times_floor", "mflop", "product_gflops"]
    table = read_table(folder / "floor.csv", ["case", *numbers], numbers)
    meta = _json(folder / "floor.json")
    if not {"command", "machine", "wall_seconds"} <= set(meta):
        raise TableError(f"{folder / 'floor.json'}: wants its command, machine and wall time")
    lines = ["| case | runs | CPU time | its matrix products alone | times the floor | "
             "products' FLOP | product GFLOP/s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in table.itertuples():
        update = str(r.case).startswith("update")
        unit, scale = ("ms", 1e3) if update else ("s", 1.0)
        flop = f"{r.mflop:.1f} M" if r.mflop < 1e5 else f"{r.mflop / 1e6:.2f} T"
        lines.append(f"| {r.case} | {r.runs} | {scale * r.seconds:.2f} {unit} | "
                     f"{scale * r.floor_seconds:.2f} {unit} | {r.times_floor:.1f}x | "
                     f"{flop} | {r.product_gflops:.1f} |")
    processor = meta.get("versions", {}).get("kernels", {}).get("processor", "")
    load = meta.get("load_average")
    beside = (f", load average {load['start']:.1f} at the start and {load['end']:.1f} at the "
              "end" if isinstance(load, dict) else "")
    lines += ["", f"`{meta['command']}`: {meta['machine']}, {processor or 'processor unrecorded'}"
              f"{beside}; {_duration(meta['wall_seconds'])}."]
    return "\n".join(lines) + "\n"


GENERATORS = {"bench-against": bench_against, "bench-floor": bench_floor}
