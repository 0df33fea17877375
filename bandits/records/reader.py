"""Reading a run's result files back, each checked against what its writer wrote.

A ``bandits.run`` folder holds ``phases.csv``, ``metrics.csv`` and ``summary.csv``
(:mod:`bandits.records.regret`), maybe ``probes.csv`` (what the models predicted) and
``diagnosis_seeds.csv`` (``bandits.diagnose``),
and ``config.json``, the run's record: its environment, agents, seeds and the steps it
ran (:func:`run_of`). ``bandits.confirm`` writes ``seeds.csv``. :func:`read` checks one
file against its :data:`SCHEMAS`: the columns; numbers where numbers were written,
finite, whole where they count; each key (an agent and seed's phase, step or row) once;
the agents and seeds of the run's ``config.json`` and the steps it ran, a ``phases.csv``'s
phases following one another from step 1 to there, a ``metrics.csv``'s steps the same for
every seed of an agent. :func:`joined` joins one file of
several runs into one table: runs of one environment and one step count, each agent and
seed from one of them. A file that breaks any of this is a :class:`TableError`: one line
naming the file, the line and what is wrong, never a table made of it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import envs
from bandits.records.tables import TableError

__all__ = ["SCHEMAS", "Run", "Schema", "TableError", "joined", "read", "run_of"]


@dataclasses.dataclass(frozen=True)
class Schema:
    """The columns of a result file as its writer writes them."""

    keys: tuple[str, ...]
    """Columns whose values name a row: each combination once."""
    counts: tuple[str, ...] = ()
    """Whole numbers."""
    numbers: tuple[str, ...] = ()
    """Finite numbers."""
    maybe: tuple[str, ...] = ()
    """Finite numbers or empty (a training loss of an agent that never learned)."""
    spreads: tuple[str, ...] = ()
    """Finite numbers, empty only where the row's ``seeds`` is 1 (no standard deviation)."""
    more_counts: str = ""
    """A pattern of the names of more whole-number columns (``phases.csv``'s ``a0_best1``)."""
    run: bool = True
    """Written into a run's folder, checked against its ``config.json``."""
    grid: tuple[str, ...] = ()
    """Columns whose values every seed of an agent has alike (the steps a ``metrics.csv``
    logged; a ``probes.csv``'s steps, best actions and actions: a row lost from the
    middle of the file is refused too)."""
    every_agent: bool = True
    """Every agent of the run has rows (not so in ``probes.csv``: only the agents with a
    model to probe have)."""


SCHEMAS = {
    "phases.csv": Schema(("agent", "seed", "start"), ("seed", "start", "end"),
                         ("regret", "expected_regret"), more_counts=r"a\d+_best\d+"),
    "metrics.csv": Schema(("agent", "seed", "step"), ("seed", "step", "action"),
                          ("reward", "regret", "expected_regret", "cumulative_regret",
                           "cumulative_expected_regret"), grid=("step",)),
    "summary.csv": Schema(("agent",), ("steps", "seeds"),
                          ("cumulative_regret_mean", "cumulative_regret_min",
                           "cumulative_regret_max", "cumulative_expected_regret_mean"),
                          maybe=("train_loss",),
                          spreads=("cumulative_regret_std", "cumulative_expected_regret_std")),
    "diagnosis_seeds.csv": Schema(("agent", "seed"), ("seed", "steps", "last_steps"),
                                  ("cumulative_regret", "cumulative_expected_regret",
                                   "expected_regret_per_step_last")),
    "seeds.csv": Schema(("agent", "seed"), ("seed",), ("final", "late"), run=False),
    "probes.csv": Schema(("agent", "seed", "step", "best_action", "action"),
                         ("seed", "step", "best_action", "action"),
                         ("predicted_mean", "predicted_std", "chosen_share"),
                         grid=("step", "best_action", "action"),
                         every_agent=False),
}
"""Each result file this module reads, by name, and its writer's columns."""


@dataclasses.dataclass(frozen=True)
class Run:
    """What a run's ``config.json`` records of it."""

    folder: Path
    env: str
    """The environment with its own settings: ``wheel (wheel_delta 0.5)``."""
    agents: tuple[str, ...]
    seeds: tuple[int, ...]
    steps: int
    """The steps every agent ran (``steps_completed``)."""
    most: int
    """The steps an agent may have run: ``steps``, as the parallel workers of an interrupted
    run each stop at their own step (else :attr:`steps`)."""
    config: dict = dataclasses.field(compare=False, repr=False)


def run_of(folder: Path) -> Run:
    """The record of the run in ``folder`` (its ``config.json``)."""
    folder = Path(folder)
    path = folder / "config.json"
    if not folder.is_dir():
        raise TableError(f"{folder}: no such folder; give the output folder of a bandits.run")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        agents, seeds, steps, most = _recorded(config)
        spec = envs.SPECS[config["env"]]
        own = [f.name for s in spec.settings for f in dataclasses.fields(s)]
    except FileNotFoundError:
        raise TableError(f"{folder}: no config.json, the record of a bandits.run (its "
                         "agents, seeds and steps); give the output folder of a bandits.run"
                         ) from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise TableError(f"{path}: not the record of a bandits.run ({type(e).__name__}: "
                         f"{e}); put back the config.json the run wrote") from None
    env = config["env"] + (f" ({', '.join(f'{n} {config.get(n)}' for n in own)})" if own else "")
    return Run(folder, env, agents, seeds, steps, most, config)


def _whole(config: dict, key: str, least: int) -> int:
    """The record's ``key``, a whole number of at least ``least`` (ValueError if not)."""
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{key} is {value!r}, not a whole number of at least {least}")
    return value


def _recorded(config: dict) -> tuple[tuple[str, ...], tuple[int, ...], int, int]:
    """A run record's agents, seeds, the steps every agent ran and the most an agent may
    have run (:class:`Run`), each as the run wrote it: ValueError (or KeyError, TypeError)
    where one is missing, of the wrong kind, or at odds with another."""
    agents = config["agent"]
    if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        raise TypeError(f"agent is {agents!r}, not a list of agents' names")
    count, first = _whole(config, "seeds", 1), _whole(config, "seed", 0)
    seeds = config.get("seed_list") or list(range(first, first + count))
    if (not isinstance(seeds, list) or len(seeds) != count
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
        raise ValueError(f"seed_list is {seeds!r}, not a list of the {count} seeds of seeds")
    asked = _whole(config, "steps", 1)
    steps = _whole(config, "steps_completed", 0) if "steps_completed" in config else asked
    # a run stops at its steps, and one that finished ran all of them (bandits.simulator.loop)
    if steps > asked or (config.get("finished_utc") and steps != asked):
        raise ValueError(f"steps is {asked} but steps_completed {steps}: a run that "
                         f"{'ran past' if steps > asked else 'finished short of'} its steps")
    return tuple(agents), tuple(seeds), steps, asked if config.get("parts") else steps


def read(path: Path, run: Run | None = None, by_itself: bool = False) -> pd.DataFrame:
    """The result file ``path`` (named as in :data:`SCHEMAS`), checked (see the module's
    text) against its run's record, ``run`` or its folder's ``config.json``. With
    ``by_itself``, a folder without a ``config.json`` (a run of an earlier version) is
    read all the same, checked in everything but the record's agents, seeds and steps:
    every agent and seed to one last step, a ``phases.csv``'s phases following one
    another from step 1.

    Raises:
        TableError: One line naming the file, the line and what is wrong.
    """
    path = Path(path)
    schema = SCHEMAS[path.name]
    table = _load(path)  # a file missing is said first, before its run's record
    if schema.run and run is None and not (by_itself and
                                           not (path.parent / "config.json").exists()):
        run = run_of(path.parent)
    more = [c for c in table.columns if schema.more_counts and
            re.fullmatch(schema.more_counts, str(c))]
    needed = [*schema.keys, *schema.counts, *schema.numbers, *schema.maybe, *schema.spreads]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise TableError(f"{path}: no column {missing[0]!r} (has {', '.join(table.columns)}); "
                         "is it the file its writer wrote?")
    numbers: dict[str, Any] = {}
    for c in (*schema.counts, *more, *schema.numbers, *schema.maybe, *schema.spreads):
        values = pd.to_numeric(table[c], errors="coerce")
        empty_ok = table[c].isna() if c in schema.maybe else (
            table[c].isna() & (numbers["seeds"] == 1) if c in schema.spreads else False)
        _refuse_rows(path, ~(np.isfinite(values.to_numpy(float)) | empty_ok),
                     lambda i, c=c: f"{c} is {_shown(table[c].iloc[i])}, not a finite number")
        if c in (*schema.counts, *more):
            _refuse_rows(path, values != values.round(),
                         lambda i, c=c: f"{c} is {table[c].iloc[i]!r}, not a whole number")
            values = values.astype(np.int64)
        numbers[c] = values
    numbers["agent"] = table["agent"].astype(str)
    table = pd.DataFrame({c: numbers.get(c, table[c]) for c in table.columns})
    twice = table.duplicated(list(schema.keys))
    _refuse_rows(path, twice, lambda i: f"{_named(table, schema.keys, i)} is there twice "
                 f"(line {_first(table, schema.keys, i) + 2} too)")
    if schema.grid:
        _same_grid(path, table, schema.grid)
    if run is not None:
        _as_run(path, table, run)
    elif schema.run:
        _by_itself(path, table)
    return table


def joined(files: Sequence[Path], distinct: bool = True) -> pd.DataFrame:
    """One result file of several runs (each ``files``' folder one run), each
    :func:`read`, joined into one table with a ``folder`` column: the runs of one
    environment and one step count, an agent and seed in one of them only (unless not
    ``distinct``: runs compared side by side)."""
    if not files:
        raise TableError("no run folders given")
    files = [Path(f) for f in files]
    runs = [run_of(f.parent) for f in files]
    other = next((r for r in runs if r.env != runs[0].env), None)
    if other is not None:
        raise TableError(f"{runs[0].folder} is a run on {runs[0].env}, {other.folder} one on "
                         f"{other.env}: one table joins runs of one environment")
    tables = [read(f, r).assign(folder=str(r.folder), run=k)
              for k, (f, r) in enumerate(zip(files, runs))]
    table = pd.concat(tables, ignore_index=True)
    ran = _ran(table, files[0].name)
    if ran is not None and ran.nunique() > 1:
        a, b = ran.idxmin(), ran.idxmax()
        raise TableError(f"{table['folder'][a]}: {table['agent'][a]} ran {ran[a]} steps, "
                         f"{table['folder'][b]}: {table['agent'][b]} {ran[b]}: one table "
                         "joins runs of one step count")
    keys = [k for k in ("agent", "seed") if k in table]
    where = table.groupby(keys, sort=False)["run"].unique()
    twice = where[where.map(len) > 1]
    if distinct and len(twice):
        key = twice.index[0] if len(keys) > 1 else (twice.index[0],)
        raise TableError(f"{', '.join(f'{k} {v}' for k, v in zip(keys, key))} is in two folders "
                         f"({', '.join(str(runs[k].folder) for k in twice.iloc[0])}); "
                         "give each once")
    return table.drop(columns="run")


def _load(path: Path) -> pd.DataFrame:
    try:
        table = pd.read_csv(path)
    except FileNotFoundError:
        raise TableError(f"{path}: no such file; put back the file its run wrote") from None
    except UnicodeDecodeError:
        raise TableError(f"{path}: not a CSV text file") from None
    except (OSError, ValueError) as e:  # pandas' parser errors are ValueErrors
        raise TableError(f"{path}: cannot be read ({' '.join(str(e).split())})") from None
    if table.empty:
        raise TableError(f"{path}: no rows")
    return table


def _refuse_rows(path: Path, bad: pd.Series | np.ndarray, says) -> None:
    """Raise, naming the first line ``bad`` marks and what ``says(row)`` of it."""
    bad = np.asarray(bad, dtype=bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        more = f" ({int(bad.sum()) - 1} more such lines)" if bad.sum() > 1 else ""
        raise TableError(f"{path}: line {i + 2}: {says(i)}{more}")


def _shown(value) -> str:
    if isinstance(value, str):
        return repr(value)
    return "empty" if pd.isna(value) else str(value)


def _named(table: pd.DataFrame, keys: Sequence[str], i: int) -> str:
    return ", ".join(f"{k} {table[k].iloc[i]}" for k in keys)


def _first(table: pd.DataFrame, keys: Sequence[str], i: int) -> int:
    same = (table[list(keys)] == table[list(keys)].iloc[i]).all(axis=1).to_numpy()
    return int(np.flatnonzero(same)[0])


def _ran(table: pd.DataFrame, name: str) -> pd.Series | None:
    """Per row, the steps its agent and seed ran (None for a file that does not say)."""
    if "steps" in table:
        return table["steps"]
    step = {"phases.csv": "end", "metrics.csv": "step"}.get(name)
    return table.groupby(["agent", "seed"])[step].transform("max") if step else None


def _seeds_text(seeds: Sequence[int]) -> str:
    s = sorted(seeds)
    return (f"{s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 2
            else ", ".join(map(str, s)))


def _as_run(path: Path, table: pd.DataFrame, run: Run) -> None:
    """The rows of ``table`` are those of ``run``: its agents, seeds and steps."""
    record = f"the run's config.json ({run.folder / 'config.json'})"
    _refuse_rows(path, ~table["agent"].isin(run.agents),
                 lambda i: f"agent {table['agent'].iloc[i]} is not one of the agents of "
                           f"{record}: {', '.join(run.agents)}")
    absent = [a for a in run.agents if a not in set(table["agent"])]
    if absent and SCHEMAS[path.name].every_agent:
        raise TableError(f"{path}: no rows of agent {absent[0]}, one of the agents of {record}")
    if "seed" in table:
        _refuse_rows(path, ~table["seed"].isin(run.seeds),
                     lambda i: f"seed {table['seed'].iloc[i]} is not one of the seeds of "
                               f"{record}: {_seeds_text(run.seeds)}")
        for agent, seeds in table.groupby("agent")["seed"]:
            if len(set(seeds)) != len(run.seeds):
                lost = sorted(set(run.seeds) - set(seeds))
                raise TableError(f"{path}: no rows of agent {agent}, seed {lost[0]}, one of "
                                 f"the seeds of {record}: {_seeds_text(run.seeds)}")
    if path.name == "phases.csv":
        _phases_follow(path, table)
    ran = _ran(table, path.name)
    if ran is not None:
        ran_text = (f"{run.steps}" if run.most == run.steps else
                    f"{run.steps} to {run.most} (its workers stopped each at its own step)")
        _refuse_rows(path, (ran < run.steps) | (ran > run.most),
                     lambda i: f"agent {table['agent'].iloc[i]} ran {ran.iloc[i]} steps, not "
                               f"the {ran_text} steps {record} says the run ran")
        _refuse_rows(path, ran != ran.groupby(table["agent"]).transform("max"),
                     lambda i: f"{_named(table, ('agent', 'seed'), i)} ran {ran.iloc[i]} steps, "
                               f"fewer than another seed of agent {table['agent'].iloc[i]}")
    if path.name == "summary.csv":
        _refuse_rows(path, table["seeds"] != len(run.seeds),
                     lambda i: f"seeds is {table['seeds'].iloc[i]}, not the "
                               f"{len(run.seeds)} seeds of {record}")


def _same_grid(path: Path, table: pd.DataFrame, columns: tuple[str, ...]) -> None:
    """Every seed of an agent has rows at the same values of ``columns``."""
    cells = pd.Series(list(zip(*(table[c] for c in columns))), index=table.index)
    for agent, rows in cells.groupby(table["agent"], sort=False):
        per_seed = rows.groupby(table["seed"], sort=False).agg(frozenset)
        first, seed0 = per_seed.iloc[0], per_seed.index[0]
        for seed, values in per_seed.items():
            if values != first:
                lost = min(first ^ values)
                has, lacks = (seed0, seed) if lost in first else (seed, seed0)
                at = ", ".join(f"{c} {v}" for c, v in zip(columns, lost))
                raise TableError(f"{path}: agent {agent}, seed {lacks} has no row at {at}, "
                                 f"seed {has} has one: a row lost (or added by hand)")


def _by_itself(path: Path, table: pd.DataFrame) -> None:
    """The checks of a run's file that need no record of the run (:func:`read`)."""
    if path.name == "phases.csv":
        _phases_follow(path, table)
    ran = _ran(table, path.name)
    if ran is not None:
        _refuse_rows(path, ran != ran.max(),
                     lambda i: f"{_named(table, ('agent', 'seed'), i)} ran {ran.iloc[i]} steps, "
                               f"fewer than the {ran.max()} of another")


def _phases_follow(path: Path, table: pd.DataFrame) -> None:
    """Each agent and seed's phases follow one another from step 1 on."""
    order = table.sort_values(["agent", "seed", "start"], kind="stable")
    follows = order.groupby(["agent", "seed"])["end"].shift().fillna(0).astype(np.int64) + 1
    gap = pd.Series(order["start"].to_numpy() != follows.to_numpy(), index=order.index)
    _refuse_rows(path, gap.reindex(table.index).to_numpy(),
                 lambda i: f"{_named(table, ('agent', 'seed'), i)}: a phase starts at step "
                           f"{table['start'].iloc[i]}, not at step "
                           f"{follows.loc[table.index[i]]}, the one after the phase before")
    _refuse_rows(path, table["end"] < table["start"],
                 lambda i: f"a phase ends at step {table['end'].iloc[i]}, before it starts")
