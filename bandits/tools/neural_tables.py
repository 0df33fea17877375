"""The generated tables of ``results/neural-bandits`` (:mod:`bandits.tools.doc_tables`): the
runs under the NeuralUCB and NeuralTS papers' set-up, the grid of nu and lambda on
Mushroom, and how far the exploring networks explore."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bandits.records import reader
from bandits.records.regret import ranking
from bandits.tools.table_cells import NAMES, bold_if, mean_se, next_label, read_table, se_text


def reference(*runs: str, split: int) -> Callable[[Path], str]:
    """Classification-bandit runs under the NeuralUCB and NeuralTS papers' set-up
    (``results/neural-bandits/<run>``, one or more over the same seeds, ranked together):
    each agent's cumulative regret at the horizon (wrong answers), mean and standard error
    over the seeds, its spread, the regret of the first ``split`` rounds and of the rest
    (from ``phases.csv``), the paired difference to the next agent, and the agent's wall
    time."""

    def table(root: Path) -> str:
        wheres = [root / "results/neural-bandits" / run for run in runs]
        ranked = ranking(reader.joined([w / "metrics.csv" for w in wheres]))
        phases = reader.joined([w / "phases.csv" for w in wheres])
        early = phases[phases["end"] <= split].groupby("agent")["regret"].sum()
        late = phases[phases["start"] > split].groupby("agent")["regret"].sum()
        seeds = phases.groupby("agent")["seed"].nunique()
        wall: dict[str, float] = {}
        for w in wheres:
            wall.update(reader.run_of(w).config.get("wall_seconds_per_agent", {}))
        steps = int(reader.joined([w / "summary.csv" for w in wheres])["steps"].max())
        lines = [f"| agent | regret at {steps:,} | s.e. | min - max | rounds 1-{split:,} | "
                 f"rounds {split + 1:,}-{steps:,} | next | wall (s) |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
        for i, r in ranked.iterrows():
            a = r.agent
            nxt = next_label(r["next"])
            mean = f"{r['mean']:.1f}"
            lines.append(
                f"| {NAMES.get(a, a)} | {bold_if(mean, i == 0)} | "
                f"{se_text(r['s.e.'], 1)} | {r['min']:.0f} - {r['max']:.0f} | "
                f"{early.get(a, 0) / seeds[a]:.1f} | {late.get(a, 0) / seeds[a]:.1f} | {nxt} | "
                f"{wall.get(a, float('nan')):,.0f} |")
        return "\n".join(lines) + "\n"

    return table


def widths(run: str, steps: Sequence[int]) -> Callable[[Path], str]:
    """How far NeuralUCB and NeuralTS explore in a run (its ``exploration.csv``, written by
    ``bandits.diagnose``) at the given probe steps: the spread of the best action, of the
    others, the gap of the mean predictions, and the share of draws that rank an other
    action first."""

    def table(root: Path) -> str:
        f = _exploration(root / "results/neural-bandits" / run / "exploration.csv")
        return _width_table("| agent", "| ---", [
            (NAMES.get(r.agent, r.agent), r) for _, r in f[f["step"].isin(steps)].iterrows()])

    return table


def _exploration(path: Path) -> pd.DataFrame:
    """An ``exploration.csv`` (``bandits.diagnose``'s), its numbers checked."""
    numbers = ["step", "spread_best", "spread_other", "gap", "wrong_share"]
    return read_table(path, ["agent", *numbers], numbers)


def _width_table(first: str, align: str, rows: Sequence[tuple[str, Any]]) -> str:
    """A table of ``exploration.csv`` rows (``(label, row)``), the label first."""
    lines = [f"{first} | round | spread, best arm | spread, other arms | gap of the means "
             "| draws ranking another arm first |", f"{align} | ---: | ---: | ---: | ---: | ---: |"]
    for label, r in rows:
        lines.append(f"| {label} | {int(r.step):,} | {r.spread_best:.1e} | "
                     f"{r.spread_other:.1e} | {r.gap:.3f} | {r.wrong_share:.3f} |")
    return "\n".join(lines) + "\n"


GRID = "results/neural-bandits/mushroom-grid/screen"


def _screen(root: Path, where: str = GRID) -> pd.DataFrame:
    """Every screened point of ``mushroom-grid`` (each sweep's ``sweep_summary.csv``):
    agent, lambda (from a sweep named ``...lambda-L``), the swept setting and its value,
    mean and standard error of the regret at the horizon over the seeds, in the order of
    the grid's rule (lowest mean, then smaller value, then smaller lambda)."""
    rows = []
    for summary in sorted((root / where).glob("*/sweep_summary.csv")):
        numbers = ["seeds", "cumulative_regret_mean", "cumulative_regret_std"]
        f = read_table(summary, ["agent", *numbers], numbers)
        lam = re.search(r"lambda-([0-9.]+)$", summary.parent.name)
        for _, r in f.iterrows():
            rows.append({"agent": r["agent"], "setting": f.columns[0],
                         "value": float(r[f.columns[0]]),
                         "lambda": float(lam[1]) if lam else 0.0,
                         "mean": float(r["cumulative_regret_mean"]),
                         "se": float(r["cumulative_regret_std"]) / math.sqrt(r["seeds"])})
    return pd.DataFrame(rows).sort_values(["agent", "mean", "value", "lambda"])


def grid_screen(agent: str, where: str = GRID) -> Callable[[Path], str]:
    """NeuralUCB's or NeuralTS's screen: regret at the horizon (mean +- standard error
    over the screening seeds) for each lambda (rows) and nu (columns); the chosen point
    in bold, an empty cell where the grid has no point."""

    def table(root: Path) -> str:
        f = _screen(root, where)
        f = f[f["agent"] == agent]
        best = f.iloc[0]
        nus, lams = sorted(f["value"].unique()), sorted(f["lambda"].unique(), reverse=True)
        lines = ["| lambda / nu | " + " | ".join(f"{v:g}" for v in nus) + " |",
                 "| --- |" + " ---: |" * len(nus)]
        for lam in lams:
            cells = []
            for nu in nus:
                hit = f[(f["lambda"] == lam) & (f["value"] == nu)]
                if hit.empty:
                    cells.append("")
                    continue
                r = hit.iloc[0]
                chosen = r["lambda"] == best["lambda"] and r["value"] == best["value"]
                cells.append(bold_if(mean_se(r["mean"], r["se"], 1), chosen))
            lines.append(f"| {lam:g} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    return table


def grid_baselines(root: Path) -> str:
    """The screen of the baselines (the greedy network, 1 % greedy, LinUCB): each setting's
    regret at the horizon, mean +- standard error over the screening seeds, lowest first
    per agent, the chosen one in bold (an agent screened at one point has no choice)."""
    f = _screen(root)
    f = f[~f["agent"].isin(["neuralucb", "neuralts"])]
    lines = ["| agent | setting | regret | chosen |", "| --- | --- | ---: | --- |"]
    for agent, g in f.groupby("agent", sort=False):
        for i, (_, r) in enumerate(g.iterrows()):
            lines.append(f"| {NAMES.get(agent, agent)} | {r['setting']} = {r['value']:g} | "
                         f"{bold_if(mean_se(r['mean'], r['se'], 1), i == 0)} | "
                         f"{('yes' if len(g) > 1 else 'its one point') if i == 0 else ''} |")
    return "\n".join(lines) + "\n"


def screen_widths(where: str, steps: Sequence[int]) -> Callable[[Path], str]:
    """How far the agent explores at each point of a nu screen (``<where>/*/nu=V/
    exploration.csv``, written by ``bandits.diagnose`` in each point's run), at the given
    probe steps, as :func:`widths` gives them."""

    def table(root: Path) -> str:
        files = sorted((root / where).glob("*/nu=*/exploration.csv"),
                       key=lambda f: float(f.parent.name.split("=", 1)[1]))
        rows = []
        for path in files:
            f = _exploration(path)
            rows += [(path.parent.name.split("=", 1)[1], r)
                     for _, r in f[f["step"].isin(steps)].iterrows()]
        return _width_table("| nu", "| ---:", rows)

    return table


def paired(*entries: tuple[str, str, str]) -> Callable[[Path], str]:
    """Agents of runs over the same seeds (``(label, run, agent)``, the run under
    ``results/neural-bandits``): each one's regret at the horizon, mean and standard error
    over the seeds, its spread, and its paired difference to the first entry."""

    def table(root: Path) -> str:
        runs = [root / "results/neural-bandits" / run for run in dict.fromkeys(
            run for _, run, _ in entries)]
        metrics = reader.joined([r / "metrics.csv" for r in runs], distinct=False)
        steps = int(metrics["step"].max())
        finals = []
        for _, run, agent in entries:
            m = metrics[(metrics["folder"] == str(root / "results/neural-bandits" / run))
                        & (metrics["agent"] == agent)]
            finals.append(m[m["step"] == steps].set_index("seed")["cumulative_regret"])
        lines = [f"| agent | regret at {steps:,} | s.e. | min - max | paired, against "
                 f"{entries[0][0]} |", "| --- | ---: | ---: | ---: | --- |"]
        for (label, _, _), f in zip(entries, finals):
            se = f.std() / math.sqrt(len(f))
            if f is finals[0]:
                diff = ""
            else:
                d = (f - finals[0]).dropna()
                diff = (f"{mean_se(abs(d.mean()), d.std() / math.sqrt(len(d)), 1)} "
                        f"{'higher' if d.mean() > 0 else 'lower'} ({len(d)} seeds)")
            lines.append(f"| {label} | {f.mean():.1f} | {se_text(se, 1)} | {f.min():.0f} - "
                         f"{f.max():.0f} | {diff} |")
        return "\n".join(lines) + "\n"

    return table


GENERATORS: dict[str, Callable[[Path], str]] = {
    "mushroom-reference": reference("mushroom-reference", split=2000),
    "mushroom-reference-1e-5": reference("mushroom-reference/nu-lambda-1e-5", split=2000),
    "mnist-reference": reference("mnist-reference", split=2000),
    "mushroom-grid": reference("mushroom-grid/final/neuralucb", "mushroom-grid/final/neuralts",
                               "mushroom-grid/final/baselines", split=2000),
    "mushroom-grid-neuralucb": grid_screen("neuralucb"),
    "mushroom-grid-neuralts": grid_screen("neuralts"),
    "mushroom-grid-baselines": grid_baselines,
    "mnist-widths": widths("mnist-reference/widths", (100, 1000, 2000, 5000, 10000)),
    "mnist-nu-screen": grid_screen("neuralucb", "results/neural-bandits/mnist-nu/screen"),
    "mnist-nu-widths": screen_widths("results/neural-bandits/mnist-nu/screen", (1000, 10000)),
    "mnist-nu-final": paired(("greedy", "mnist-reference", "greedy"),
                             ("NeuralUCB, nu 1e-5", "mnist-reference", "neuralucb"),
                             ("NeuralUCB, nu 0.1", "mnist-nu/final", "neuralucb"),
                             ("NeuralLinear", "mnist-reference", "neurallinear"),
                             ("LinUCB", "mnist-reference", "linucb")),
}
