"""The generated values of ``docs/speed.md``'s prose: how fast the simulator runs, from the
benchmarks' files in ``results/bench``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from bandits.tools.bench_commands import PAPER_STEPS
from bandits.tools.bench_fused import PAPER_UPDATES

BENCH = "results/bench"


def _json(root: Path, path: str) -> dict:
    return json.loads((root / path).read_text(encoding="utf-8"))


def _csv(root: Path, path: str, index: str) -> pd.DataFrame:
    return pd.read_csv(root / path).set_index(index)


def wall(seconds: float) -> str:
    """A wall time as the prose writes it: ``2 min 4 s``."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def torch_version(root: Path, path: str) -> str:
    """The torch version a benchmark's JSON records, as the prose writes it (``2.13.0``)."""
    return _json(root, path)["versions"]["torch"].removesuffix("+cpu")


def host(root: Path, path: str) -> str:
    """The processor a benchmark's JSON records, as the pages name it."""
    processor = _json(root, path)["versions"]["kernels"]["processor"]
    return next((name for key, name in (("Xeon", "Intel Xeon"), ("EPYC", "AMD EPYC"))
                 if key in processor), "x86-64 CPU")


def scaling(root: Path) -> str:
    """The paper preset's seconds per step with one worker and with two, and the paper
    protocol's hours projected from each (as ``bandits.bench --scaling`` projects them)."""
    info = f"{BENCH}/scaling.json"
    t = _csv(root, f"{BENCH}/scaling.csv", "workers")["seconds_per_step"]
    one, two = t[1], t[2]
    hours = [s * PAPER_STEPS / 3600 for s in (one, two)]
    return (f"{host(root, info)}, torch {torch_version(root, info)} CPU build, one torch "
            f"thread per worker; {wall(_json(root, info)['wall_seconds'])}):\n"
            f"**{one:.3f} s per step with one worker, {two:.3f} s with two: {one / two:.2f}x**. "
            f"The paper protocol\n({PAPER_STEPS:,} steps x {PAPER_UPDATES} updates) projects to "
            f"**{hours[0]:.1f} hours on one core and {hours[1]:.1f} hours on\nthe two cores**")


VALUES = {"speed-scaling": scaling}
