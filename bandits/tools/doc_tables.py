"""``python -m bandits.doc_tables [--check]``: the result tables of the README and the docs,
written from the shipped result files, so that no number there can drift from its data.

A generated table sits between two marker lines in a Markdown file::

    <!-- generated: NAME -->
    | ... the table ... |
    <!-- end generated -->

and NAME is one of :data:`GENERATORS`, each a function of the repository's root that reads
the shipped files (``summary.csv``, ``diagnosis_seeds.csv``, ``table1.csv``,
``tables.md``; a run's files through :mod:`bandits.records.reader`, each checked against
what its writer wrote) and returns the table. A file that is not what it should be is one
line, exit status 2, and no page is written. The command rewrites every marked block of
:data:`FILES`; with ``--check`` it writes nothing and exits 1, naming the blocks, when a
block differs from what its files give (CI runs it so).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from bandits.core.command import refused
from bandits.core.command_line import Parser
from bandits.core.version import __version__
from bandits.records import reader
from bandits.records.regret import ranking, summary_text
from bandits.tools import (
    bench_tables,
    heldout_tables,
    memory_tables,
    mnist_tables,
    neural_tables,
    page_values,
)
from bandits.tools.table_cells import (
    NAMES,
    TableError,
    bold_if,
    mean_se,
    next_label,
    read_table,
    se_text,
)
from bandits.tools.table_pages import FILES

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)",
                   re.S)

LABELS = {"bbb": "BBB (Thompson)", "greedy": "greedy", "eps1": "1 % greedy",
          "eps5": "5 % greedy"}
ORDER = ("bbb", "greedy", "eps1", "eps5")
def _labels(run: Path) -> dict[str, str]:
    """The agents' labels, BBB's saying how it acted (``config.json``'s ``act_samples``)."""
    samples = reader.run_of(run).config["act_samples"]
    # one weight sample acted on is Thompson sampling; the mean of several is not
    return {**LABELS, "bbb": "BBB (Thompson sampling)" if samples == 1 else
            f"BBB (mean of {samples} samples)"}


def figure6(root: Path) -> str:
    """Final cumulative regret (mean +- s.e., median) and the expected regret per step
    over the last 10,000 steps, per agent, of ``results/mushroom/paper-horizon``."""
    run = root / "results/mushroom/paper-horizon"
    seeds = reader.read(run / "diagnosis_seeds.csv")
    labels = _labels(run)
    g = seeds.groupby("agent")
    if g.size().nunique() != 1 or set(g.size().index) != set(ORDER):
        raise TableError(f"{run / 'diagnosis_seeds.csv'}: every agent of {', '.join(ORDER)} "
                         "needs its rows for the same seeds")
    final, late = g["cumulative_regret"], g["expected_regret_per_step_last"]
    n = int(g.size().iloc[0])
    low_mean, low_median, low_late = final.mean().idxmin(), final.median().idxmin(), \
        late.mean().idxmin()
    last = int(seeds["last_steps"].iloc[0])
    steps = int(seeds["steps"].iloc[0])
    head = ("| Final cumulative regret, mean +- s.e. (median) | "
            + " | ".join(labels[a] for a in ORDER) + " |\n| --- |" + " ---: |" * len(ORDER))
    row1 = f"| ours, {n} seeds | " + " | ".join(
        f"{mean_se(final.mean()[a], final.std()[a] / math.sqrt(n), 0, a == low_mean)} "
        f"({bold_if(f'{final.median()[a]:.0f}', a == low_median)})" for a in ORDER) + " |"
    row2 = (f"| expected regret per step, steps {steps - last + 1:,}-{steps:,} | " + " | ".join(
        mean_se(late.mean()[a], late.std()[a] / math.sqrt(n), 3, a == low_late)
        for a in ORDER) + " |")
    paper = ("| paper (Figure 6 and its text, 5 runs) | lowest, \"almost flat\" | eats nothing "
             "for about 1,000 steps, then does much better | (not described) | \"appears to "
             "over-explore\" |")
    paired = memory_tables.paired_rows(seeds, "cumulative_regret",
                                       "expected_regret_per_step_last")
    return "\n".join([head, row1, row2, *paired, paper]) + "\n"


def quick_output(root: Path) -> str:
    """What the default command printed at its end (``results/mushroom/quick``), as a
    code block."""
    _quick_summary(root)  # its summary.csv, checked
    text = summary_text(root / "results/mushroom/quick")
    if not text:
        raise TableError(f"{root / 'results/mushroom/quick'}: no run's summary there")
    return "```text\n" + text + "\n```\n"


def _quick_summary(root: Path) -> pd.DataFrame:
    return reader.read(root / "results/mushroom/quick/summary.csv")


def _quick_ranking(root: Path) -> pd.DataFrame:
    """The default command's agents ranked by final cumulative regret over its seeds, with
    the paired difference to the next (:func:`bandits.records.regret.ranking`), and each agent's
    mean expected regret from ``summary.csv``."""
    run = root / "results/mushroom/quick"
    table = ranking(reader.joined([run / "metrics.csv"]))
    expected = _quick_summary(root).set_index("agent")["cumulative_expected_regret_mean"]
    if set(table["agent"]) != set(expected.index):
        raise TableError(f"{run}: metrics.csv and summary.csv list other agents")
    return table.assign(expected=table["agent"].map(expected))


def quick(root: Path) -> str:
    """The default command's final cumulative regret, mean +- s.e. over its seeds."""
    table = _quick_ranking(root).set_index("agent")
    labels = _labels(root / "results/mushroom/quick")
    low = table["mean"].idxmin()
    head = ("| " + " | ".join(labels[a] for a in ORDER) + " |\n|" + " ---: |" * len(ORDER))
    row = "| " + " | ".join(mean_se(table.at[a, "mean"], table.at[a, "s.e."], 0, a == low)
                            for a in ORDER) + " |"
    return head + "\n" + row + "\n"


def quick_detail(root: Path) -> str:
    """The default command's agents, lowest mean final regret first: mean +- s.e. over the
    seeds, min, max, the paired difference to the next agent over the same seeds, and the
    mean expected regret."""
    table = _quick_ranking(root)
    labels = _labels(root / "results/mushroom/quick")
    low_e = table["expected"].min()
    lines = ["| agent | mean +- s.e. | min | max | paired difference to the next | "
             "expected regret, mean |", "| --- | ---: | ---: | ---: | --- | ---: |"]
    for i, r in table.iterrows():
        nxt = next_label(r["next"])
        lines.append(
            f"| {labels.get(r.agent, r.agent)} | {mean_se(r['mean'], r['s.e.'], 0, i == 0)} "
            f"| {r['min']:.0f} | {r['max']:.0f} | {nxt} | "
            + bold_if(f"{r.expected:.0f}", r.expected == low_e) + " |")
    seeds = len(reader.run_of(root / "results/mushroom/quick").seeds)
    return "\n".join(lines) + "\n\n" + _separation(table, labels, seeds) + "\n"


def _separation(table: pd.DataFrame, labels: dict[str, str], seeds: int) -> str:
    """One sentence: which neighbours in the ranking the seeds separate (a paired
    difference of more than two standard errors), written from the ranking itself."""
    count = f"{seeds} seed{'s' if seeds != 1 else ''}"
    rows = table.to_dict("records")
    pairs = [(labels.get(a["agent"], a["agent"]), labels.get(b["agent"], b["agent"]))
             for a, b in zip(rows, rows[1:]) if "lower than" in str(a["next"])]
    if not pairs:
        return f"**{count} separate no agent from the next.**"
    named = "; ".join(f"{a} from {b}" for a, b in pairs)
    rest = len(rows) - 1 - len(pairs)
    tail = f"; the other {rest} neighbours are within two standard errors" if rest else ""
    return f"**{count} separate {named}**{tail}."


def regression(root: Path) -> str:
    """The toy regression's measures inside / outside the training range
    (``results/regression/regression.csv``)."""
    numbers = ["rmse_inside", "rmse_outside"]
    t = read_table(root / "results/regression/regression.csv",
                   ["model", *numbers, "coverage_95_inside", "coverage_95_outside",
                    "std_ratio_outside_to_inside"], numbers).set_index("model")
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
            bold_if(f"{r.coverage_95_inside:.3f}", model == best_cov)
            + f" / {r.coverage_95_outside:.3f}")
        ratio = "-" if pd.isna(r.std_ratio_outside_to_inside) else bold_if(
            f"{r.std_ratio_outside_to_inside:.1f}", model == best_ratio)
        lines.append(f"| {label} | {pair(r, 'rmse', '.3g')} | {pair(r, 'log_likelihood', '.2f')} "
                     f"| {cover} | {pair(r, 'predictive_std', '.3g')} | {ratio} |")
    return "\n".join(lines) + "\n"


def showdown(root: Path, brief: bool = False) -> str:
    """Every agent of ``results/mushroom/showdown``: final cumulative regret over the seeds
    and the paired difference to the next agent, as the run ranks them
    (:func:`bandits.records.regret.ranking`)."""
    table = ranking(reader.joined([root / "results/mushroom/showdown/metrics.csv"]))
    uniform = table.set_index("agent").at["uniform", "mean"]
    lines = (["| agent | mean | s.e. | relative to uniform | next |",
              "| --- | ---: | ---: | ---: | --- |"] if brief else
             ["| agent | mean | s.e. | min | max | relative to uniform | next |",
              "| --- | ---: | ---: | ---: | ---: | ---: | --- |"])
    for i, r in table.iterrows():
        nxt = next_label(r["next"])
        rel = "1" if r.agent == "uniform" else f"{r['mean'] / uniform:.3f}"
        mean = f"{r['mean']:.0f}"
        spread = "" if brief else f" {r['min']:.0f} | {r['max']:.0f} |"
        lines.append(f"| {NAMES.get(r.agent, r.agent)} | {bold_if(mean, i == 0)} | "
                     f"{se_text(r['s.e.'], 0)} |{spread} {bold_if(rel, i == 0)} | {nxt} |")
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[Path], str]] = {
    "showdown": showdown, "showdown-brief": lambda root: showdown(root, brief=True),
    "regression": regression,
    "figure6": figure6, "quick": quick, "quick-detail": quick_detail,
    "quick-output": quick_output, **mnist_tables.GENERATORS,
    **neural_tables.GENERATORS, **memory_tables.GENERATORS,
    **heldout_tables.GENERATORS, **bench_tables.GENERATORS,
}


START = re.compile(r"<!-- generated: (?P<name>[^ ]*) -->")
END = "<!-- end generated -->"


def check_markers(text: str, name: str) -> None:
    """Every ``generated`` marker line followed by its ``end generated`` line before the
    next one, each on a line of its own.

    Raises:
        TableError: A block without its end, an end without its block, a marker not on a
            line of its own.
    """
    open_at = None
    for i, line in enumerate(text.splitlines(), 1):
        has_start, has_end = "<!-- generated" in line, "<!-- end generated" in line
        if has_start and not START.fullmatch(line.strip()) or has_end and line.strip() != END:
            raise TableError(f"{name}:{i}: a table marker is damaged: {line.strip()[:60]!r}")
        if has_start:
            if open_at is not None:
                raise TableError(f"{name}:{open_at}: a generated block has no "
                                 f"'{END}' before the next one (line {i})")
            open_at = i
        elif has_end:
            if open_at is None:
                raise TableError(f"{name}:{i}: '{END}' without a generated block above it")
            open_at = None
    if open_at is not None:
        raise TableError(f"{name}:{open_at}: a generated block has no '{END}'")


def regenerate(text: str, root: Path, name: str = "text") -> tuple[str, list[str]]:
    """``text`` with every marked block rewritten, and the names of those that changed.

    Raises:
        TableError: A damaged marker, or a file a table is written from.
        ValueError: An unknown table name.
    """
    check_markers(text, name)
    changed: list[str] = []

    def fill(m: re.Match) -> str:
        name = m["name"]
        body = page_values.written("table", name, GENERATORS, root)
        if body != m["body"]:
            changed.append(name)
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(fill, text), changed


def _rewrite(old: str, root: Path, name: str) -> tuple[str, list[str]]:
    """A page with its tables (if :data:`FILES` names it) and its values written from their
    files, and the names of those that changed."""
    found = tuple(m["name"] for m in START.finditer(old))
    if found != FILES.get(name, ()):
        raise TableError(f"its generated tables are {', '.join(found) or 'none'}, "
                         f"not {', '.join(FILES.get(name, ())) or 'none'}: restore the markers "
                         "of a table (<!-- generated: NAME --> ... <!-- end generated -->)")
    new, changed = regenerate(old, root, name) if name in FILES else (old, [])
    new, values = page_values.fill_values(new, root, name)
    return new, changed + values


def main(argv: Sequence[str] | None = None) -> int:
    # a bad flag raises UsageError: one line, exit 2, as every command says it (Command)
    p = Parser(prog="python -m bandits.doc_tables",
               description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when a table differs from its files")
    p.add_argument("--root", type=Path, default=ROOT, help="the repository's root")
    p.add_argument("--version", action="version", version=f"bbb-bandits {__version__}",
                   help="print the version and exit")
    args = p.parse_args(argv)
    stale = []
    rewritten = {}
    names = sorted({*FILES, *page_values.pages(args.root)})
    for name in names:  # every file checked before any is written
        path = args.root / name
        try:
            old = path.read_text(encoding="utf-8")
            new, changed = _rewrite(old, args.root, name)
        except (OSError, ValueError) as e:
            return refused("bandits.doc_tables", ValueError(f"{name}: {e}"))
        stale += [f"{name}: {c}" for c in changed]
        if changed:
            rewritten[path] = new
    if not args.check:
        for path, new in rewritten.items():
            path.write_text(new, encoding="utf-8")
    if stale:
        verb = "differ from their files" if args.check else "rewritten"
        print(f"bandits.doc_tables: {verb}: " + "; ".join(stale),
              file=sys.stderr if args.check else sys.stdout)
        return 1 if args.check else 0
    print("bandits.doc_tables: every generated table matches its files")
    return 0

