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
* a table on stdout: per agent, expected regret per step over the last ``--last`` steps
  (default: the last fifth of the run), mean and standard error over seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bandits.outputs import save_figure, write_csv
from bandits.plot import COLORS, LABELS


def _sem(x: pd.Series) -> float:
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def _positive(x: pd.Series) -> pd.Series:
    """Zeros as gaps on a log axis (a point estimate has no spread; a phase without a
    mistake has no rate to draw)."""
    return x.where(x > 0)


def mistake_columns(env: str | None, phases: pd.DataFrame) -> dict[str, str]:
    """Readable names for the wrong (action, best action) cells of ``phases.csv``."""
    if env == "mushroom":
        return {"a1_best0": "ate_poisonous", "a0_best1": "left_edible"}
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
            row[f"{c}_sem"] = _sem(g[c])
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
                          "sem": _sem(g["per_step"]), "seeds": len(g)}
                         for a, g in per_step.groupby("agent", sort=False)])


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


def draw(table: pd.DataFrame, probes: pd.DataFrame | None, env: str | None, path: Path,
         title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [c[:-5] for c in table.columns if c.endswith("_rate")]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.2), constrained_layout=True)
    a, b, c, d = axes.ravel()
    styles = ["-", "--", ":", "-."]
    for agent, g in table.groupby("agent", sort=False):
        color, label = COLORS.get(agent), LABELS.get(agent, agent)
        mid = (g["start"] + g["end"]) / 2
        m, s = g["expected_regret_per_step"], g["expected_regret_per_step_sem"]
        a.plot(mid, m, color=color, label=label)
        a.fill_between(mid, (m - s).clip(lower=1e-4), m + s, color=color, alpha=0.2, lw=0)
        for k, n in enumerate(names[:4]):
            b.plot(mid, _positive(g[f"{n}_rate"]), color=color, ls=styles[k],
                   label=f"{label}: {n.replace('_', ' ')}")
    a.set(xscale="log", yscale="log", xlabel="step", ylabel="expected regret per step",
          title="(a) regret per step (mean over seeds, ±1 s.e.)")
    b.set(xscale="log", yscale="log", xlabel="step", ylabel="share of steps",
          title="(b) mistakes per phase")
    a.legend(fontsize=7, frameon=False)
    b.legend(fontsize=6, frameon=False)
    if probes is not None and not probes.empty:
        wrong = probes[probes["action"] != probes["best_action"]]
        for (agent, best), g in wrong.groupby(["agent", "best_action"], sort=False):
            g = g.groupby("step")[["predicted_std", "chosen_share"]].mean()
            color = COLORS.get(agent)
            what = ({0: "poisonous", 1: "edible"}.get(int(best), f"best {best}")
                    if env == "mushroom" else f"best {best}")
            ls = "-" if int(best) == 0 else "--"
            c.plot(g.index, _positive(g["predicted_std"]), color=color, ls=ls,
                   label=f"{LABELS.get(agent, agent)}, {what}")
            d.plot(g.index, _positive(g["chosen_share"]), color=color, ls=ls,
                   label=f"{LABELS.get(agent, agent)}, {what}")
        c.legend(fontsize=6, frameon=False)
    c.set(xscale="log", yscale="log", xlabel="step", ylabel="std of sampled predictions",
          title="(c) spread of the wrong action's predicted reward")
    d.set(xscale="log", yscale="log", xlabel="step", ylabel="probability",
          title="(d) chance a model sample takes the wrong action")
    for ax in axes.ravel():
        ax.grid(True, alpha=0.3, which="both")
    fig.suptitle(title, fontsize=10)
    save_figure(fig, path, dpi=150)
    save_figure(fig, path.with_suffix(".pdf"))
    plt.close(fig)


def diagnose(run_dir: Path, last: int | None = None) -> pd.DataFrame:
    """Write ``diagnosis.csv`` and ``diagnosis.png`` into ``run_dir``; return the table of
    the last steps."""
    try:
        phases = pd.read_csv(run_dir / "phases.csv")
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise ValueError(f"cannot read {run_dir / 'phases.csv'} ({e}); pass the output "
                         "directory of a bandits.run made by this version") from None
    try:
        probes = pd.read_csv(run_dir / "probes.csv")
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
        probes = None
    try:
        env = json.loads((run_dir / "config.json").read_text()).get("env")
    except (OSError, ValueError):
        env = None
    end = int(phases["end"].max())
    last = last or max(end // 5, 1)
    table = phase_table(phases, env)
    write_csv(table, run_dir / "diagnosis.csv")
    write_csv(per_seed(phases, last), run_dir / "diagnosis_seeds.csv")
    seeds = phases["seed"].nunique()
    draw(table, probes, env, run_dir / "diagnosis.png",
         f"{env or 'bandit'}: {seeds} seeds, {end} steps")
    return last_steps(phases, last)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bandits.diagnose",
                                description=__doc__.split("\n")[0])
    p.add_argument("dir", type=Path, help="a bandits.run output directory")
    p.add_argument("--last", type=int, default=None,
                   help="steps at the end to average the regret per step over "
                        "(default: the last fifth)")
    args = p.parse_args(argv)
    if args.last is not None and args.last < 1:
        print("bandits.diagnose: error: --last must be a positive integer", file=sys.stderr)
        return 2
    try:
        tail = diagnose(args.dir, args.last)
    except (ValueError, OSError) as e:
        print(f"bandits.diagnose: error: {e}", file=sys.stderr)
        return 2
    print(tail.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"wrote {args.dir / 'diagnosis.csv'}, {args.dir / 'diagnosis_seeds.csv'} and "
          f"{args.dir / 'diagnosis.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
