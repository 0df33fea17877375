"""Why an agent pays regret: a diagnosis of any ``bandits.run`` output directory.

    python -m bandits.diagnose DIR [--last N]

Reads ``phases.csv`` (exact per-phase counts over every step) and ``probes.csv`` (what
each reward model predicted on a fixed set of contexts as training went on), both
written by ``bandits.run``, and writes into DIR:

* ``diagnosis.csv``: per agent and phase, mean over seeds (and the standard error) of
  the expected regret per step and of the rates of each kind of mistake; on Mushroom
  the rates of eating a poisonous mushroom and of leaving an edible one;
* ``diagnosis_seeds.csv``: per agent and seed, the final cumulative regret and
  expected regret and the expected regret per step over the last ``--last`` steps;
* ``diagnosis.png`` / ``.pdf``: (a) expected regret per step against step (log axes,
  as the paper's Figure 6), (b) the mistake rates per phase, (c) from the probes, the
  spread of each model's sampled predictions and (d) the probability that a sample
  chooses a wrong action, on the probe contexts, against step;
* ``memorisation.csv`` (on Mushroom, from the run's ``memory.csv``): per agent, over the
  last ``--last`` steps, the decisions on poisonous and on edible mushrooms by what the
  run last saw that mushroom pay when it ate it (never eaten; the reward of its last
  eating, that eating still in the replay buffer or not): how many were shown, the
  share eaten, the share eaten by the agent's own choices (random exploration's share
  taken out) and the share of the agent's own mistakes that fall in each category; a
  network that memorises single outcomes makes its mistakes on the poisonous mushrooms
  last seen paying +5;
* ``exploration.csv`` (from the probes): per agent and probe step, mean over seeds and
  the probe contexts' best actions, how far each model explores against what it has
  learnt: the spread of its sampled predictions for the best action (``spread_best``)
  and for the others (``spread_other``), the gap between its mean prediction for the
  best action and the largest for another (``gap``), and the share of samples that rank
  another action first (``wrong_share``). A spread far below the gap explores nowhere:
  the model then acts as its point estimate does;
* a table on stdout: per agent, expected regret per step over the last ``--last`` steps
  (default: the last fifth of the run), mean and standard error over seeds, and on
  Mushroom the memorisation summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import envs
from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.command_line import first_paragraph
from bandits.core.config import setting
from bandits.core.files import save_figure, write_csv
from bandits.core.processes import stop_on_ctrl_c
from bandits.core.style import DPI, styled
from bandits.records import reader
from bandits.records.figures import COLORS, LABELS, run_labels
from bandits.records.memory import (
    MEMORY_COLUMNS,
    check_memory,
    memorisation,
    memorisation_summary,
    standard_error,
)
from bandits.records.tables import read_run_table


def _positive(x: pd.Series) -> pd.Series:
    """Zeros as gaps on a log axis (a point estimate has no spread; a phase without a
    mistake has no rate to draw)."""
    return x.where(x > 0)


def mistake_columns(env: str | None, phases: pd.DataFrame) -> dict[str, str]:
    """Readable names for the wrong (action, best action) cells of ``phases.csv``."""
    spec = envs.SPECS.get(env or "")
    if spec is not None and spec.mistakes:  # the env's own names for them
        return dict(spec.mistakes)
    cells = [c for c in phases.columns if c.startswith("a") and "_best" in c]
    return {c: c for c in cells if c[1:].split("_best")[0] != c.split("_best")[1]}


def phase_table(phases: pd.DataFrame, env: str | None) -> pd.DataFrame:
    """Per agent and phase: expected regret per step and mistake rates, mean and sem
    over seeds."""
    p = phases.copy()
    steps = p["end"] - p["start"] + 1
    p["expected_regret_per_step"] = p["expected_regret"] / steps
    names = mistake_columns(env, p)
    for cell, name in names.items():
        p[f"{name}_rate"] = p[cell] / steps
    value_cols = ["expected_regret_per_step", *[f"{n}_rate" for n in names.values()]]
    rows = []
    for (agent, start, end), g in p.groupby(["agent", "start", "end"], sort=False):
        row = {"agent": agent, "start": start, "end": end, "seeds": len(g)}
        for c in value_cols:
            row[c] = g[c].mean()
            row[f"{c}_sem"] = standard_error(g[c])
        rows.append(row)
    return pd.DataFrame(rows)


def last_steps(phases: pd.DataFrame, last: int) -> pd.DataFrame:
    """Expected regret per step over the last ``last`` steps, per agent: mean, sem over
    seeds (whole phases only: the window starts at a phase boundary)."""
    end = int(phases["end"].max())
    window = phases[phases["start"] > end - last]
    steps = window.groupby(["agent", "seed"], sort=False).apply(
        lambda g: (g["end"] - g["start"] + 1).sum(), include_groups=False)
    total = window.groupby(["agent", "seed"], sort=False)["expected_regret"].sum()
    per_step = (total / steps).rename("per_step").reset_index()
    first = int(window["start"].min())
    return pd.DataFrame([{"agent": a, "from_step": first, "to_step": end,
                          "expected_regret_per_step": g["per_step"].mean(),
                          "sem": standard_error(g["per_step"]), "seeds": len(g)}
                         for a, g in per_step.groupby("agent", sort=False)])


def exploration(probes: pd.DataFrame) -> pd.DataFrame:
    """Per agent and probe step, from ``probes.csv`` (its rows group the probe contexts by
    their best action): the mean over seeds and those groups of the best action's spread
    (``spread_best``), the other actions' (``spread_other``), the best action's mean
    prediction less the largest other one (``gap``) and the share of samples that rank an
    other action first (``wrong_share``)."""
    p = probes.assign(best=probes["action"] == probes["best_action"])
    keys = ["agent", "step", "seed", "best_action"]
    best = p[p["best"]].set_index(keys)
    other = p[~p["best"]].groupby(keys, sort=False)
    groups = pd.DataFrame({
        "spread_best": best["predicted_std"],
        "spread_other": other["predicted_std"].mean(),
        "gap": best["predicted_mean"] - other["predicted_mean"].max(),
        "wrong_share": 1.0 - best["chosen_share"]}).reset_index()
    return groups.groupby(["agent", "step"], sort=False)[  # the run's order of agents
        ["spread_best", "spread_other", "gap", "wrong_share"]].mean().reset_index()


def per_seed(phases: pd.DataFrame, last: int) -> pd.DataFrame:
    """Per agent and seed: the final cumulative regret and expected regret (sums over
    every phase) and the expected regret per step over the last ``last`` steps."""
    end = int(phases["end"].max())
    rows = []
    for (agent, seed), g in phases.groupby(["agent", "seed"], sort=False):
        tail = g[g["start"] > end - last]
        steps = int((tail["end"] - tail["start"] + 1).sum())
        rows.append({"agent": agent, "seed": seed, "steps": end,
                     "cumulative_regret": g["regret"].sum(),
                     "cumulative_expected_regret": g["expected_regret"].sum(),
                     "last_steps": steps,
                     "expected_regret_per_step_last": tail["expected_regret"].sum() / steps})
    return pd.DataFrame(rows)


@styled
def draw(table: pd.DataFrame, probes: pd.DataFrame | None, env: str | None, path: Path,
         title: str, labels: dict[str, str] | None = None) -> None:
    """The diagnosis figure; ``labels``: the run's own legend labels (BBB acting on the
    mean of several samples, :func:`bandits.records.figures.run_labels`)."""
    names_of = {**LABELS, **(labels or {})}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.2), constrained_layout=True)
    a, b, c, d = axes.ravel()
    _draw_phases(a, b, table, names_of)
    if probes is not None and not probes.empty:
        _draw_probes(c, d, probes, env, names_of)
    empty = (("no model with sampled predictions", "no sample ever took a wrong action")
             if probes is not None else ("no probes.csv in the run's directory",) * 2)
    for ax, what in zip((c, d), empty):
        if ax.lines:
            ax.legend(fontsize=6, frameon=False)
        else:
            ax.text(0.5, 0.5, what, transform=ax.transAxes, ha="center", va="center",
                    fontsize=8, color="0.4")
    for ax in (a, b, c, d):  # a log axis where there is something positive to put on it
        positive = any((np.asarray(line.get_ydata(), float) > 0).any() for line in ax.lines)
        ax.set_yscale("log" if positive else "linear")
    c.set(xscale="log", xlabel="step", ylabel="std of sampled predictions",
          title="(c) spread of the wrong action's predicted reward\n"
                "(mean over probed contexts and seeds)")
    d.set(xscale="log", xlabel="step", ylabel="probability",
          title="(d) chance a model sample takes the wrong action\n"
                "(mean over probed contexts and seeds)")
    for ax in axes.ravel():
        ax.grid(True, alpha=0.3, which="both")
    fig.suptitle(title, fontsize=10)
    save_figure(fig, path, dpi=DPI)
    save_figure(fig, path.with_suffix(".pdf"))
    plt.close(fig)


def _draw_phases(a, b, table: pd.DataFrame, names_of: dict[str, str]) -> None:
    """Panels (a), the regret per step, and (b), the mistakes per phase, of each agent."""
    names = [c[:-5] for c in table.columns if c.endswith("_rate")]
    styles = ["-", "--", ":", "-."]
    for agent, g in table.groupby("agent", sort=False):
        color, label = COLORS.get(agent), names_of.get(agent, agent)
        mid = (g["start"] + g["end"]) / 2
        m, s = g["expected_regret_per_step"], g["expected_regret_per_step_sem"]
        a.plot(mid, m, color=color, label=label)
        a.fill_between(mid, (m - s).clip(lower=1e-4), m + s, color=color, alpha=0.2, lw=0)
        if len(names) > len(styles):  # many arms: every kind of mistake together
            b.plot(mid, _positive(g[[f"{n}_rate" for n in names]].sum(axis=1)), color=color,
                   label=f"{label}: any wrong action")
            continue
        for k, n in enumerate(names):
            b.plot(mid, _positive(g[f"{n}_rate"]), color=color, ls=styles[k],
                   label=f"{label}: {n.replace('_', ' ')}")
    a.set(xscale="log", xlabel="step", ylabel="expected regret per step",
          title="(a) regret per step (mean over seeds, ±1 s.e.)")
    b.set(xscale="log", xlabel="step", ylabel="share of steps",
          title="(b) mistakes per phase (share of steps, mean over seeds)")
    a.legend(fontsize=7, frameon=False)
    b.legend(fontsize=6, frameon=False)


def _draw_probes(c, d, probes: pd.DataFrame, env: str | None, names_of: dict[str, str]
                 ) -> None:
    """Panels (c), the spread of the wrong actions' sampled predictions, and (d), the
    chance a sample takes one, from the probes."""
    spec = envs.SPECS.get(env or "")
    wrong = probes[probes["action"] != probes["best_action"]]
    for (agent, best), g in wrong.groupby(["agent", "best_action"], sort=False):
        g = g.groupby("step")[["predicted_std", "chosen_share"]].mean()
        what = (spec.best_actions if spec else {}).get(int(best), f"best {best}")
        ls = "-" if int(best) == 0 else "--"
        label = f"{names_of.get(agent, agent)}, {what}"
        for ax, col in ((c, "predicted_std"), (d, "chosen_share")):
            if (g[col] > 0).any():  # a point estimate has no spread: nothing to draw
                ax.plot(g.index, _positive(g[col]), color=COLORS.get(agent), ls=ls,
                        label=label)


def _optional(path: Path, without: str) -> bool:
    """Whether an optional file is absent or an empty table (nothing to read; diagnosed
    ``without`` it). A file of 0 bytes no run writes (an empty table is one line): it was
    cut."""
    if path.is_file() and path.stat().st_size == 0:
        raise ValueError(f"{path} is empty (0 bytes), which no run writes: it was cut or "
                         "emptied; copy it back from the run, or delete it to diagnose "
                         f"without {without}")
    try:
        return not path.read_bytes().strip()
    except FileNotFoundError:
        return True


def read_memory(run_dir: Path) -> pd.DataFrame | None:
    """``memory.csv`` of a run, checked whole, or None where the run did not record it (an
    earlier version, or an environment without items)."""
    path = run_dir / "memory.csv"
    if _optional(path, "the memorisation table"):
        return None
    return read_run_table(path, MEMORY_COLUMNS, numeric=["start", "end", "shown", "eaten"])


def read_probes(run_dir: Path) -> pd.DataFrame | None:
    """``probes.csv`` checked as its run wrote it (:func:`bandits.records.reader.read`: its
    agents, seeds and steps the run's), or None where no model could be probed (a run then
    writes an empty table: its one line)."""
    path = run_dir / "probes.csv"
    if _optional(path, "the probes"):
        return None
    return reader.read(path, by_itself=True)


def read_phases(run_dir: Path) -> pd.DataFrame:
    """``phases.csv`` checked as its run wrote it (:func:`bandits.records.reader.read`):
    the columns, finite numbers, whole counts, each agent, seed and phase once, the phases
    following one another from step 1, and the agents, seeds and steps of the run's
    ``config.json`` (a folder of an earlier version without one: all but those)."""
    return reader.read(run_dir / "phases.csv", by_itself=True)


def diagnose(run_dir: Path, last: int | None = None) -> tuple[pd.DataFrame, list[Path]]:
    """Write ``diagnosis.csv``, ``diagnosis_seeds.csv``, ``diagnosis.png``, (where a model
    was probed) ``exploration.csv`` and (on a Mushroom run with its ``memory.csv``)
    ``memorisation.csv`` into ``run_dir``; return the table of the last steps and the
    files written."""
    phases = read_phases(run_dir)
    probes = read_probes(run_dir)
    try:
        record = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        record = {}
    env = record.get("env") if isinstance(record, dict) else None
    end = int(phases["end"].max())
    if last is not None and last > end:
        raise ValueError(f"--last {last} is past the run's {end} steps; give at most {end}")
    last = last or max(end // 5, 1)
    # every table first, then the files: a diagnosis refused halfway writes nothing
    tables = {"diagnosis.csv": phase_table(phases, env)}
    spec = envs.SPECS.get(env or "")
    memory = read_memory(run_dir) if spec is not None and spec.memorisation else None
    if memory is not None:
        check_memory(memory, phases, run_dir / "memory.csv")
        tables["memorisation.csv"] = memorisation(memory, last)
    tables["diagnosis_seeds.csv"] = per_seed(phases, last)
    if probes is not None and not probes.empty:
        tables["exploration.csv"] = exploration(probes)
    for name, frame in tables.items():
        write_csv(frame, run_dir / name)
    written = [run_dir / name for name in tables]
    table = tables["diagnosis.csv"]
    seeds = phases["seed"].nunique()
    draw(table, probes, env, run_dir / "diagnosis.png",
         f"{env or 'bandit'}: {seeds} seeds, {end} steps",
         run_labels(record) if isinstance(record, dict) else {})
    return last_steps(phases, last), [*written, run_dir / "diagnosis.png"]


@dataclass
class Settings:
    """The settings of ``python -m bandits.diagnose``: its argument and flag."""

    dir: Path = setting(None, "a bandits.run output directory", positional=True,
                        type=Path)
    last: int | None = setting(None, "steps at the end to average the regret per step over "
                               "(default: the last fifth)", type=int)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m bandits.diagnose``; a bad flag raises
    :class:`bandits.core.config.UsageError` (one line, exit status 2)."""
    return build_settings_parser(Settings, "python -m bandits.diagnose",
                                 first_paragraph(__doc__))


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.diagnose", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = Settings(**vars(build_parser().parse_args(argv)))
    if args.last is not None and args.last < 1:
        print("bandits.diagnose: error: --last must be a positive integer", file=sys.stderr)
        return 2
    try:
        tail, written = diagnose(args.dir, args.last)
    except (ValueError, OSError) as e:
        print(f"bandits.diagnose: error: {e}", file=sys.stderr)
        return 2
    print(tail.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    for name, why in (("memorisation.csv", "this run's config.json does not say Mushroom, "
                       "or it has no memory.csv"),
                      ("exploration.csv", "this run has no probes")):
        left = args.dir / name
        if left not in written and left.exists():  # not this run's numbers any more
            print(f"bandits.diagnose: note: {left} is left from an earlier diagnosis and "
                  f"was not rewritten ({why})", file=sys.stderr)
    table_path = args.dir / "memorisation.csv"
    if table_path in written:
        table = pd.read_csv(table_path)
        print("\nPoisonous mushrooms eaten by the agent's own choices, by what it last saw "
              "them pay (shares of those shown); last column: the share of its own "
              "bites on mushrooms last seen paying the high reward:")
        print(memorisation_summary(table).to_string(index=False,
                                                    float_format=lambda v: f"{v:.4f}"))
    print(f"wrote {', '.join(map(str, written[:-1]))} and {written[-1]}")
    return 0

