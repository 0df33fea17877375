"""The generated tables (:mod:`bandits.tools.doc_tables`) of the MNIST classifiers: the
row validation chose for each method (Table 1) and the pruned network (Table 2), each
beside the paper's."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from bandits.mnist.reports.tables import PAPER_TABLE1 as PAPER
from bandits.mnist.reports.tables import PAPER_TABLE2 as PAPER_PRUNED
from bandits.tools.table_cells import TableError, bold_if, mean_se, read_table

# Blundell et al. (2015), Table 1 at 400 and 1200 units and Table 2, as the MNIST report
# holds them (bandits.mnist.reports.tables): one copy of the paper's numbers
METHOD_LABELS = {"sgd": "SGD (plain MLP)", "dropout": "Dropout (p = 0.5)",
                 "bbb-gaussian": "BBB, Gaussian prior", "bbb-mixture": "BBB, scale-mixture prior"}
PAPER_TABLE1 = {m: (label, PAPER[(m, 400)], PAPER[(m, 1200)])
                for m, label in METHOD_LABELS.items()}
PAPER_TABLE2 = {f"{round(100 * removed)}%": error
                for removed, (_, error) in PAPER_PRUNED.items()}



def _chosen(path: Path) -> pd.DataFrame:
    numbers = ["seeds", "epochs", "test_error_mean", "test_error_std"]
    t = read_table(path, ["method", "run", "chosen", *numbers], numbers)
    if t["chosen"].dtype != bool:
        raise TableError(f"{path}: column 'chosen' holds other than True and False")
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
        text = mean_se(r.test_error_mean, r.test_error_std, 2)  # the std over the seeds
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
                 bold_if(r[2], i == 3 and errors[i] == best) for i, r in enumerate(rows))
             + " |",
             "| paper | " + " | ".join(f"{v:.2f}" for v in PAPER_TABLE2.values()) + " |"]
    return "\n".join(lines) + "\n"


GENERATORS = {"table1": table1, "table2": table2}
