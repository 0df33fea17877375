"""Reading a run's CSV files back, refusing damaged ones in one line.

``bandits.plot`` and ``bandits.diagnose`` draw and count from the files a run wrote
(``metrics.csv``, ``phases.csv``, ``memory.csv``, ``probes.csv``), never from the run
itself. A file cut short, edited by hand or holding NaN would otherwise be drawn as if it
were whole: an agent missing, a false drop at the end, a mean bent by a NaN.
:func:`read_run_table` checks what it can before anything is drawn: that the file is a
CSV text with the columns needed, that every named numeric column is numeric and
finite, and that the table is complete: every agent has the same seeds, every (agent,
seed) the same steps or phases, and, where the run's ``config.json`` is readable, the
agents and seeds it lists.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd


class TableError(ValueError):
    """A run's CSV file is missing, unreadable, incomplete or holds non-finite values."""


def read_run_table(path: Path, columns: Sequence[str], numeric: Sequence[str] = (),
                   grid: Sequence[str] = (), every_agent: bool = True) -> pd.DataFrame:
    """Read ``path`` and check it (see the module docstring).

    ``columns``: the columns needed; ``numeric``: those that must be finite numbers;
    ``grid``: the columns whose values every (agent, seed) must share (``step`` for
    ``metrics.csv``, ``start``, ``end`` for ``phases.csv``); ``every_agent``: every agent
    of the run's ``config.json`` must have rows (not so in ``probes.csv``: only models
    that can be probed are).

    Raises:
        TableError: one line naming the file and what is wrong with it.
    """
    path = Path(path)
    if not path.is_file():
        raise TableError(f"no {path.name} in {path.parent}: pass the output directory of a "
                         "bandits.run made by this version")
    try:
        table = pd.read_csv(path)
    except UnicodeDecodeError:
        raise TableError(f"cannot read {path}: it is not a CSV text file") from None
    except (OSError, ValueError) as e:  # pandas' parser errors are ValueErrors
        raise TableError(f"cannot read {path}: {' '.join(str(e).split())}") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise TableError(f"{path} lacks the column{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)} (has: {', '.join(map(str, table.columns))})")
    if table.empty:
        raise TableError(f"{path} has no rows (the run completed no step)")
    for c in numeric:
        values = pd.to_numeric(table[c], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise TableError(f"{path}: column {c} holds {table[c].iloc[row]!r} on line "
                             f"{row + 2} ({int(bad.sum())} such value"
                             f"{'s' if bad.sum() > 1 else ''}); every value must be a finite "
                             "number")
        table[c] = values
    _check_complete(path, table, grid, every_agent)
    return table


def header(path: Path) -> list[str]:
    """The column names of a CSV file; empty where it cannot be read (then
    :func:`read_run_table` says why)."""
    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except (OSError, ValueError):
        return []


def _check_complete(path: Path, table: pd.DataFrame, grid: Sequence[str],
                    every_agent: bool) -> None:
    """Every agent has the same seeds (and, with ``every_agent``, every agent and seed of
    the run's ``config.json`` is there), and every (agent, seed) the same ``grid`` values."""
    if "agent" not in table.columns or "seed" not in table.columns:
        return
    seeds = table.groupby("agent", sort=False)["seed"].unique()
    if every_agent:
        _check_against_config(path, seeds)
    first = sorted(seeds.iloc[0].tolist())
    for a, s in seeds.items():
        if sorted(s.tolist()) != first:
            raise TableError(f"{path} is incomplete: agent {a} has seeds {sorted(s.tolist())}, "
                             f"agent {seeds.index[0]} has {first} (a file cut short?)")
    if grid:
        _check_same_grid(path, table, grid)


def _check_against_config(path: Path, seeds: pd.Series) -> None:
    """Every agent of the run's ``config.json`` has rows, with its seeds (``seeds``: each
    agent's); nothing to check against where it is unreadable."""
    expected = _expected(path.parent)
    if expected is None:
        return
    agents, seed_list = expected
    absent = [a for a in agents if a not in seeds.index]
    if absent:
        raise TableError(f"{path} is incomplete: agent {absent[0]} of the run's "
                         "config.json has no rows (a file cut short?)")
    for a, s in seeds.items():
        if seed_list is not None and sorted(s) != sorted(seed_list):
            raise TableError(f"{path} is incomplete: agent {a} has seeds "
                             f"{sorted(s.tolist())}, the run's config.json lists "
                             f"{sorted(seed_list)} (a file cut short?)")


def _check_same_grid(path: Path, table: pd.DataFrame, grid: Sequence[str]) -> None:
    """Every (agent, seed) has as many rows as the first, at the same ``grid`` values."""
    keys = table.groupby(["agent", "seed"], sort=False)[list(grid)]
    reference = None
    for (a, s), g in keys:
        cells = (len(g), sorted(map(tuple, g.drop_duplicates().to_numpy().tolist())))
        if reference is None:
            reference, where = cells, (a, s)
        elif cells != reference:
            raise TableError(f"{path} is incomplete: agent {a}, seed {s} has {cells[0]} rows "
                             f"at {len(cells[1])} {'/'.join(grid)} values where agent "
                             f"{where[0]}, seed {where[1]} has {reference[0]} rows at "
                             f"{len(reference[1])} (a file cut short?)")


def _expected(run_dir: Path) -> tuple[list[str], list[int] | None] | None:
    """The agents and seeds a run's ``config.json`` lists, or None where unreadable."""
    try:
        config = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or not isinstance(config.get("agent"), list):
        return None
    seeds = config.get("seed_list")
    return list(config["agent"]), (list(seeds) if isinstance(seeds, list) else None)
