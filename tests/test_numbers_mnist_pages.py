"""Numbers that the MNIST pages (docs/mnist.md, docs/mnist-2x400.md, docs/mnist-2x1200.md)
quote in their prose and in their hand-written tables, checked against the shipped files
they come from (as tests/test_quoted_numbers.py does for the README and docs/index.md): each
experiment's report (``tables.md``, which ``python -m bandits.mnist report`` builds from its
``models.jsonl``; tests/test_mnist_report.py checks that it still does), the lines of
``models.jsonl`` themselves where the prose speaks of some of a row's seeds or of the time a
command took, ``speed.json``, the Adam probes, and the paper's numbers
(``bandits.mnist.reports.tables``). A rerun that changes a file without the page fails here.

A hand-written table is checked row by row (:data:`TABLES`): the numbers of a row's result
cells, in order, must be those of one row of the report (as the page rounds them), so a
row copied from ``tables.md`` is checked whole, and a changed report fails its row. The
prose is checked by :data:`QUOTES` (snippets built from the files), and every other number
of the prose (:func:`prose`: list items' indented paragraphs and tables included) must be a
setting or a citation declared in :data:`SETTINGS`."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import page_numbers
import pandas as pd
from page_numbers import REPO, cell_numbers, flat, prose, row_cells, rows_of, snippets, uncovered
from test_quoted_numbers import QUOTES as FRONT

from bandits.mnist.evaluation.markdown import fmt
from bandits.mnist.models.config import Config
from bandits.mnist.models.priors import kl_factor_at
from bandits.mnist.reports.gather import read_models
from bandits.mnist.reports.rows import models_table, paired_difference, rows_table
from bandits.mnist.reports.tables import PAPER_TABLE1, PAPER_TABLE2

MNIST, NARROW, WIDE = "docs/mnist.md", "docs/mnist-2x400.md", "docs/mnist-2x1200.md"
PAGES = (MNIST, NARROW, WIDE)
N, W, LENET = "results/mnist/2x400", "results/mnist/2x1200", "results/mnist/lenet5"
PROBE = "results/mnist/adam-probe"
GRID = "results/mnist/grid-2x400-20-epochs"

# the report's tables, by the start of their section's title
TABLE1, PRUNING, COST = "Table 1:", "Pruning, every BBB row", "What the complexity cost"
CHOSEN_PAIR = "Scale mixture against Gaussian, seed by seed"
SAME_TRAINING = "Scale mixture against Gaussian under the same training"

# the rows of the 2 x 400 report the page names most often
GAUSSIAN_2 = ("adam-blundell-samples-2/gaussian + "
              "adam-blundell-samples-2/gaussian-seeds-3-5")  # the chosen Gaussian
LRT = "lrt-60/mixture/kl_factor=0.03 + lrt-60/mixture-seeds-3-5"  # tempered, noise per image
MC300 = {p: f"mc-300/ramp/prior={p} + mc-300/ramp-seeds-3-5/prior={p}"
         for p in ("mixture", "gaussian")}
# and of the 2 x 1200 report
RAMP40 = {"mixture": "mc-40/ramp + mc-40/ramp-seeds-3-5",
          "gaussian": "mc-40/gaussian-ramp + mc-40/gaussian-ramp-seeds-3-5"}
TEMPERED40 = {p: f"tempered-40/prior={p} + tempered-40-seeds-3-5/prior={p}"
              for p in ("mixture", "gaussian")}
MC600 = {p: f"mc-600/ramp/prior={p}" for p in ("mixture", "gaussian")}
FIRST, LATER = (0, 1, 2), (3, 4, 5)  # a row's first seeds, and those a follow-up added


# ---------------------------------------------------------------- the shipped files


def _report_text(exp: str) -> str:
    return (REPO / exp / "tables.md").read_text(encoding="utf-8")


@lru_cache
def _tables(exp: str) -> dict[str, list[dict[str, str]]]:
    """The pipe tables of a report's ``tables.md``, by the title of their section: each row
    a dict of its cells by column (bold marks dropped)."""
    out: dict[str, list[dict[str, str]]] = {}
    title, header = "", None
    for line in _report_text(exp).splitlines():
        if line.startswith("## "):
            title, header = line[3:], None
        elif not line.startswith("|"):
            header = None
        elif header is None:
            header = row_cells(line)
            out[title] = []
        elif not set(line) <= set("|-: "):
            out[title].append(dict(zip(header, (c.replace("**", "") for c in row_cells(line)))))
    return out


def _row(exp: str, title: str, run: str) -> dict[str, str]:
    """The row of ``run`` (its Run, or its Mixture row) in the report's table ``title``."""
    found = [row for t, rows in _tables(exp).items() if t.startswith(title) for row in rows
             if run in (row.get("Run"), row.get("Mixture row"))]
    assert len(found) == 1, f"{exp}/tables.md: {len(found)} rows of {run} in {title!r}"
    return found[0]


def _mean(cell: str) -> str:
    """The mean of a ``mean +- std`` cell."""
    return cell.split(" +- ")[0]


def _val(exp: str, run: str) -> str:
    return _mean(_row(exp, TABLE1, run)["Validation"])


def _test(exp: str, run: str) -> str:
    return _mean(_row(exp, TABLE1, run)["Test error"])


def _pruned(exp: str, run: str, pct: int) -> str:
    return _mean(_row(exp, PRUNING, run)[f"{pct}% removed"])


def _cost(exp: str, run: str) -> tuple[float, float, str, float]:
    """A BBB row's cost after the first and the last epoch (millions of nats), their ratio
    (as the report writes it) and the last epoch's training NLL."""
    row = _row(exp, COST, run)
    return (float(row["Cost, epoch 1"].replace(",", "")) / 1e6,
            float(row["Cost, last epoch"].replace(",", "")) / 1e6, row["Last / first"],
            float(row["Training NLL, last epoch"]))


def _pair(exp: str, run: str) -> dict[str, str]:
    """The seed-by-seed comparison of the two priors under the training of ``run``."""
    return _row(exp, SAME_TRAINING, run)


@lru_cache
def _report_rows(exp: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    records = read_models(REPO / exp)
    return rows_table(models_table(records), records)


def _models(exp: str, run: str, seeds: tuple[int, ...] | None = None) -> pd.DataFrame:
    """The models of one row of the report (``models.jsonl``), or of some of its seeds."""
    rows, models = _report_rows(exp)
    r = rows.index[rows["name"] == run]
    assert len(r) == 1, f"{exp}: no row {run}"
    m = models[models["row"] == r[0]]
    return m if seeds is None else m[m["seed"].isin(seeds)]


def _row_settings(exp: str, run: str) -> dict:
    """The settings of a row's models (all alike but the seed)."""
    rows, _ = _report_rows(exp)
    return rows.loc[rows["name"] == run, "settings"].iloc[0]


def _pruned_mean(m: pd.DataFrame, pct: float) -> float:
    """The mean test error of models ``m`` with ``pct`` % of their weights removed."""
    return float(np.mean([next(p["test_error_mean"] for p in ps if p["removed_pct"] == pct)
                          for ps in m["pruning"]]))


def _pruning_cost(m: pd.DataFrame, pct: float) -> float:
    return _pruned_mean(m, pct) - _pruned_mean(m, 0)


@lru_cache
def _commands(exp: str) -> dict[str, dict[str, float | None]]:
    """Per command (by the directory it wrote, relative to the experiment), from its lines
    of ``models.jsonl``, in minutes: ``wall`` (the wall time ``tables.md`` gives: one
    process, the sum of its batches; in several, the longest batch; None where its
    batches outnumbered its processes), ``total`` (every batch's time, training and
    evaluation), ``training`` (the batches' own training time); and in seconds ``epoch``
    (a training epoch per model) and ``batch_epoch`` (per batch)."""
    by: dict[str, list[dict]] = {}
    for r in read_models(REPO / exp):
        by.setdefault(r["command"], []).append(r)
    out: dict[str, dict[str, float | None]] = {}
    for mine in by.values():
        batches: dict[float, float] = {}
        for m in mine:
            batches[m["batch_wall_seconds"]] = batches.get(m["batch_wall_seconds"], 0.0) + \
                m["wall_seconds"]
        workers = min(int(mine[0]["workers"]), len(batches))
        total = sum(batches.values()) / 60
        wall = (total if workers <= 1 else
                max(batches.values()) / 60 if len(batches) <= workers else None)
        where = mine[0]["settings"]["out"].removeprefix(exp + "/")
        assert where not in out, where
        out[where] = {"wall": wall, "total": total, "training": sum(batches) / 60,
                      "epoch": mine[0]["seconds_per_epoch"],
                      "batch_epoch": mine[0]["seconds_per_epoch"] * mine[0]["batched_models"]}
    return out


def _wall(exp: str, where: str) -> str:
    return f"{_commands(exp)[where]['wall']:.1f}"


def _walls(exp: str, run: str) -> list[str]:
    """The wall time of each command that trained a row, in the order of its name."""
    m = _models(exp, run)
    return [_wall(exp, d) for d in sorted(set(m["run_dir"]))]


def _times(exp: str, dirs: tuple[str, ...], what: str) -> list[float]:
    """``what`` of every command under the directories ``dirs`` (a command's own
    directory, or the folder holding it)."""
    values = [c[what] for where, c in _commands(exp).items()
              if where in dirs or where.split("/")[0] in dirs]
    assert values, dirs
    return values


def _span(values: list[float], digits: int) -> str:
    """The range of ``values`` as the prose writes it: ``11.5-20.5`` (one value if both
    ends round alike)."""
    lo, hi = (f"{v:.{digits}f}" for v in (min(values), max(values)))
    return lo if lo == hi else f"{lo}-{hi}"


def _alike(*texts: str) -> str:
    """One text the prose gives for several numbers: they must all be written the same."""
    assert len(set(texts)) == 1, texts
    return texts[0]


def _sig(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits, written out: ``0.00027``."""
    return f"{x:.{max(0, digits - 1 - math.floor(math.log10(abs(x))))}f}"


def _softplus(rho: float) -> float:
    return math.log1p(math.exp(rho))


def _setting(exp: str, run: str, name: str):
    values = set(_models(exp, run)[f"settings.{name}"])
    assert len(values) == 1, (run, name, values)
    return values.pop()


def _machine(exp: str, device: str) -> str:
    """The machine the report's commands of one device ran on (all the same)."""
    machines = {r["machine"] for r in read_models(REPO / exp) if r["device"] == device}
    assert len(machines) == 1, machines
    return machines.pop()


def _paper(kind: str, width: int) -> str:
    return f"{PAPER_TABLE1[(kind, width)]:.2f}"


def _paper2(fraction: float) -> float:
    return PAPER_TABLE2[fraction][1]


def _probe(where: str, setting: str, epoch: int, column: str) -> float:
    t = pd.read_csv(REPO / PROBE / where / "adam_probe.csv")
    row = t[(t["setting"] == setting) & (t["epoch"] == epoch)]
    assert len(row) == 1, (where, setting, epoch)
    return float(row[column].iloc[0])


def _probe_minutes(where: str) -> str:
    seconds = json.loads((REPO / PROBE / where / "adam_probe.json").read_text())["wall_seconds"]
    return f"{seconds / 60:.1f}"


# ---------------------------------------------------------------- the hand-written tables


@dataclass(frozen=True)
class Group:
    """Some columns of a hand-written table that copy one row of a report: ``source``
    gives every candidate row, as the numbers of each of those columns."""

    columns: tuple[int, ...]
    source: Callable[[], list[list[list[str]]]]
    optional: frozenset[int] = frozenset()  # columns a row may leave empty


@dataclass(frozen=True)
class HandTable:
    """Every hand-written table of ``page`` whose first line is ``header``: each of its
    rows must match, group by group, one candidate row of the group's source (a group
    whose cells are all empty is not read)."""

    page: str
    header: str
    groups: tuple[Group, ...] = field(default_factory=tuple)


def _same(doc: str, src: str) -> bool:
    """Whether the page's number ``doc`` is the file's ``src`` as the page rounds it (to
    no more digits than the file gives)."""
    digits = len(doc.split(".")[1]) if "." in doc else 0
    src_digits = len(src.split(".")[1]) if "." in src else 0
    a, b = float(doc.replace(",", "")), float(src.replace(",", ""))
    return digits <= src_digits and abs(a - b) <= 0.5 * 10 ** -digits + 1e-9


def _matches(cells: list[list[str]], candidate: list[list[str]], optional: list[bool]) -> bool:
    return all((not doc and opt) or (len(doc) == len(src) and all(map(_same, doc, src)))
               for doc, src, opt in zip(cells, candidate, optional, strict=True))


def _table_errors(spec: HandTable, text: str) -> tuple[int, list[str]]:
    """How many rows of the page's tables ``spec`` checked, and the rows that match no
    row of their files."""
    rows, errors = rows_of(text, spec.header), []
    for _, line in rows:
        cells = row_cells(line)
        for g in spec.groups:
            doc = [cell_numbers(cells[c]) for c in g.columns]
            if not any(doc):
                continue
            optional = [c in g.optional for c in g.columns]
            if not any(_matches(doc, cand, optional) for cand in g.source()):
                errors.append(f"{line.strip()} (columns {g.columns}: {doc})")
    return len(rows), errors


def _blank_checked_cells(spec: HandTable, text: str) -> str:
    """``text`` with the cells ``spec`` checks emptied (their numbers are covered)."""
    lines = text.splitlines()
    checked = {c for g in spec.groups for c in g.columns}
    for k, line in rows_of(text, spec.header):
        cells = row_cells(line)
        indent = line[:len(line) - len(line.lstrip())]
        lines[k] = indent + "| " + " | ".join("" if i in checked else c
                                             for i, c in enumerate(cells)) + " |"
    return "\n".join(lines)


def _table1_source(exp: str, columns: tuple[str, ...]):
    return lambda: [[cell_numbers(row[c]) for c in columns] for row in _tables(exp)[
        next(t for t in _tables(exp) if t.startswith(TABLE1))]]


def _pruning_source(exp: str, pcts: tuple[int, ...]):
    def rows():
        table = next(rows for t, rows in _tables(exp).items() if t.startswith(PRUNING))
        return [[cell_numbers(row[f"{p}% removed"]) for p in pcts] for row in table]
    return rows


def _cost_source(exp: str):
    def rows():
        table = next(rows for t, rows in _tables(exp).items() if t.startswith(COST))
        out = []
        for row in table:
            first, last, ratio, nll = _cost(exp, row["Run"])
            out.append([[f"{first:.6f}", f"{last:.6f}", ratio], [f"{nll:.4f}"]])
        return out
    return rows


def _table2_source(exp: str):
    """The rows of a Table 2 as the 2 x 1200 page writes it: the weights left (in millions
    or thousands), every BBB row's pruned test errors, and the paper's."""
    pcts = (0, 50, 75, 95, 98)

    def rows():
        table2 = next(rows for t, rows in _tables(exp).items() if t.startswith("Table 2"))
        left = [float(r["# weights (ours)"].replace(",", "")) for r in table2]
        weights = [[f"{w / 1e6:.4f}" if w >= 1e6 else f"{w / 1e3:.3f}"] for w in left]
        paper = [[f"{_paper2(p / 100):.2f}"] for p in pcts]
        return [weights, paper, *_pruning_source(exp, pcts)()]
    return rows


def _wide_source(epochs: str, columns: tuple[str, ...]):
    """The 2 x 1200 page's own Table 1 rows, of the ``epochs``-epoch rows: ``columns`` of
    the report's Table 1, the test error of the row validation chose instead where that
    is another (its epochs, test error), 95 % pruning (the last epoch's test error before
    and after), the paper's, and the wall time of each command of the row."""
    def rows():
        table = next(rows for t, rows in _tables(W).items() if t.startswith(TABLE1))
        out = []
        for row in table:
            if row["Epochs"] != epochs:
                continue
            kind, run = row["Method"].removesuffix(" (chosen)"), row["Run"]
            cells = [cell_numbers(row[c]) for c in columns]
            if epochs == "600":
                chosen = next(r for r in table if r["Method"] == f"{kind} (chosen)")
                if chosen is not row:
                    cells[1] += [chosen["Epochs"], *cell_numbers(chosen["Test error"])]
                cells.append(cell_numbers(row["Last epoch"]))
            prune = [_pruned(W, run, 0), _pruned(W, run, 95)] if kind.startswith("bbb") else []
            out.append([*cells, prune, cell_numbers(row["Paper"]), _walls(W, run)])
        return out
    return rows


TABLES = [
    HandTable(NARROW, "| Method | Training | Validation | Test | Paper |",
              (Group((2, 3, 4), _table1_source(N, ("Validation", "Test error", "Paper")),
                     frozenset({4})),)),
    HandTable(NARROW, "| Training | Gaussian: cost first -> last | NLL | "
                      "Scale mixture: cost first -> last | NLL |",
              (Group((1, 2), _cost_source(N)), Group((3, 4), _cost_source(N)))),
    HandTable(NARROW, "| Model | 0 % | 75 % | 95 % | 98 % |",
              (Group((1, 2, 3, 4), _pruning_source(N, (0, 75, 95, 98))),)),
    HandTable(WIDE, "| Method | Validation | Test, best-validation epoch | Test, last epoch | "
                    "95 % pruning (last epoch) | Paper | Wall time (H200) |",
              (Group((1, 2, 3, 4, 5, 6), _wide_source("600", ("Validation", "Test error")),
                     frozenset({6})),)),
    HandTable(WIDE, "| Training (Adam, uniform 1/M) | Seeds | Mixture lower on | "
                    "Test difference | 95 % interval | Validation difference |",
              (Group((1, 2, 3, 4, 5), lambda: [
                  [cell_numbers(row[c]) for c in ("Seeds", "Mixture lower on", "Difference: mean",
                                                  "95 % interval", "Validation difference")]
                  for row in _tables(W)[next(t for t in _tables(W)
                                             if t.startswith(SAME_TRAINING))]]),)),
    HandTable(WIDE, "| Removed | 0 % | 50 % | 75 % | 95 % | 98 % |",
              (Group((1, 2, 3, 4, 5), _table2_source(W)),)),
    HandTable(WIDE, "| Method | Validation | Test | 95 % pruning | Paper (600 epochs) | "
                    "Wall time |",
              (Group((1, 2, 3, 4, 5), _wide_source("40", ("Validation", "Test error")),
                     frozenset({4, 5})),)),
]


test_every_row_of_a_hand_written_table_is_a_row_of_its_report = page_numbers.table_test(
    TABLES, _table_errors, "match no row of their report")


def test_a_changed_number_fails_its_row():
    """The table check can fail: a number moved on the page, or in the report, breaks
    the row's match (the whole row must be one row of the report)."""
    spec = TABLES[0]
    text = (REPO / spec.page).read_text(encoding="utf-8")
    _, line = rows_of(text, spec.header)[0]
    cells = row_cells(line)

    def with_cell(i: int, new: str) -> str:
        return text.replace(line, "| " + " | ".join(cells[:i] + [new] + cells[i + 1:]) + " |")

    mean, std = cell_numbers(cells[2])
    moved = with_cell(2, f"{float(mean) + 0.01:.2f} +- {std}")
    assert _table_errors(spec, moved)[1], "a changed validation error went unnoticed"
    # the numbers of two report rows do not make a row
    other = _tables(N)[next(t for t in _tables(N) if t.startswith(TABLE1))][-1]["Test error"]
    assert cell_numbers(other) != cell_numbers(cells[3])
    assert _table_errors(spec, with_cell(3, other))[1], \
        "a row mixed from two report rows went unnoticed"


def test_a_changed_report_fails_the_rows_that_copy_it(monkeypatch):
    original = _report_text(N)
    line = next(x for x in original.splitlines() if x.startswith("| sgd (chosen) |"))
    cells = row_cells(line)
    val = cell_numbers(cells[6])[0]
    changed = line.replace(cells[6], cells[6].replace(val, f"{float(val) + 0.01:.2f}", 1))
    monkeypatch.setattr(sys.modules[__name__], "_report_text",
                        lambda exp: original.replace(line, changed) if exp == N
                        else (REPO / exp / "tables.md").read_text(encoding="utf-8"))
    _tables.cache_clear()
    try:
        text = (REPO / NARROW).read_text(encoding="utf-8")
        assert _table_errors(TABLES[0], text)[1], "a changed report went unnoticed"
    finally:
        _tables.cache_clear()


# ---------------------------------------------------------------- the prose


def _lenet() -> str:
    """The LeNet-5 paragraph: the BBB model chosen on validation (the lowest validation
    error), then the other estimators and the plain network, each at its chosen epoch."""
    names = {"flipout": "Flipout", "reparam": "plain reparameterisation",
             "lrt": "the local reparameterisation trick"}
    val = {r: float(_models(LENET, r)["best_validation.val_error_mean"].mean()) for r in names}
    chosen = min(val, key=val.__getitem__)
    test = {r: _test(LENET, r) for r in [*names, "sgd"]}
    modes = {k for r in [*names, "sgd"] for k in _models(LENET, r)["kernels.mode"]}
    assert modes == {"exact"}, modes  # "exact mode"
    others = "".join(f"{names[r]} {test[r]} %, " for r in names if r != chosen)
    return (f"With {names[chosen]}, a Gaussian prior and the uniform KL weighting it reaches "
            f"**{test[chosen]} %** test error (model chosen on validation, one seed, 20 "
            f"epochs, {_wall(LENET, chosen)} min on one CPU core, exact mode); "
            f"{others[0].upper()}{others[1:]}the plain LeNet-5 {test['sgd']} %")


def _lenet_noise() -> str:
    noise = {r: float(np.mean(_models(LENET, r)["ood.entropy_noise"]))
             for r in ("flipout", "reparam", "lrt", "sgd")}
    return (f"(mean entropy on noise {_span([noise[r] for r in ('flipout', 'reparam', 'lrt')], 1)}"
            f" nats against {noise['sgd']:.2f})")


def _seeds_per_row() -> str:
    """The 2 x 400 report's rows: 3 seeds each, 6 for some BBB rows."""
    rows, _ = _report_rows(N)
    assert set(rows["seeds"]) == {3, 6}
    six = int((rows["seeds"] == 6).sum())
    assert rows.loc[rows["seeds"] == 6, "kind"].str.startswith("bbb").all()
    return f"3 seeds per row (6 for {('no', 'one', 'two', 'three', 'four', 'five')[six]} BBB rows)"


def _mnist_page() -> list[str]:
    rho = _setting(N, "sgd-uniform/mixture", "init_rho")
    return [f"(default softplus({rho:g}) = {_softplus(rho):.4f})", _lenet(), _lenet_noise(),
            _seeds_per_row()]


# 2 x 400: which commands the page's sums of time take (by directory): the first rerun of
# Tables 1 and 2 (one sample per step), and the rows added to it (their seeds 0-2).
FIRST_RERUN = ("sgd", "dropout", "adam-blundell", "adam-uniform", "bbb-sgd",
               "bbb-sgd-lr-screen")
ADDED = ("adam-uniform-120", "sgd-uniform", "sgd-uniform-200", "sgd-uniform-600",
         "adam-blundell-samples-2/gaussian", "adam-blundell-samples-2/mixture",
         "adam-blundell-samples-5")
ONE_SAMPLE_BBB = ("adam-blundell", "adam-uniform", "bbb-sgd")  # of the first rerun, 60 epochs
LRT_COMMANDS = ("lrt-60",)
MINIBATCHES = json.loads((REPO / "results/mnist/speed.json").read_text())["batches_per_epoch"]
BETA2 = 0.999  # Adam's default, which the benchmark keeps


def _hours(dirs: tuple[str, ...]) -> str:
    return f"{sum(_times(N, dirs, 'total')) / 60:.1f}"


def _narrow_times() -> list[str]:
    torch_build = re.search(r"torch \S+ CPU build", _machine(N, "cpu")).group(0)
    return [
        _seeds_per_row(),
        f"CPU, {torch_build},",
        f"{_span(_times(N, ONE_SAMPLE_BBB, 'training'), 1)} min of training per BBB command "
        f"of 3 seeds with one sample per step",
        f"{_span(_times(N, ('adam-blundell-samples-2',), 'total'), 0)} min with two samples, "
        f"{_span(_times(N, ('adam-blundell-samples-5',), 'total'), 0)} min with five, "
        f"{_span(_times(N, ('sgd-uniform-200',), 'total'), 0)} min for 200 epochs of plain SGD "
        f"and {_span(_times(N, ('sgd-uniform-600',), 'total'), 0)} min for 600; "
        f"{_hours(FIRST_RERUN)} hours of CPU time for the first rerun",
        f"{_hours(FIRST_RERUN + ADDED)} hours with the 120-epoch",
        f"(`--estimator lrt`) {_wall(N, 'lrt-60/mixture')} and {_wall(N, 'lrt-60/factor-0.1')} "
        f"min per command of two settings side by side, {_wall(N, 'lrt-60/gaussian-0.03')} min "
        f"for one ({_span(_times(N, LRT_COMMANDS, 'epoch'), 0)} s per epoch and model: "
        f"autograd, against {_span(_times(N, ONE_SAMPLE_BBB, 'epoch'), 0)} s for the fused "
        "one-sample step)",
        f"both priors side by side) {_wall(N, 'mc-300/ramp')} min for seeds 0-2 and "
        f"{_wall(N, 'mc-300/ramp-seeds-3-5')} min for seeds 3-5",
    ]


def _m(m: pd.Series, digits: int = 2) -> str:
    return f"{float(np.mean(m)):.{digits}f}"


def _first(run: str, column: str = "test") -> str:
    """A 2 x 400 row's mean over its first three seeds (the page's state before its
    follow-up seeds)."""
    return _m(_models(N, run, FIRST)[column])


def _millions(run: str) -> str:
    first, last, _, _ = _cost(N, run)
    return f"{first:.2f} M -> {last:.2f} M"


def _nll_value(exp: str, run: str) -> float:
    """A BBB row's training NLL at the last epoch, mean over its models."""
    return float(np.mean(_models(exp, run)["last_epoch.nll"]))


def _nll(run: str, digits: int) -> str:
    return f"{_nll_value(N, run):.{digits}f}"


def _loses(exp: str, run: str, pct: int, digits: int = 2) -> str:
    return f"{_pruning_cost(_models(exp, run), pct):.{digits}f}"


def _e12() -> float:
    return math.exp(2 * _setting(N, "bbb-sgd/mixture", "neg_log_sigma2"))


def _v_t(run: str, sep: str = " / ") -> str:
    return f"{_val(N, run)}{sep}{_test(N, run)}"


def _narrow_optimisers() -> list[str]:
    lr = _setting(N, "bbb-sgd/mixture", "lr")
    assert lr == 1e-3  # the page writes it so
    screen = {p: "/".join(f"{_m(_models(N, f'bbb-sgd-lr-screen/{p}-{rate}')['val'], 1)}"
                          for rate in ("1e-3", "1e-4", "1e-5")) for p in ("mixture", "gaussian")}
    gain = lr * 0.5 * _e12()  # half of an epoch's cost falls on the first minibatch
    u = {p: f"sgd-uniform/{p}" for p in ("mixture", "gaussian")}
    u200 = {p: f"sgd-uniform-200/{p}" for p in ("mixture", "gaussian")}
    u600 = {p: f"sgd-uniform-600/{p}" for p in ("mixture", "gaussian")}
    return [
        f"a handful of the {MINIBATCHES} minibatches of an epoch",
        f"(NLL {_span([_nll_value(N, f'adam-blundell/{p}') for p in ('gaussian', 'mixture')], 4)})",
        f"(NLL {_span([_nll_value(N, f'adam-uniform/{p}-0') for p in ('gaussian', 'mixture')], 2)})"
        " and their test error is "
        + _span([float(np.mean(_models(N, f"adam-uniform/{p}-0")["test"]))
                 - float(np.mean(_models(N, f"adam-blundell/{p}")["test"]))
                 for p in ("gaussian", "mixture")], 2) + " points higher",
        f"it loses {_loses(N, 'adam-uniform/mixture-0', 95)} points (Table 2 below)",
        f"{screen['mixture']} % validation error for the scale mixture, {screen['gaussian']} % "
        "for the Gaussian",
        f"(ratio {_cost(N, 'bbb-sgd/gaussian')[2]}-{_cost(N, 'bbb-sgd/mixture')[2]})",
        f"sigma stays at its start ({_softplus(_setting(N, 'bbb-sgd/mixture', 'init_rho')):.4f})",
        f"1/sigma2^2 = e^{2 * _setting(N, 'bbb-sgd/mixture', 'neg_log_sigma2'):g} = "
        f"{round(_e12(), -3):,.0f}",
        f"gain 1e-3 x 0.5 x {round(_e12(), -3):,.0f} = {gain:.0f}",
        f"the cost rises ({_millions('bbb-sgd/mixture')}), the test error is "
        f"{_test(N, 'bbb-sgd/mixture')} %, and pruning half of the weights costs "
        f"{_loses(N, 'bbb-sgd/mixture', 50, 0)} points",
        f"puts 1/{MINIBATCHES} of the cost on each minibatch: the same gain is "
        f"{lr * _e12() / MINIBATCHES:.2f}",
        f"({_millions(u['mixture'])} nats)",
        f"costs nothing ({_alike(_pruned(N, u['mixture'], 0), _pruned(N, u['mixture'], 75))} % "
        f"before and after; the Gaussian under the same training: {_pruned(N, u['gaussian'], 0)}"
        f" -> {_pruned(N, u['gaussian'], 75)} %)",
        f"the training NLL is {_nll(u['mixture'], 3)} after 60 epochs (Gaussian "
        f"{_nll(u['gaussian'], 4)}) and the test error {_test(N, u['mixture'])} %, against the "
        f"Gaussian's {_test(N, u['gaussian'])} %",
        f"its cost does not move ({_cost(N, u['gaussian'])[2]})",
        f"SGD** ({_span(_times(N, ('sgd-uniform-200',), 'total'), 0)} min per command)",
        f"(training NLL {_nll(u200['mixture'], 4)} for the scale mixture, "
        f"{_nll(u200['gaussian'], 4)} for the Gaussian)",
        f"({_cost(N, u['mixture'])[1]:.2f} M -> {_cost(N, u200['mixture'])[1]:.2f} M nats): the "
        f"mixture's test error falls from {_test(N, u['mixture'])} to {_test(N, u200['mixture'])}"
        f" %, the Gaussian's from {_test(N, u['gaussian'])} to {_test(N, u200['gaussian'])} %",
        f"{_alike(*(_pruned(N, u200['mixture'], p) for p in (0, 50, 75)))} % with none, half or "
        f"three quarters of its weights removed, {_pruned(N, u200['mixture'], 95)} % with 95 % "
        f"removed (the Gaussian: {_pruned(N, u200['gaussian'], 0)}, "
        f"{_pruned(N, u200['gaussian'], 75)} at 75 %, {_pruned(N, u200['gaussian'], 95)} at "
        "95 %)",
        f"Figure 2; {_span(_times(N, ('sgd-uniform-600',), 'total'), 0)} min per command)",
        f"the scale mixture's validation error is {_val(N, u600['mixture'])} % (test "
        f"{_test(N, u600['mixture'])} %, no better than at 200 epochs), the Gaussian's "
        f"{_val(N, u600['gaussian'])} % (test {_test(N, u600['gaussian'])} %)",
        f"({_cost(N, u600['mixture'])[2]} of its start) and its training NLL with it "
        f"({_nll(u600['mixture'], 4)}): it prunes better (95 % removed: "
        f"{_pruned(N, u600['mixture'], 0)} -> {_pruned(N, u600['mixture'], 95)} %, "
        f"+{_loses(N, u600['mixture'], 95)} points; 98 %: "
        f"{_pruned_mean(_models(N, u600['mixture']), 98):.1f} %), while the Gaussian loses "
        f"{_loses(N, u600['gaussian'], 95, 1)} points at 95 %",
        f"({_first(GAUSSIAN_2, 'val')} % Gaussian, {_val(N, 'adam-blundell/mixture')} % mixture)",
    ]


def _narrow_longer_and_samples() -> list[str]:
    a = {p: f"adam-uniform/{p}-0" for p in ("gaussian", "mixture")}
    a120 = {p: f"adam-uniform-120/{p}-0" for p in ("gaussian", "mixture")}
    b = {p: f"adam-blundell/{p}" for p in ("gaussian", "mixture")}
    b5 = {p: f"adam-blundell-samples-5/{p}" for p in ("gaussian", "mixture")}
    blundell = [float(np.mean(_models(N, r)["test"])) for r in _report_rows(N)[0]["name"]
                if _row_settings(N, r).get("kl_weighting") == "blundell"
                and _row_settings(N, r)["model"] == "bbb"]
    assert min(blundell) == float(np.mean(_models(N, b5["gaussian"])["test"])), \
        "not the lowest test error of a row with Blundell's weights"
    ratios = [_cost(N, r)[2] for r in (b["gaussian"], GAUSSIAN_2, b5["gaussian"])]
    return [
        f"120 epochs, {_span(_times(N, ('adam-uniform-120',), 'training'), 1)} min of "
        "training per command",
        f"(Gaussian {_cost(N, a['gaussian'])[1]:.2f} M -> {_cost(N, a120['gaussian'])[1]:.2f} M "
        f"nats, scale mixture {_cost(N, a['mixture'])[1]:.2f} M -> "
        f"{_cost(N, a120['mixture'])[1]:.2f} M), the training NLL rises "
        f"({_nll(a['gaussian'], 3)} -> {_nll(a120['gaussian'], 3)}, {_nll(a['mixture'], 3)} -> "
        f"{_nll(a120['mixture'], 3)}) and the test error with it ({_test(N, a['gaussian'])} -> "
        f"{_test(N, a120['gaussian'])}, {_test(N, a['mixture'])} -> {_test(N, a120['mixture'])})",
        f"posterior of {_models(N, a['gaussian'])['n_weights'].iloc[0] // 1000}k weights",
        f"2 samples lower the Gaussian's validation error from {_val(N, b['gaussian'])} to "
        f"{_first(GAUSSIAN_2, 'val')} % (test {_test(N, b['gaussian'])} -> {_first(GAUSSIAN_2)} %)",
        f"({_val(N, b['mixture'])} -> {_val(N, 'adam-blundell-samples-2/mixture')} %, test "
        f"{_test(N, b['mixture'])} -> {_test(N, 'adam-blundell-samples-2/mixture')} %)",
        f"5 samples ({_span(_times(N, ('adam-blundell-samples-5',), 'total'), 0)} min per "
        f"command) are chosen for neither prior: the Gaussian's validation error is "
        f"{_val(N, b5['gaussian'])} % (its test error, {_test(N, b5['gaussian'])} %",
        f"the mixture's {_val(N, b5['mixture'])} % (test {_test(N, b5['mixture'])} %)",
        f"(Gaussian {_alike(*ratios)} with 1, 2 or 5; mixture {_cost(N, b['mixture'])[2]}, "
        f"{_cost(N, 'adam-blundell-samples-2/mixture')[2]}, {_cost(N, b5['mixture'])[2]})",
    ]


def _narrow_probe() -> list[str]:
    def scale(where, setting):
        return (_probe(where, setting, 5, "adam_scale_q50"),
                _probe(where, setting, 5, "data_grad_rms"))

    blundell_m = scale("mc", "prior=mixture__kl_weighting=blundell")
    blundell_g = scale("mc", "prior=gaussian__kl_weighting=blundell")
    uniform_mc = scale("mc", "prior=mixture__kl_weighting=uniform")
    uniform_kl = scale("kl", "prior=mixture__kl_weighting=uniform")
    return [
        f"about {1 / (1 - BETA2):,.0f} steps",
        f"the median step scale sqrt(v) of the mixture's means is {_sig(blundell_m[0])} against "
        f"the data term's own root-mean-square gradient of {_sig(blundell_m[1])}",
        f"the Gaussian's ratio is {_sig(blundell_g[0])} to {_sig(blundell_g[1], 1)}. With uniform "
        f"weights and the Monte Carlo cost the ratio is {_sig(uniform_mc[0])} to "
        f"{_sig(uniform_mc[1], 1)}",
        f"it falls to {_sig(uniform_kl[0])} to {_sig(uniform_kl[1])}",
    ]


def _narrow_priors() -> list[str]:
    screen = "elbo-prior-screen"
    g = f"{screen}/baseline/prior=gaussian"
    pi = {k: f"{screen}/pi-sigma2/pi={k}__neg_log_sigma2=6" for k in ("0.25", "0.75")}
    r8 = {f: f"init-rho-8-screen/factor-{f}/prior=" for f in ("1", "0.1")}
    tempered = {p: [f"tempered-screen/factor-{f}/prior={p}" for f in ("0.3", "0.1", "0.03")]
                for p in ("gaussian", "mixture")}
    return [
        f"{_span(_times(N, (f'{screen}/baseline', f'{screen}/sigma1-1'), 'wall'), 1)} min per "
        f"command of two settings, {_commands(N)[f'{screen}/pi-sigma2']['total']:.1f} min of "
        "batch time for the four of pi-sigma2",
        f"Gaussian {_v_t(g)}; scale mixture with sigma2 e^-6 and pi 1/4, 1/2, 3/4: "
        f"{_v_t(pi['0.25'])}, {_v_t(f'{screen}/baseline/prior=mixture')}, {_v_t(pi['0.75'])}; "
        f"sigma1 e^-1: {_v_t(f'{screen}/sigma1-1/neg_log_sigma2=6')}",
        f"sigma {_sig(_softplus(_setting(N, r8['1'] + 'gaussian', 'init_rho')))};",
        f"helps the Gaussian ({_v_t(r8['1'] + 'gaussian')}) and not the mixture (sigma2 e^-6: "
        f"{_v_t(r8['1'] + 'mixture__neg_log_sigma2=6')}; e^-8: "
        f"{_v_t(r8['1'] + 'mixture__neg_log_sigma2=8')}); at x0.1 the same: "
        f"{_v_t(r8['0.1'] + 'gaussian')} against {_v_t(r8['0.1'] + 'mixture__neg_log_sigma2=6')} "
        f"and {_v_t(r8['0.1'] + 'mixture__neg_log_sigma2=8')}",
        f"{_span(_times(N, ('tempered-screen',), 'wall'), 1)} min per factor for both priors): "
        f"the Gaussian {' / '.join(_val(N, r) for r in tempered['gaussian'])} % validation, the "
        f"mixture {' / '.join(_val(N, r) for r in tempered['mixture'])} %",
    ]


def _narrow_tempered() -> list[str]:
    t60 = {"mixture": "tempered-60/mixture-0.03", "gaussian": "tempered-60/gaussian-0.1"}
    t60s = {"mixture": "tempered-60-samples-2/mixture-0.03",
            "gaussian": "tempered-60-samples-2/gaussian-0.1"}
    mix = _models(N, t60["mixture"])
    return [
        f"{_wall(N, t60['gaussian'])} and {_wall(N, t60['mixture'])} min side by side), the "
        f"mixture (x0.03) reaches **{_val(N, t60['mixture'])} % validation and "
        f"{_test(N, t60['mixture'])} % test**",
        f"(x0.1: {_val(N, t60['gaussian'])} % validation, {_test(N, t60['gaussian'])} % test;",
        f"(Blundell's weights, 2 samples: {_first(GAUSSIAN_2, 'val')} % validation, "
        f"{_first(GAUSSIAN_2)} % test)",
        f"costs the mixture {_pruning_cost(mix, 95):.1f} points ({_pruned(N, t60['mixture'], 0)} "
        f"-> {_pruned(N, t60['mixture'], 95)} %; the Gaussian at x0.1: "
        f"{_pruned(N, t60['gaussian'], 0)} -> {_pruned(N, t60['gaussian'], 95)} %), against "
        f"{_loses(N, 'adam-uniform/mixture-0', 95)} points under the full ELBO",
        f"{_wall(N, t60s['gaussian'])} and {_wall(N, t60s['mixture'])} min side by side) the "
        f"Gaussian gains and the mixture does not: Gaussian {_val(N, t60s['gaussian'])} % "
        f"validation, {_test(N, t60s['gaussian'])} % test; mixture {_val(N, t60s['mixture'])} %, "
        f"{_test(N, t60s['mixture'])} %",
    ]


def _narrow_lrt() -> list[str]:
    t60 = "tempered-60/mixture-0.03"
    elbo = {"lrt": "lrt-60/mixture/kl_factor=1", "fused": "adam-uniform-kl/mixture"}
    first = _models(N, LRT, FIRST)
    x01 = {p: f"lrt-60/factor-0.1/prior={p}" for p in ("mixture", "gaussian")}
    g03 = "lrt-60/gaussian-0.03"
    return [
        f"(table above: mixture x0.03 {_cost(N, t60)[2]} -> {_cost(N, LRT)[2]} of its start, NLL "
        f"{_nll(t60, 4)} -> {_nll(LRT, 4)}; the ELBO {_cost(N, elbo['fused'])[2]} -> "
        f"{_cost(N, elbo['lrt'])[2]}, NLL {_nll(elbo['fused'], 3)} -> {_nll(elbo['lrt'], 3)}; 2 "
        f"samples per step sit in between, {_cost(N, 'tempered-60-samples-2/mixture-0.03')[2]})",
        f"reaches **{_m(first['val'])} % validation and {_m(first['test'])} % test** (from "
        f"{_v_t(t60)})",
        f"(95 % removed: {_pruned_mean(first, 0):.2f} -> {_pruned_mean(first, 95):.2f} %, against "
        f"{_pruned(N, t60, 0)} -> {_pruned(N, t60, 95)} % with one weight sample per",
        f"At x0.1 the mixture is at {_v_t(x01['mixture'])} and loses "
        f"{_loses(N, x01['mixture'], 95)} points at 95 %; at x0.01 at "
        f"{_v_t('lrt-60/mixture-0.01')} (not chosen: validation decides) and loses "
        f"{_loses(N, 'lrt-60/mixture-0.01', 95, 1)} points; the Gaussian at x0.1 is where it was "
        f"({_v_t(x01['gaussian'])}, from {_v_t('tempered-60/gaussian-0.1')})",
        f"{_wall(N, g03)} min alone) it gains as the mixture did: **{_val(N, g03)} % validation, "
        f"{_test(N, g03)} % test**, with 95 % pruning costing {_loses(N, g03, 95, 1)} points "
        f"({_pruned(N, g03, 0)} -> {_pruned(N, g03, 95)} %)",
        f"{_val(N, elbo['lrt'])} / {_test(N, elbo['lrt'])} % (from {_v_t(elbo['fused'])}), and "
        f"95 % pruning costs {_loses(N, elbo['lrt'], 95)} points",
    ]


def _narrow_schedules() -> list[str]:
    r = {c: f"ramp-40/{c}" for c in ("mc", "kl")}
    s2 = {k: f"tempered-60-sigma2/neg_log_sigma2={k}" for k in (7, 8)}
    t60 = "tempered-60/mixture-0.03"
    return [
        f"{_wall(N, r['mc'])} and {_wall(N, r['kl'])} min side by side)",
        f"with the paper's Monte Carlo cost, {_val(N, r['mc'])} % validation, {_test(N, r['mc'])} "
        f"% test, and 95 % pruning costs {_loses(N, r['mc'], 95)} points "
        f"({_pruned(N, r['mc'], 0)} -> {_pruned(N, r['mc'], 95)} %); with the closed form, "
        f"{_v_t(r['kl'])} % and 95 % pruning costs {_loses(N, r['kl'], 95, 0)} points "
        f"({_pruned(N, r['kl'], 0)} -> {_pruned_mean(_models(N, r['kl']), 95):.1f} %)",
        f"{_wall(N, 'tempered-60-sigma2')} min for both",
        f"sigma2 = e^-7 gives {_val(N, s2[7])} % validation and {_test(N, s2[7])} % test, e^-8 "
        f"{_val(N, s2[8])} and {_test(N, s2[8])} %, against {_val(N, t60)} and {_test(N, t60)}"
        f" % with the default e^-6. Neither prunes better (95 % removed: "
        f"{_pruned_mean(_models(N, s2[7]), 95):.1f} and "
        f"{_pruned_mean(_models(N, s2[8]), 95):.1f} % against "
        f"{_pruned_mean(_models(N, t60), 95):.1f} %)",
    ]


def _narrow_verdict() -> list[str]:
    pair = paired_difference(_models(N, LRT), _models(N, GAUSSIAN_2))
    assert pair["mean"] > 0  # the page: the mixture "higher"
    g03 = "lrt-60/gaussian-0.03"
    behind = float(np.mean(_models(N, g03)["val"])) - float(np.mean(_models(N, GAUSSIAN_2)["val"]))
    sgd600 = {p: f"sgd-uniform-600/{p}" for p in ("mixture", "gaussian")}
    trails = float(np.mean(_models(N, sgd600["mixture"])["test"])) - float(
        np.mean(_models(N, sgd600["gaussian"])["test"]))
    wide = {p: _models(W, TEMPERED40[p], FIRST) for p in ("mixture", "gaussian")}
    return [
        f"was at {_first(LRT)} % and the chosen Gaussian at {_first(GAUSSIAN_2)} %",
        f"{_wall(N, 'lrt-60/mixture-seeds-3-5')} and "
        f"{_wall(N, 'adam-blundell-samples-2/gaussian-seeds-3-5')} min side by side) put them at "
        f"{_row(N, TABLE1, LRT)['Test error']} and "
        f"{_row(N, TABLE1, GAUSSIAN_2)['Test error']} % over 6 seeds (validation {_val(N, LRT)} "
        f"and {_val(N, GAUSSIAN_2)} %)",
        f"is lower on {pair['lower']} of the {pair['seeds']} seeds, higher by {pair['mean']:.3f} "
        f"points on average, with a standard error of {pair['se']:.3f}",
        f"3 seeds: {_v_t(g03)} %) now comes {behind:.3f} points behind on validation",
        f"still trails by {trails:.1f} points",
        f"puts the mixture ahead ({_m(wide['mixture']['test'])} % against "
        f"{_m(wide['gaussian']['test'])} %)",
        f"prunes 95 % of the mixture's weights for "
        f"{_pruning_cost(_models(W, RAMP40['mixture']), 95):.2f} points",
    ]


def _narrow_300() -> list[str]:
    first = {p: _models(N, MC300[p], FIRST) for p in MC300}
    later = {p: _models(N, MC300[p], LATER) for p in MC300}
    every = {p: _models(N, MC300[p]) for p in MC300}
    pair_first = paired_difference(first["mixture"], first["gaussian"])
    same, chosen = _pair(N, MC300["mixture"]), _row(N, CHOSEN_PAIR, MC300["mixture"])
    assert chosen["Gaussian row"] == GAUSSIAN_2
    g2 = _models(N, GAUSSIAN_2)
    return [
        f"validation error; {_wall(N, 'mc-300/ramp')} min on both cores)",
        f"The Gaussian validates at {_m(first['gaussian']['val'], 3)} % (the 2-sample row: "
        f"{_m(g2['val'], 3)} %) and becomes the chosen Gaussian at "
        f"{fmt(first['gaussian']['test'])} % test; the mixture validates at "
        f"{_m(first['mixture']['val'])} % and tests at {fmt(first['mixture']['test'])} %, so "
        f"the chosen mixture stays the row with noise per image ({_test(N, LRT)} %)",
        f"the mixture is lower on {pair_first['lower']} of {pair_first['seeds']}, with a "
        f"mean difference of {pair_first['mean']:+.3f} points (standard error "
        f"{pair_first['se']:.3f})",
        f"At the last epoch the Gaussian is at {fmt(first['gaussian']['final.test_error_mean'])}"
        f" % and the mixture at {fmt(first['mixture']['final.test_error_mean'])} %; the "
        f"mixture prunes 95 % for nothing ({_pruned_mean(first['mixture'], 0):.2f} -> "
        f"{_pruned_mean(first['mixture'], 95):.2f} %), the Gaussian loses "
        f"{_pruning_cost(first['gaussian'], 95):.1f} points "
        f"({_pruned_mean(first['gaussian'], 0):.2f} -> {_pruned_mean(first['gaussian'], 95):.2f} "
        "%)",
        f"the choice stays with the lowest mean validation error; "
        f"{_wall(N, 'mc-300/ramp-seeds-3-5')} min on both cores",
        f"on seeds 3-5 alone the mixture validates at {_m(later['mixture']['val'])} % and tests "
        f"at {_m(later['mixture']['test'])} %, the Gaussian {_m(later['gaussian']['val'])} "
        f"and {_m(later['gaussian']['test'])} %. Over 6 seeds the mixture validates at "
        f"{_m(every['mixture']['val'], 3)} % and becomes the chosen mixture row (the row "
        f"with noise per image: {_m(_models(N, LRT)['val'], 3)} %) at "
        f"**{_row(N, TABLE1, MC300['mixture'])['Test error']} %** test; the Gaussian "
        f"validates at {_m(every['gaussian']['val'], 3)} %, so the chosen Gaussian is the "
        f"2-sample row again ({_m(g2['val'], 3)} %, test "
        f"**{_row(N, TABLE1, GAUSSIAN_2)['Test error']} %**)",
        f"(seed by seed: the mixture lower on {same['Mixture lower on']} of {same['Seeds']}, "
        f"{same['Difference: mean']} points, standard error {same['Standard error']}, 95 % "
        f"interval {same['95 % interval']}); the chosen mixture against the chosen Gaussian is "
        f"{chosen['Difference: mean']} points (standard error {chosen['Standard error']}, "
        f"interval {chosen['95 % interval']}; lower on {chosen['Mixture lower on']} of "
        f"{chosen['Seeds']})",
        f"At the last epoch the Gaussian is at {_row(N, TABLE1, MC300['gaussian'])['Last epoch']}"
        f" % and the mixture at {_row(N, TABLE1, MC300['mixture'])['Last epoch']} %; the "
        f"mixture prunes 95 % for {_loses(N, MC300['mixture'], 95)} points "
        f"({_pruned(N, MC300['mixture'], 0)} -> {_pruned(N, MC300['mixture'], 95)} %; 98 %: "
        f"{_pruned(N, MC300['mixture'], 98)} %), the Gaussian loses "
        f"{_loses(N, MC300['gaussian'], 95, 1)} ({_pruned(N, MC300['gaussian'], 0)} -> "
        f"{_pruned(N, MC300['gaussian'], 95)} %; 98 %: "
        f"{_pruned_mean(_models(N, MC300['gaussian']), 98):.1f} %)",
    ]


def _narrow_pairs() -> list[str]:
    pairs = _tables(N)[next(t for t in _tables(N) if t.startswith(SAME_TRAINING))]
    means = [float(p["Difference: mean"]) for p in pairs]
    lows = [float(p["95 % interval"].split(" .. ")[0]) for p in pairs]
    highs = [float(p["95 % interval"].split(" .. ")[1]) for p in pairs]
    below = sum(h < 0 for h in highs)
    # the pairs in which the mixture is lower, as the page names them: against a Gaussian
    # with sigma e^-2, in the plain-SGD screen at 1e-4, and in the 300-epoch training
    assert sorted((p["Mixture row"], p["Gaussian row"]) for p in pairs
                  if float(p["Difference: mean"]) < 0) == sorted([
        ("adam-uniform/mixture-0", "adam-uniform/gaussian-2"),
        ("bbb-sgd-lr-screen/mixture-1e-4", "bbb-sgd-lr-screen/gaussian-1e-4"),
        (MC300["mixture"], MC300["gaussian"])])
    gap = PAPER_TABLE1[("bbb-mixture", 400)] - PAPER_TABLE1[("bbb-gaussian", 400)]
    sgd = ["bbb-sgd/gaussian", *(f"sgd-uniform{e}/gaussian" for e in ("", "-200", "-600"))]
    return [
        f"all {len(pairs)} pairs of rows",
        f"lower in {sum(m < 0 for m in means)} of the {len(pairs)} pairs",
        f"and by {abs(float(_pair(N, MC300['mixture'])['Difference: mean'])):.3f} points in the "
        "  300-epoch training above); its 95 % interval lies above 0 (the Gaussian better) in "
        f"{sum(lo > 0 for lo in lows)} and below 0 in {below if below else 'none'}",
        f"(the 300-epoch training: {_pair(N, MC300['mixture'])['95 % interval']}; tempered x0.03 "
        f"with noise per image: {_pair(N, LRT)['95 % interval']})",
        f"({gap:+.2f} points, {_paper('bbb-mixture', 400)} against "
        f"{_paper('bbb-gaussian', 400)} %). Our chosen Gaussian is at {_test(N, GAUSSIAN_2)} %; "
        f"the rows that come near the paper's Gaussian ({_paper('bbb-gaussian', 400)} %)",
        f"(plain SGD: {_span([float(_test(N, r)) for r in sgd], 2)} %, its cost at "
        f"{_span([float(_cost(N, r)[2]) for r in sgd], 2)} of its start) or with a narrower "
        f"Gaussian prior (sigma e^-2: {_test(N, 'adam-uniform/gaussian-2')} %)",
    ]


def _narrow_table2() -> list[str]:
    before = "tempered-60/mixture-0.03"
    return [
        f"loses **{_loses(N, MC300['mixture'], 95)} points at 95 %** "
        f"({_pruned(N, MC300['mixture'], 0)} -> {_pruned(N, MC300['mixture'], 95)} %) and "
        f"{_loses(N, MC300['mixture'], 98, 1)} at 98 %",
        f"which loses {_loses(N, LRT, 95)} points at 95 %; before that, the same with one "
        f"weight sample per minibatch, {_loses(N, before, 95, 1)} points, and Blundell weights, "
        f"{_loses(N, 'adam-blundell/mixture', 95)}.)",
        f"loses {_loses(N, 'adam-uniform/mixture-0', 95)} points at 95 % and "
        f"{_loses(N, 'adam-uniform/mixture-0', 98)} at 98 %, as the paper's does (its 2 x 1200 "
        f"model: {_paper2(0.0):.2f} -> {_paper2(0.95):.2f} -> {_paper2(0.98):.2f})",
        f"(Blundell's weights, 2 samples) loses {_loses(N, GAUSSIAN_2, 95, 1)} points at 95 %, "
        f"and the Gaussian trained as the chosen mixture {_loses(N, MC300['gaussian'], 95, 1)}",
        f"({len(read_models(REPO / GRID))} settings, 20 epochs, one seed",
    ]


def _narrow_retrained() -> list[str]:
    """The retrained rows that are not Table 1's models: how far their mean test error
    (best-validation epoch, seeds 0-2) lies from that of the table's models."""
    from test_mnist_report import retrained_errors

    differ = [abs(float(np.mean(a) - np.mean(b))) for a, b in retrained_errors().values()
              if a != b]
    assert len(differ) == 3
    return [f"(their test errors within {max(differ):.2f} points of the table's, as means "
            f"over the three seeds)"]


NARROW_QUOTES = [_narrow_times, _narrow_optimisers, _narrow_longer_and_samples, _narrow_probe,
                 _narrow_priors, _narrow_tempered, _narrow_lrt, _narrow_schedules,
                 _narrow_verdict, _narrow_300, _narrow_pairs, _narrow_table2,
                 _narrow_retrained]


# 2 x 1200: the pull toward zero of a posterior weight N(mean, s^2), s at its start, under
# each estimate of the complexity cost (per unit of cost), from the two gradients' formulas.
PULL_MEANS = (0.01, 0.015)  # the page's two example means (settings of the computation)


def _prior(run: str) -> tuple[float, float, float, float]:
    """pi, sigma1, sigma2 of a 2 x 1200 row's scale mixture, and the initial sigma."""
    st = _row_settings(W, run)
    return (st["pi"], math.exp(-st["neg_log_sigma1"]), math.exp(-st["neg_log_sigma2"]),
            _softplus(st["init_rho"]))


def _narrow_wins_below() -> float:
    """The root of the mean square mu^2 + sigma^2 below which the closed form takes the
    narrow component: where the two components' KL (less log pi) are equal."""
    pi, s1, s2, _ = _prior(RAMP40["mixture"])
    return math.sqrt((math.log(s1 / s2) + math.log((1 - pi) / pi)) * 2 / (1 / s2**2 - 1 / s1**2))


def _closed_form_pull(mean: float) -> float:
    """d/dmean of the hierarchical KL with the components' responsibilities."""
    pi, s1, s2, s = _prior(RAMP40["mixture"])
    m2 = mean * mean + s * s
    logits = [math.log(w) - (math.log(sk / s) + m2 / (2 * sk * sk) - 0.5)
              for w, sk in ((pi, s1), (1 - pi, s2))]
    top = max(logits)
    r = [math.exp(x - top) for x in logits]
    return mean * (r[0] / s1**2 + r[1] / s2**2) / sum(r)


def _monte_carlo_pull(mean: float) -> tuple[float, float]:
    """The expected d/dmean of -log p(w) over w ~ N(mean, s^2), and the share of the
    samples the narrow component holds (its responsibility above one half)."""
    pi, s1, s2, s = _prior(RAMP40["mixture"])
    eps = np.linspace(-12, 12, 400_001)
    w, density = mean + s * eps, np.exp(-eps**2 / 2) / math.sqrt(2 * math.pi)
    log1 = math.log(pi) - math.log(s1) - w**2 / (2 * s1**2)
    log2 = math.log(1 - pi) - math.log(s2) - w**2 / (2 * s2**2)
    r2 = 0.5 * (1 + np.tanh((log2 - log1) / 2))  # the narrow component's responsibility
    pull = w * ((1 - r2) / s1**2 + r2 / s2**2)
    step = eps[1] - eps[0]
    return float((pull * density).sum() * step), float(((r2 > 0.5) * density).sum() * step)


def _wide_gpu() -> list[str]:
    mix, gau = _models(W, MC600["mixture"]), _models(W, MC600["gaussian"])
    chosen = _row(W, CHOSEN_PAIR, MC600["mixture"])
    assert float(chosen["Difference: mean"]) > 0  # "higher by"
    seeds = mix.set_index("seed")
    test, std = (float(x) for x in _row(W, TABLE1, MC600["mixture"])["Test error"].split(" +- "))
    assert abs(test - PAPER_TABLE1[("bbb-mixture", 1200)]) <= std  # "within one std"
    machine = _machine(W, "cuda")
    gpu, torch_version = re.fullmatch(r"(.*), torch (\S+)", machine).groups()
    return [
        f"one {gpu} (torch {torch_version})",
        f"the scale mixture reaches {_test(W, MC600['mixture'])} %",
        f"not below the Gaussian ({_test(W, MC600['gaussian'])} %)",
        f"Seed by seed the mixture is lower on {chosen['Mixture lower on']} of the "
        f"{chosen['Seeds']} seeds, and higher by {float(chosen['Difference: mean']):.3f} points "
        f"on average with a standard error of {chosen['Standard error']}",
        f"seed 0 had its lowest validation error at epoch {seeds.at[0, 'best_validation.epoch']} "
        f"({seeds.at[0, 'val']:.2f} %, test {seeds.at[0, 'test']:.2f} %) and never validated "
        f"that low again, while its test error ended at "
        f"{seeds.at[0, 'final.test_error_mean']:.2f} %; the other two seeds were chosen at "
        f"epochs {seeds.at[1, 'best_validation.epoch']} and {seeds.at[2, 'best_validation.epoch']}"
        f" (test {seeds.at[1, 'test']:.2f} and {seeds.at[2, 'test']:.2f} %)",
        f"the mixture is at {fmt(mix['final.test_error_mean'])} % and the Gaussian at "
        f"{fmt(gau['final.test_error_mean'])} %",
        f"the paper's ({_paper('bbb-gaussian', 1200)} %); our mixture is at the paper's "
        f"{_paper('bbb-mixture', 1200)} %",
    ]


def _wide_pairs() -> list[str]:
    pairs = _tables(W)[next(t for t in _tables(W) if t.startswith(SAME_TRAINING))]
    val = [abs(float(p["Validation difference"])) for p in pairs]
    assert all(float(p["Validation difference"]) < 0 for p in pairs)  # "under every training"
    tempered = _pair(W, TEMPERED40["mixture"])
    later = {p: _models(W, TEMPERED40[p], LATER) for p in TEMPERED40}
    fresh = paired_difference(later["mixture"], later["gaussian"])
    assert fresh["lower"] == fresh["seeds"]  # "lower on all 3"
    gap = PAPER_TABLE1[("bbb-mixture", 1200)] - PAPER_TABLE1[("bbb-gaussian", 1200)]
    speed = json.loads((REPO / "results/mnist/speed.json").read_text())["sizes"]["1200"]
    bbb_s = speed["seconds_per_epoch"]["bbb"]
    hours = 6 * 600 * bbb_s / 3600  # seeds 3-5 of both priors, 600 epochs each
    return [
        f"(by {_span(val, 2)} points) and tests lower on "
        f"{sum(int(p['Mixture lower on']) for p in pairs)} of the "
        f"{sum(int(p['Seeds']) for p in pairs)} seed pairs",
        f"it is lower on all {tempered['Seeds']} seeds, by "
        f"{abs(float(tempered['Difference: mean'])):.3f} points "
        f"({_row(W, TABLE1, TEMPERED40['mixture'])['Test error']} against "
        f"{_row(W, TABLE1, TEMPERED40['gaussian'])['Test error']} %)",
        f"the mixture is again lower on all {fresh['seeds']}, by {abs(fresh['mean']):.2f} "
        f"points ({_m(later['mixture']['test'])} against {_m(later['gaussian']['test'])} %), "
        f"while the two priors validate the same "
        f"({_alike(_m(later['mixture']['val'], 3), _m(later['gaussian']['val'], 3))} %)",
        f"it took {_wall(W, 'tempered-40-seeds-3-5')} min on both cores",
        f"({gap:+.2f} points, {_paper('bbb-mixture', 1200)} against {_paper('bbb-gaussian', 1200)}"
        " %)",
        f"The size does not match: {abs(float(tempered['Difference: mean'])):.2f} points, not "
        f"{abs(gap):.2f}",
        f"({_val(W, TEMPERED40['mixture'])} % against the 600-epoch rows' "
        f"{_val(W, MC600['mixture'])} %)",
        f"about {hours:.0f} hours of CPU time (6 models x 600 epochs x {bbb_s:.0f} s), about "
        f"{hours / 2:.0f} hours on both cores",
    ]


def _wide_pruning() -> list[str]:
    mix, gau = _models(W, MC600["mixture"]), _models(W, MC600["gaussian"])
    ramp = {p: _models(W, RAMP40[p]) for p in RAMP40}
    paper = {p: _paper2(p) - _paper2(0.0) for p in (0.95, 0.98)}
    return [
        f"**Removing 95 % of the weights costs {_pruning_cost(mix, 95):.2f} points and 98 % costs "
        f"{_pruning_cost(mix, 98):.2f}** (the paper: {paper[0.95]:.2f} and "
        f"{paper[0.98]:.2f})",
        f"(+{_pruning_cost(gau, 95):.2f} points against +{_pruning_cost(ramp['gaussian'], 95):.1f}"
        f"), but loses {_pruning_cost(gau, 98):.1f} points at 98 %",
        f"**Removing 95 % of this model's weights costs {_pruning_cost(ramp['mixture'], 95):.2f} "
        f"points** ({_pruned_mean(ramp['mixture'], 0):.3f} -> "
        f"{_pruned_mean(ramp['mixture'], 95):.3f} % over 6 seeds; "
        f"{_pruning_cost(_models(W, RAMP40['mixture'], FIRST), 95):.2f} over the first 3), and "
        f"98 % costs {_pruning_cost(ramp['mixture'], 98):.2f} (the paper: {paper[0.95]:.2f} "
        f"and {paper[0.98]:.2f}). The Gaussian under the same training loses "
        f"{_pruning_cost(ramp['gaussian'], 95):.1f} points at 95 %",
    ]


def _wide_speed() -> list[str]:
    speed = json.loads((REPO / "results/mnist/speed.json").read_text())["sizes"]["1200"]
    epoch = {d: _commands(W)[d]["batch_epoch"] for d in ("mc-600/ramp", "sgd-600",
                                                        "dropout-600")}
    mc40 = [c["wall"] for d, c in _commands(W).items() if d.startswith("mc-40/")]
    return [
        f"trained for 600 epochs in {_wall(W, 'sgd-600')} (SGD), {_wall(W, 'dropout-600')} "
        f"(dropout) and {_wall(W, 'mc-600/ramp')} min (BBB, each prior's batch) on the H200, "
        f"against {_span(mc40, 0)} min (BBB) and "
        f"{_span([_commands(W)[d]['wall'] for d in ('sgd-40', 'dropout-40')], 0)} min (SGD, "
        "dropout) for 40 epochs on the CPU",
        f"took {epoch['mc-600/ramp']:.2f} s (BBB, compiled, the other prior's batch sharing "
        f"the GPU), {epoch['sgd-600']:.2f} s (SGD) and {epoch['dropout-600']:.2f} s (dropout, "
        f"the two sharing the GPU), against {speed['seconds_per_epoch']['bbb']:.0f} s (BBB) "
        f"and {speed['seconds_per_epoch']['mlp']:.1f} s (plain MLP) per model on one CPU core",
    ]


def _wide_estimators() -> list[str]:
    closed = {m: _closed_form_pull(m) for m in PULL_MEANS}
    mc = {m: _monte_carlo_pull(m) for m in PULL_MEANS}
    one, two = PULL_MEANS
    s0 = _prior(RAMP40["mixture"])[3]

    def share(where: str, epoch: int) -> str:
        return f"{100 * _probe(where, 'base', epoch, 'share_in_narrow'):.0f}"

    return [
        f"below ({_narrow_wins_below():.4f})^2",
        f"(sigma at its start, {s0:.4f}) is charged as all-wide: its pull toward zero, per "
        f"unit of cost, is {closed[one]:.1f}. The Monte Carlo estimate charges each sampled w, "
        f"and {100 * mc[one][1]:.0f} % of that weight's samples land inside the narrow "
        f"component: its expected pull is {mc[one][0]:.0f}, {mc[one][0] / closed[one]:.0f} "
        "times larger",
        f": {mc[two][0]:.0f} against {closed[two]:.2f}; computed from the two gradients' "
        "formulas",
        f"{_probe_minutes('2x1200-x0.03/mc')} and {_probe_minutes('2x1200-x0.03/kl')} min): with "
        f"the Monte Carlo cost {share('2x1200-x0.03/mc', 1)} % of the posterior means are "
        f"inside the narrow component after one epoch and {share('2x1200-x0.03/mc', 8)} % after "
        f"eight; with the closed form {share('2x1200-x0.03/kl', 1)} % and "
        f"{share('2x1200-x0.03/kl', 8)} %",
    ]


def _wide_accuracy() -> list[str]:
    first = {p: _models(W, RAMP40[p], FIRST) for p in RAMP40}
    later = {p: _models(W, RAMP40[p], LATER) for p in RAMP40}
    pair = _pair(W, RAMP40["mixture"])
    assert float(pair["Difference: mean"]) > 0  # "higher by"
    six, constant = (float(np.mean(_models(W, r)["val"]))
                     for r in (RAMP40["gaussian"], "mc-40/gaussian-constant"))
    assert abs(six - constant) < 1e-6  # "equals"
    tempered = _pair(W, TEMPERED40["mixture"])
    assert tempered["Mixture lower on"] == tempered["Seeds"]  # "lower on every seed"
    gaussians = [float(_test(W, r["Run"])) for r in _tables(W)[
        next(t for t in _tables(W) if t.startswith(TABLE1))]
        if r["Method"].startswith("bbb-gaussian") and r["Epochs"] == "40"]
    constant_nll = [_nll_value(W, r) for r in ("mc-40/constant", "mc-40/gaussian-constant",
                                                *TEMPERED40.values())]
    over = [e for e in range(1, 41) if kl_factor_at(_config(RAMP40["mixture"]), e) > 0.3]
    return [
        f"With 3 seeds the mixture was at {_m(first['mixture']['test'])} % and the Gaussian at "
        f"{_m(first['gaussian']['test'])} %; seeds 3-5 moved them to "
        f"{_row(W, TABLE1, RAMP40['mixture'])['Test error']} and "
        f"{_row(W, TABLE1, RAMP40['gaussian'])['Test error']} % (6 seeds; on seeds 3-5 alone the "
        f"mixture validated at {_m(later['mixture']['val'])} and tested at "
        f"{_m(later['mixture']['test'])} %, the Gaussian {_m(later['gaussian']['val'])} and "
        f"{_m(later['gaussian']['test'])} %)",
        f"the mixture is lower on {pair['Mixture lower on']} of the {pair['Seeds']} seeds and "
        f"higher by {float(pair['Difference: mean']):.3f} points on average, with a standard "
        f"error of {pair['Standard error']}",
        f"6-seed validation error ({six:.3f} %) equals that of its constant-factor row (3 "
        f"seeds, test {_test(W, 'mc-40/gaussian-constant')} %)",
        f"the Gaussian would be at {_test(W, 'mc-40/gaussian-constant')} % and the mixture's "
        f"{_test(W, RAMP40['mixture'])} % below it",
        f"the mixture is ahead ({_test(W, TEMPERED40['mixture'])} against "
        f"{_test(W, TEMPERED40['gaussian'])} %, {tempered['Seeds']} seeds, lower on every seed;",
        f"the chosen mixture row is at {_test(W, RAMP40['mixture'])} %, the chosen Gaussian at "
        f"{_test(W, RAMP40['gaussian'])} % (at 600 epochs, above: {_test(W, MC600['mixture'])} and "
        f"{_test(W, MC600['gaussian'])} %)",
        f"({_paper('bbb-mixture', 1200)} against {_paper('bbb-gaussian', 1200)} %) does not "
        f"appear in 40 epochs: our Gaussian is far better than the paper's "
        f"({_span(gaussians, 2)} % in every training)",
        f"the plain MLP under Adam ({_test(W, 'sgd-40')} %) is far better than the paper's "
        f"SGD row ({_paper('sgd', 1200)} %)",
        f"only in the last {len(over)} epochs (from epoch {over[0]})",
        f"the training NLL ends at {_nll_value(W, RAMP40['mixture']):.3f} (mixture) and "
        f"{_nll_value(W, RAMP40['gaussian']):.4f} (Gaussian), against {_span(constant_nll, 4)} "
        f"at a constant x0.03",
        f"prunes 95 % as well (+{_pruning_cost(_models(W, 'mc-40/constant'), 95):.3f} points), "
        f"and 98 % less well (+{_pruning_cost(_models(W, 'mc-40/constant'), 98):.1f} points)",
    ]


def _config(run: str) -> Config:
    st = _row_settings(W, run)
    names = set(Config.__dataclass_fields__)
    return Config(**{k: v for k, v in st.items() if k in names})


WIDE_QUOTES = [_wide_gpu, _wide_pairs, _wide_pruning, _wide_speed, _wide_estimators,
               _wide_accuracy]

# (a page, a callable giving the snippets of its prose it must hold, built from the files)
QUOTES = [(MNIST, _mnist_page), *((NARROW, q) for q in NARROW_QUOTES),
          *((WIDE, q) for q in WIDE_QUOTES)]

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES)


# Numbers of a page's prose that are not results: years and sections of the paper, widths,
# the data split, epochs, KL factors and other settings of the runs, the targets set
# before the runs. An entry with words is a setting in its context (the number there
# only); a bare number is a setting wherever the page writes it.
FACTORS = {"0.03 -> 1", "x **0.03**", "x**0.03**", "x **0.1**", "x**0.1**", "x**0.01**",
           "1/M x 0.03", "1/M x 0.1"}  # the KL factors of the rows a page names
SETTINGS = {
    MNIST: {"2015", "section 5.1", "section 3.4", "pixels / 126", "50,000", "10,000", "60,000",
            "400", "800", "1200", "minibatches of 128", "600", "(e.g. 0.03 -> 1"},
    NARROW: {"400", "1200", "120", "200", "300", "600", *FACTORS, "from 0.3, 0.1, 0.03 in",
             "from 0.03 in the first epoch", "(p = 0.5)", "(beta2 = 0.999)", "on 50,000 images",
             "(<= 1.45 % and below the Gaussian)", "(<= 0.1 at 95 %)"},
    WIDE: {"400", "1200", "600", "0.03 -> 1", "(p = 0.5)", "(<= 1.45 %", "still miss 1.45 %",
           "mean is 0.01", "a mean of 0.015", "passes 0.3"},
}


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page``'s prose that no check builds and no setting declares."""
    text = (REPO / page).read_text(encoding="utf-8")
    for spec in TABLES:
        if spec.page == page:
            text = _blank_checked_cells(spec, text)
    return uncovered(flat(prose(text)), snippets(page, FRONT, QUOTES), SETTINGS[page])


test_every_number_of_the_mnist_pages_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked)
test_every_declared_setting_is_on_its_page = page_numbers.settings_test(
    SETTINGS, pages=PAGES)
