"""``python -m bandits.doc_tables [--check]``: the result tables of the README and the docs,
written from the shipped result files, so that no number there can drift from its data.

A generated table sits between two marker lines in a Markdown file::

    <!-- generated: NAME -->
    | ... the table ... |
    <!-- end generated -->

and NAME is one of :data:`GENERATORS`, each a function of the repository's root that reads
the shipped files (``summary.csv``, ``diagnosis_seeds.csv``, ``table1.csv``,
``tables.md``) and returns the table. The command rewrites every marked block of
:data:`FILES`; with ``--check`` it writes nothing and exits 1, naming the blocks, when a
block differs from what its files give (CI runs it so).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from bandits.regret import ranking

ROOT = Path(__file__).resolve().parents[1]
FILES = ("README.md", "docs/index.md", "docs/bandit-results.md", "docs/agents-compared.md",
         "results/mushroom/README.md",
         "results/regression/README.md", "results/neural-bandits/README.md",
         "results/neural-bandits/mnist-reference/README.md",
         "results/neural-bandits/mushroom-grid/README.md")
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)",
                   re.S)

LABELS = {"bbb": "BBB (Thompson)", "greedy": "greedy", "eps1": "1 % greedy",
          "eps5": "5 % greedy"}
ORDER = ("bbb", "greedy", "eps1", "eps5")
# Blundell et al. (2015), Table 1: test error (%) with two hidden layers of 400 and 1200
PAPER_TABLE1 = {"sgd": ("SGD (plain MLP)", 1.83, 1.88),
                "dropout": ("Dropout (p = 0.5)", 1.51, 1.36),
                "bbb-gaussian": ("BBB, Gaussian prior", 1.82, 2.04),
                "bbb-mixture": ("BBB, scale-mixture prior", 1.36, 1.32)}
# Blundell et al. (2015), Table 2: test error (%) of the 2 x 1200 network after pruning
PAPER_TABLE2 = {"0%": 1.24, "50%": 1.24, "75%": 1.24, "95%": 1.29, "98%": 1.39}


def _labels(run: Path) -> dict[str, str]:
    """The agents' labels, BBB's with the weight samples it acted on (``config.json``)."""
    samples = json.loads((run / "config.json").read_text(encoding="utf-8"))["act_samples"]
    return {**LABELS, "bbb": f"BBB (Thompson, {samples} sample{'s' if samples > 1 else ''})"}


def _bold_if(text: str, flag: bool) -> str:
    return f"**{text}**" if flag else text


def figure6(root: Path) -> str:
    """Final cumulative regret (mean +- s.e., median) and the expected regret per step
    over the last 10,000 steps, per agent, of ``results/mushroom/paper-horizon``."""
    run = root / "results/mushroom/paper-horizon"
    seeds = pd.read_csv(run / "diagnosis_seeds.csv")
    labels = _labels(run)
    g = seeds.groupby("agent")
    final, late = g["cumulative_regret"], g["expected_regret_per_step_last"]
    n = int(g.size().iloc[0])
    low_mean, low_median, low_late = final.mean().idxmin(), final.median().idxmin(), \
        late.mean().idxmin()
    last = int(seeds["last_steps"].iloc[0])
    steps = int(seeds["steps"].iloc[0])
    head = ("| Final cumulative regret, mean +- s.e. (median) | "
            + " | ".join(labels[a] for a in ORDER) + " |\n| --- |" + " ---: |" * len(ORDER))
    row1 = f"| ours, {n} seeds | " + " | ".join(
        f"{_bold_if(f'{final.mean()[a]:.0f}', a == low_mean)} +- "
        f"{final.std()[a] / math.sqrt(n):.0f} "
        f"({_bold_if(f'{final.median()[a]:.0f}', a == low_median)})" for a in ORDER) + " |"
    row2 = (f"| expected regret per step, steps {steps - last + 1:,}-{steps:,} | " + " | ".join(
        f"{_bold_if(f'{late.mean()[a]:.3f}', a == low_late)} +- "
        f"{late.std()[a] / math.sqrt(n):.3f}" for a in ORDER) + " |")
    paper = ("| paper (Figure 6 and its text, 5 runs) | lowest, \"almost flat\" | eats nothing "
             "for about 1,000 steps, then does much better | (not described) | \"appears to "
             "over-explore\" |")
    return "\n".join([head, row1, row2, paper]) + "\n"


def quick(root: Path) -> str:
    """The default command's final cumulative regret, mean (std) over its seeds."""
    s = pd.read_csv(root / "results/mushroom/quick/summary.csv").set_index("agent")
    labels = _labels(root / "results/mushroom/quick")
    low = s["cumulative_regret_mean"].idxmin()
    head = ("| " + " | ".join(labels[a] for a in ORDER) + " |\n|" + " ---: |" * len(ORDER))
    mean, std = s["cumulative_regret_mean"], s["cumulative_regret_std"]
    row = "| " + " | ".join(
        f"{_bold_if(f'{mean[a]:.0f}', a == low)} ({std[a]:.0f})" for a in ORDER) + " |"
    return head + "\n" + row + "\n"


def quick_detail(root: Path) -> str:
    """The default command's final regret per agent: mean, std, min, max, expected."""
    s = pd.read_csv(root / "results/mushroom/quick/summary.csv")
    labels = _labels(root / "results/mushroom/quick")
    s = s.sort_values("cumulative_regret_mean", kind="stable")
    low, low_e = s["cumulative_regret_mean"].min(), s["cumulative_expected_regret_mean"].min()
    lines = ["| agent | mean | std | min | max | expected regret, mean |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for _, r in s.iterrows():
        lines.append(
            f"| {labels.get(r.agent, r.agent)} | "
            f"{_bold_if(f'{r.cumulative_regret_mean:.0f}', r.cumulative_regret_mean == low)} | "
            f"{r.cumulative_regret_std:.0f} | {r.cumulative_regret_min:.0f} | "
            f"{r.cumulative_regret_max:.0f} | "
            + _bold_if(f"{r.cumulative_expected_regret_mean:.0f}",
                       r.cumulative_expected_regret_mean == low_e) + " |")
    return "\n".join(lines) + "\n"


def _chosen(path: Path) -> pd.DataFrame:
    t = pd.read_csv(path)
    return t[t["chosen"]].set_index("method")


def table1(root: Path) -> str:
    """The row validation chooses for each method at 2 x 400 and 2 x 1200 (test error
    mean +- std over seeds), beside the paper's Table 1."""
    narrow = _chosen(root / "results/mnist/2x400/table1.csv")
    wide = _chosen(root / "results/mnist/2x1200/table1.csv")

    def cell(r, epochs_usual: int | None) -> str:
        notes = []
        if int(r.seeds) != 3:
            notes.append(f"{int(r.seeds)} seeds")
        if epochs_usual is not None and int(r.epochs) != epochs_usual:
            notes.append(f"{int(r.epochs)} epochs")
        text = f"{r.test_error_mean:.2f} +- {r.test_error_std:.2f}"
        return text + (f" ({', '.join(notes)})" if notes else "")

    def span(t: pd.DataFrame) -> str:
        lo, hi = int(t["epochs"].min()), int(t["epochs"].max())
        return f"{lo}-{hi} epochs" if lo != hi else f"{lo} epochs"

    lines = [f"| Method | 2 x 400, {span(narrow)} | paper | 2 x 1200, {span(wide)} | paper |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for method, (label, p400, p1200) in PAPER_TABLE1.items():
        lines.append(f"| {label} | {cell(narrow.loc[method], None)} | {p400} | "
                     f"{cell(wide.loc[method], 600)} | {p1200} |")
    return "\n".join(lines) + "\n"


def table2(root: Path) -> str:
    """Pruning the chosen 2 x 1200 scale-mixture network (the report's Table 2 of it, in
    ``results/mnist/2x1200/tables.md``), beside the paper's Table 2."""
    text = (root / "results/mnist/2x1200/tables.md").read_text(encoding="utf-8")
    chosen = _chosen(root / "results/mnist/2x1200/table1.csv").loc["bbb-mixture", "run"]
    section = text.split(f"## Table 2: pruning by signal-to-noise ratio ({chosen},")[1]
    rows = re.findall(r"^\| (\d+%) \| ([\d,]+) \| ([\d.]+ \+- [\d.]+) \|", section, re.M)
    rows = rows[:len(PAPER_TABLE2)]
    if [r[0] for r in rows] != list(PAPER_TABLE2):
        raise ValueError(f"tables.md: Table 2 of {chosen} does not list {list(PAPER_TABLE2)}")

    def size(n: int) -> str:
        return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.0f} k"

    errors = [float(r[2].split()[0]) for r in rows]
    best = min(errors[3:])  # the paper's point: what heavy pruning keeps
    lines = ["| Removed | " + " | ".join(r[0].replace("%", " %") for r in rows) + " |",
             "| --- |" + " ---: |" * len(rows),
             "| Weights left | " + " | ".join(size(int(r[1].replace(",", ""))) for r in rows)
             + " |",
             "| ours | " + " | ".join(
                 _bold_if(r[2], i == 3 and errors[i] == best) for i, r in enumerate(rows))
             + " |",
             "| paper | " + " | ".join(f"{v:.2f}" for v in PAPER_TABLE2.values()) + " |"]
    return "\n".join(lines) + "\n"


def regression(root: Path) -> str:
    """The toy regression's measures inside / outside the training range
    (``results/regression/regression.csv``)."""
    t = pd.read_csv(root / "results/regression/regression.csv").set_index("model")
    names = {"mlp": "MLP (point estimate)", "bbb-fixed": "BBB, noise fixed at 3",
             "bbb-learned": "BBB, noise learned", "dropout": "MC dropout, noise learned"}
    best_cov = (t["coverage_95_inside"] - 0.95).abs().idxmin()
    best_ratio = t["std_ratio_outside_to_inside"].idxmax()

    def pair(r, key: str, fmt: str) -> str:
        a, b = r[f"{key}_inside"], r[f"{key}_outside"]
        return "-" if pd.isna(a) else f"{a:{fmt}} / {b:{fmt}}"

    lines = ["| model | RMSE | held-out log-lik. per point | 95 % band covers | predictive std "
             "| std outside / inside |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for model, label in names.items():
        r = t.loc[model]
        cover = "-" if pd.isna(r.coverage_95_inside) else (
            _bold_if(f"{r.coverage_95_inside:.3f}", model == best_cov)
            + f" / {r.coverage_95_outside:.3f}")
        ratio = "-" if pd.isna(r.std_ratio_outside_to_inside) else _bold_if(
            f"{r.std_ratio_outside_to_inside:.1f}", model == best_ratio)
        lines.append(f"| {label} | {pair(r, 'rmse', '.3g')} | {pair(r, 'log_likelihood', '.2f')} "
                     f"| {cover} | {pair(r, 'predictive_std', '.3g')} | {ratio} |")
    return "\n".join(lines) + "\n"


NAMES = {"linfullpost": "LinFullPost", "bbb-lrt": "BBB, local reparameterisation",
         "bbb": "BBB", "eps1": "1 % greedy", "neurallinear": "NeuralLinear",
         "dropout": "Dropout TS (p 0.2)", "greedy": "greedy", "neuralucb": "NeuralUCB",
         "linucb": "LinUCB", "eps5": "5 % greedy", "bootstrap": "Bootstrapped NN (5 heads)",
         "neuralts": "NeuralTS", "uniform": "uniform"}


def showdown(root: Path, brief: bool = False) -> str:
    """Every agent of ``results/mushroom/showdown``: final cumulative regret over the seeds
    and the paired difference to the next agent, as the run ranks them
    (:func:`bandits.regret.ranking`)."""
    metrics = pd.read_csv(root / "results/mushroom/showdown/metrics.csv")
    table = ranking(metrics)
    uniform = table.set_index("agent").at["uniform", "mean"]
    lines = (["| agent | mean | s.e. | relative to uniform | next |",
              "| --- | ---: | ---: | ---: | --- |"] if brief else
             ["| agent | mean | s.e. | min | max | relative to uniform | next |",
              "| --- | ---: | ---: | ---: | ---: | ---: | --- |"])
    for i, r in table.iterrows():
        nxt = re.sub(r" at \d+ seeds?$", "", str(r["next"]))
        for agent, name in sorted(NAMES.items(), key=lambda kv: -len(kv[0])):
            if nxt.endswith(f" {agent}"):
                nxt = nxt[: -len(agent)] + name
                break
        rel = "1" if r.agent == "uniform" else f"{r['mean'] / uniform:.3f}"
        mean = f"{r['mean']:.0f}"
        spread = "" if brief else f" {r['min']:.0f} | {r['max']:.0f} |"
        lines.append(f"| {NAMES.get(r.agent, r.agent)} | {_bold_if(mean, i == 0)} | "
                     f"{r['s.e.']:.0f} |{spread} {_bold_if(rel, i == 0)} | {nxt} |")
    return "\n".join(lines) + "\n"


def reference(*runs: str, split: int) -> Callable[[Path], str]:
    """Classification-bandit runs under the NeuralUCB and NeuralTS papers' set-up
    (``results/neural-bandits/<run>``, one or more over the same seeds, ranked together):
    each agent's cumulative regret at the horizon (wrong answers), mean and standard error
    over the seeds, its spread, the regret of the first ``split`` rounds and of the rest
    (from ``phases.csv``), the paired difference to the next agent, and the agent's wall
    time."""

    def table(root: Path) -> str:
        wheres = [root / "results/neural-bandits" / run for run in runs]
        ranked = ranking(pd.concat([pd.read_csv(w / "metrics.csv") for w in wheres]))
        phases = pd.concat([pd.read_csv(w / "phases.csv") for w in wheres])
        early = phases[phases["end"] <= split].groupby("agent")["regret"].sum()
        late = phases[phases["start"] > split].groupby("agent")["regret"].sum()
        seeds = phases.groupby("agent")["seed"].nunique()
        wall: dict[str, float] = {}
        for w in wheres:
            record = json.loads((w / "config.json").read_text(encoding="utf-8"))
            wall.update(record.get("wall_seconds_per_agent", {}))
        steps = int(max(pd.read_csv(w / "summary.csv")["steps"].max() for w in wheres))
        lines = [f"| agent | regret at {steps:,} | s.e. | min - max | rounds 1-{split:,} | "
                 f"rounds {split + 1:,}-{steps:,} | next | wall (s) |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
        for i, r in ranked.iterrows():
            a = r.agent
            nxt = re.sub(r" at \d+ seeds?$", "", str(r["next"]))
            for agent, name in sorted(NAMES.items(), key=lambda kv: -len(kv[0])):
                if nxt.endswith(f" {agent}"):
                    nxt = nxt[: -len(agent)] + name
                    break
            mean = f"{r['mean']:.1f}"
            lines.append(
                f"| {NAMES.get(a, a)} | {_bold_if(mean, i == 0)} | "
                f"{r['s.e.']:.1f} | {r['min']:.0f} - {r['max']:.0f} | "
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
        f = pd.read_csv(root / "results/neural-bandits" / run / "exploration.csv")
        lines = ["| agent | round | spread, best arm | spread, other arms | gap of the means "
                 "| draws ranking another arm first |",
                 "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for _, r in f[f["step"].isin(steps)].iterrows():
            lines.append(f"| {NAMES.get(r.agent, r.agent)} | {int(r.step):,} | "
                         f"{r.spread_best:.1e} | {r.spread_other:.1e} | {r.gap:.3f} | "
                         f"{r.wrong_share:.3f} |")
        return "\n".join(lines) + "\n"

    return table


GRID = "results/neural-bandits/mushroom-grid/screen"


def _screen(root: Path) -> pd.DataFrame:
    """Every screened point of ``mushroom-grid`` (each sweep's ``sweep_summary.csv``):
    agent, lambda (from a sweep named ``...lambda-L``), the swept setting and its value,
    mean and standard error of the regret at the horizon over the seeds, in the order of
    the grid's rule (lowest mean, then smaller value, then smaller lambda)."""
    rows = []
    for summary in sorted((root / GRID).glob("*/sweep_summary.csv")):
        f = pd.read_csv(summary)
        lam = re.search(r"lambda-([0-9.]+)$", summary.parent.name)
        for _, r in f.iterrows():
            rows.append({"agent": r["agent"], "setting": f.columns[0],
                         "value": float(r[f.columns[0]]),
                         "lambda": float(lam[1]) if lam else 0.0,
                         "mean": float(r["cumulative_regret_mean"]),
                         "se": float(r["cumulative_regret_std"]) / math.sqrt(r["seeds"])})
    return pd.DataFrame(rows).sort_values(["agent", "mean", "value", "lambda"])


def grid_screen(agent: str) -> Callable[[Path], str]:
    """NeuralUCB's or NeuralTS's screen: regret at the horizon (mean +- standard error
    over the screening seeds) for each lambda (rows) and nu (columns); the chosen point
    in bold, an empty cell where the grid has no point."""

    def table(root: Path) -> str:
        f = _screen(root)
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
                cells.append(_bold_if(f"{r['mean']:.1f} +- {r['se']:.1f}", chosen))
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
            text = f"{r['mean']:.1f} +- {r['se']:.1f}"
            lines.append(f"| {NAMES.get(agent, agent)} | {r['setting']} = {r['value']:g} | "
                         f"{_bold_if(text, i == 0)} | "
                         f"{('yes' if len(g) > 1 else 'its one point') if i == 0 else ''} |")
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[Path], str]] = {
    "showdown": showdown, "showdown-brief": lambda root: showdown(root, brief=True),
    "regression": regression,
    "figure6": figure6, "quick": quick, "quick-detail": quick_detail, "table1": table1,
    "table2": table2,
    "mushroom-reference": reference("mushroom-reference", split=2000),
    "mushroom-reference-1e-5": reference("mushroom-reference/nu-lambda-1e-5", split=2000),
    "mnist-reference": reference("mnist-reference", split=2000),
    "mushroom-grid": reference("mushroom-grid/final/neuralucb", "mushroom-grid/final/neuralts",
                               "mushroom-grid/final/baselines", split=2000),
    "mushroom-grid-neuralucb": grid_screen("neuralucb"),
    "mushroom-grid-neuralts": grid_screen("neuralts"),
    "mushroom-grid-baselines": grid_baselines,
    "mnist-widths": widths("mnist-reference/widths", (100, 1000, 2000, 5000, 10000)),
}


def regenerate(text: str, root: Path) -> tuple[str, list[str]]:
    """``text`` with every marked block rewritten, and the names of those that changed."""
    changed: list[str] = []

    def fill(m: re.Match) -> str:
        name = m["name"]
        if name not in GENERATORS:
            raise ValueError(f"unknown generated table {name!r}; known: {', '.join(GENERATORS)}")
        body = GENERATORS[name](root)
        if body != m["body"]:
            changed.append(name)
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(fill, text), changed


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bandits.doc_tables",
                                description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when a table differs from its files")
    p.add_argument("--root", type=Path, default=ROOT, help="the repository's root")
    args = p.parse_args(argv)
    stale = []
    for name in FILES:
        path = args.root / name
        old = path.read_text(encoding="utf-8")
        new, changed = regenerate(old, args.root)
        stale += [f"{name}: {c}" for c in changed]
        if changed and not args.check:
            path.write_text(new, encoding="utf-8")
    if stale:
        verb = "differ from their files" if args.check else "rewritten"
        print(f"bandits.doc_tables: {verb}: " + "; ".join(stale),
              file=sys.stderr if args.check else sys.stdout)
        return 1 if args.check else 0
    print("bandits.doc_tables: every generated table matches its files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
