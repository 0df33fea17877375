"""Numbers that the hand-written MNIST results pages (results/mnist/README.md, the LeNet-5
page and the 20-epoch prior grid's page) quote in their prose and in their hand-written
tables, checked against the shipped files they come from, as
tests/test_numbers_mnist_pages.py does for docs/mnist*.md (whose helpers this module
reuses): the reports' ``tables.md`` and ``table1.csv``, the lines of ``models.jsonl``,
the grid's ``settings.csv``, ``speed.json``, the gradient-variance benchmark the LeNet-5
page links, and the paper's numbers (``bandits.mnist.reports.tables``). A rerun that changes a
file without the page fails here.

A hand-written table is checked row by row (:data:`TABLES`): the numbers of a row's result
cells must be those of the report's row of the model the row names. The prose is checked
by :data:`QUOTES` (snippets built from the files), and every other number of the prose
must be a setting or a citation declared in :data:`SETTINGS`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import page_numbers
import pandas as pd
import pytest
from page_numbers import REPO, cell_numbers, flat, prose, row_cells, snippets, tables, uncovered
from test_numbers_mnist_pages import (
    LENET,
    TABLE1,
    Group,
    HandTable,
    W,
    _blank_checked_cells,
    _commands,
    _machine,
    _matches,
    _models,
    _pruned,
    _pruning_cost,
    _row,
    _setting,
    _softplus,
    _span,
    _tables,
    _test,
    _wall,
)

from bandits.mnist.reports.gather import read_models
from bandits.mnist.reports.tables import PAPER_TABLE2

INDEX = "results/mnist/README.md"
LENET_PAGE = "results/mnist/lenet5/README.md"
GRID_PAGE = "results/mnist/grid-2x400-20-epochs/README.md"
PAGES = (INDEX, LENET_PAGE, GRID_PAGE)
GRID = "results/mnist/grid-2x400-20-epochs"
NARROW = "results/mnist/2x400"
SPEED = "results/mnist/speed.json"
GRADIENT_VARIANCE = "results/bench/gradient_variance.csv"  # the LeNet-5 page's bench link

# the LeNet-5 runs, by the names the page's tables give them
LENET_RUNS = {"Flipout": "flipout", "reparam": "reparam", "LRT": "lrt", "-": "sgd",
              "LeNet-5 (plain)": "sgd", "BBB, Flipout": "flipout", "BBB, reparam": "reparam",
              "BBB, LRT": "lrt"}
BBB_RUNS = ("flipout", "reparam", "lrt")
OOD = "Out-of-distribution check"
OOD_COLUMNS = ("Test", "Rot. 30", "Rot. 60", "Rot. 90", "Inverted", "Noise")


# ---------------------------------------------------------------- results/mnist/README.md


def _gpu_batches() -> list[float]:
    """Every batch of the 2 x 1200 GPU commands, in minutes (its models' training and
    evaluation), each a batch of 3 models of 600 epochs."""
    batches: dict[tuple[str, float], list[dict]] = {}
    for r in read_models(REPO / W):
        if r["device"] == "cuda":
            batches.setdefault((r["command"], r["batch_wall_seconds"]), []).append(r)
    assert batches
    for models in batches.values():
        assert len(models) == 3 and all(m["epochs"] == 600 for m in models)  # the page says so
    return [sum(m["wall_seconds"] for m in models) / 60 for models in batches.values()]


def _index() -> list[str]:
    gpu, torch_version = re.fullmatch(r"(.*), torch (\S+)", _machine(W, "cuda")).groups()
    speed = json.loads((REPO / SPEED).read_text())
    assert speed["device"] == "cpu" and speed["machine"].startswith("2-core CPU")
    per_epoch = speed["sizes"]["1200"]["seconds_per_epoch"]
    return [
        f"Run on one {gpu} (torch {torch_version}), 3 seeds each",
        f"A batch of 3 models took {_span(_gpu_batches(), 1)} min there for 600 epochs",
        f"{per_epoch['bbb']:.0f} s per BBB model and {per_epoch['mlp']:.1f} s per plain MLP "
        "on one core",
    ]


# ---------------------------------------------------------------- the LeNet-5 page


def _lenet_model(run: str) -> dict:
    """The one model of a LeNet-5 row, as ``models.jsonl`` holds it."""
    found = [r for r in read_models(REPO / LENET) if r["model"] == run]
    assert len(found) == 1, run
    return found[0]


def _lenet_setup() -> list[str]:
    weights = {_lenet_model(r)["n_weights"] for r in (*BBB_RUNS, "sgd")}
    assert len(weights) == 1, weights
    rho = _setting(LENET, "flipout", "init_rho")
    torch_build = re.search(r"torch \S+ CPU build", _machine(LENET, "cpu")).group(0)
    c = _commands(LENET)
    assert {_lenet_model(r)["kernels"]["mode"] for r in (*BBB_RUNS, "sgd")} == {"exact"}
    return [
        f"ReLU; {weights.pop():,} weights and biases",
        f"posterior sigma starting at softplus({rho:g}) = {_softplus(rho):.4f}",
        f"{torch_build}, exact mode (`--exact`",
        f"wall times {_wall(LENET, 'flipout')} min (Flipout, {c['flipout']['epoch']:.1f} s per "
        f"epoch), {_wall(LENET, 'reparam')} min (reparam, {c['reparam']['epoch']:.1f} s), "
        f"{_wall(LENET, 'lrt')} min (LRT, {c['lrt']['epoch']:.1f} s), {_wall(LENET, 'sgd')} min "
        f"(plain LeNet-5, {c['sgd']['epoch']:.1f} s), training and evaluation",
    ]


def _lenet_results() -> list[str]:
    chosen = next(r for r in _tables(LENET)[next(t for t in _tables(LENET)
                                                 if t.startswith(TABLE1))]
                  if r["Method"] == "bbb-gaussian (chosen)")
    run = chosen["Run"]  # the BBB model chosen on validation: the lowest validation error
    val = {r: _lenet_model(r)["best_validation"]["val_error_mean"] for r in BBB_RUNS}
    assert run == min(val, key=val.__getitem__) == "reparam"  # "with plain reparam..."
    lowest = min(BBB_RUNS, key=lambda r: float(_test(LENET, r)))
    assert lowest == "flipout"  # "Flipout's model has the lowest test error"
    ratios = pd.read_csv(REPO / GRADIENT_VARIANCE)
    flipout = ratios[(ratios["arch"] == "lenet5") & (ratios["estimator"] == "flipout")]
    assert len(flipout) == 5  # "on every LeNet-5 layer"
    return [
        f"({val[run]:.2f} %\nvalidation error against Flipout's {val['flipout']:.2f} %), "
        f"reaches {_test(LENET, run)} % test error",
        f"in {_wall(LENET, run)} minutes on one CPU core; Flipout's model has the lowest test "
        f"error,\n{_test(LENET, 'flipout')} %",
        f"(Flipout {_span(list(flipout['relative_to_reparam']), 2)} of the plain\n"
        "reparameterisation's on every LeNet-5 layer)",
    ]


def _lenet_ood() -> list[str]:
    models = {r: _lenet_model(r) for r in (*BBB_RUNS, "sgd")}
    shifted = ("entropy_rotated_30", "entropy_rotated_60", "entropy_rotated_90",
               "entropy_inverted", "entropy_noise")
    for run in BBB_RUNS:  # "less sure than the plain network on every shifted input"
        assert all(models[run]["ood"][k] > models["sgd"]["ood"][k] for k in shifted), run
    ood = {r: m["ood"] for r, m in models.items()}
    maximum = {o["max_entropy"] for o in ood.values()}
    images = {o["images"] for o in ood.values()}
    samples = {_setting(LENET, r, "eval_samples") for r in BBB_RUNS}
    assert len(maximum) == len(images) == len(samples) == 1
    return [
        f"maximum log 10 = {maximum.pop():.2f};\nBBB: the average of {samples.pop()} sampled "
        f"networks; {images.pop()} images each",
        f"on noise images the BNNs' mean entropy is "
        f"{_span([ood[r]['entropy_noise'] for r in BBB_RUNS], 1)} nats against\nthe plain "
        f"network's {ood['sgd']['entropy_noise']:.2f}",
    ]


def _lenet_pruning() -> list[str]:
    run = "reparam"  # the BBB model chosen on validation (_lenet_results checks it)
    chosen = _models(LENET, run)
    assert float(_pruned(LENET, run, 95)) > 10 * float(_pruned(LENET, run, 0))
    paper = PAPER_TABLE2[0.0][0]  # the weights of the paper's 2 x 1200 MLP: "2.4m"
    paper_weights = float(paper.removesuffix("m")) * 1e6
    fewer = paper_weights / _lenet_model("flipout")["n_weights"]
    return [
        f"about {round(fewer, -1):.0f} times fewer weights than the paper's",
        f"ratio costs {_pruning_cost(chosen, 50):.2f} points ({_pruned(LENET, run, 0)} -> "
        f"{_pruned(LENET, run, 50)} %), 75 % costs {_pruning_cost(chosen, 75):.2f}, "
        "95 % breaks it",
    ]


# ---------------------------------------------------------------- the prior grid's page


def _grid() -> pd.DataFrame:
    return pd.read_csv(REPO / GRID / "settings.csv")


def _prior(row: pd.Series) -> str:
    """A grid setting as the page writes it: ``pi = 1/2, sigma1 = 1, sigma2 = e^-8``."""
    s1 = "1" if row["neg_log_sigma1"] == 0 else f"e^-{row['neg_log_sigma1']:g}"
    return (f"pi = {Fraction(row['pi']).limit_denominator(8)}, sigma1 = {s1}, "
            f"sigma2 = e^-{row['neg_log_sigma2']:g}")


def _grid_selected() -> list[str]:
    t = _grid()
    assert len(t) == len(read_models(REPO / GRID))
    low = t["val_error_mean"].min()
    tied = t[t["val_error_mean"] == low]
    selected = t[t["selected"]]
    assert len(selected) == 1 and selected.index[0] == tied.index[0]  # first in grid order
    assert len(tied) == 2  # "tied on validation with" one other setting
    best, other = selected.iloc[0], tied.iloc[1]
    return [
        f"is {_prior(best)} (validation {best['val_error_mean']:.2f} %, test "
        f"{best['test_error_mean']:.2f} %; tied on\nvalidation with pi = "
        f"{Fraction(other['pi']).limit_denominator(8)}, -log sigma1 = "
        f"{other['neg_log_sigma1']:g}, -log sigma2 = {other['neg_log_sigma2']:g}, the first in "
        "grid order\nis taken)",
    ]


def _grid_pattern() -> list[str]:
    t = _grid().set_index(["pi", "neg_log_sigma1", "neg_log_sigma2"])["val_error_mean"]
    pairs = sorted({(pi, s1) for pi, s1, _ in t.index})
    lower = [(pi, s1) for pi, s1 in pairs if t[(pi, s1, 8.0)] < t[(pi, s1, 6.0)]]
    others = [p for p in pairs if p not in lower]
    assert len(others) == 1  # "the ninth"
    ninth = others[0]
    # the seed-to-seed spread of the 3-seed Table 1 under 2x400/ at 60 epochs: its rows'
    # typical standard deviation of the test error
    table1 = pd.read_csv(REPO / NARROW / "table1.csv")
    spread = float(np.median(table1.loc[table1["epochs"] == 60, "test_error_std"]))
    return [
        f"(about {spread:.1f} point at 60 epochs)",
        f"-log sigma2 = 8 (a narrower spike) has a lower validation error than 6 in "
        f"{len(lower)} of the\n{len(pairs)} (pi, sigma1) pairs (the ninth: "
        f"{t[(*ninth, 8.0)]:.2f} against {t[(*ninth, 6.0)]:.2f})",
    ]


# (a page, a callable giving the snippets of its prose it must hold, built from the files)
QUOTES = [(INDEX, _index), (LENET_PAGE, _lenet_setup), (LENET_PAGE, _lenet_results),
          (LENET_PAGE, _lenet_ood), (LENET_PAGE, _lenet_pruning), (GRID_PAGE, _grid_selected),
          (GRID_PAGE, _grid_pattern)]

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES)


# ---------------------------------------------------------------- the hand-written tables


@dataclass(frozen=True)
class RunTable:
    """A hand-written table of ``page`` headed by ``header`` whose rows each copy the
    report's row of one run: the run is named by the row's cell ``key`` (through
    :data:`LENET_RUNS`), and the numbers of ``columns`` must be ``source(run)``."""

    page: str
    header: str
    key: int
    columns: tuple[int, ...]
    source: Callable[[str], list[list[str]]]

    def blank(self) -> HandTable:
        """The same table for :func:`_blank_checked_cells` (its checked cells emptied)."""
        return HandTable(self.page, self.header, (Group(self.columns, list),))


def _rows_of(text: str, header: str) -> list[str]:
    """The data rows of the (first) table of ``text`` headed by ``header``."""
    return [line for _, line in next(iter(tables(text, header)), [])]


def _lenet_table1(run: str) -> list[list[str]]:
    row = _row(LENET, TABLE1, run)
    epoch = _lenet_model(run)["best_validation"]["epoch"]
    return [[str(epoch)], cell_numbers(row["Validation"]), cell_numbers(row["Test error"]),
            cell_numbers(row["BBB sampled avg"])]


def _lenet_ood_row(run: str) -> list[list[str]]:
    row = _row(LENET, OOD, run)
    return [cell_numbers(row[c]) for c in OOD_COLUMNS]


TABLES = [
    RunTable(LENET_PAGE, "| model | estimator | epoch chosen | validation error | "
                         "test error (mean net) | test error (10 samples averaged) |",
             1, (2, 3, 4, 5), _lenet_table1),
    RunTable(LENET_PAGE, "| model | test digits | rotated 30 | rotated 60 | rotated 90 | "
                         "inverted | uniform noise |", 0, (1, 2, 3, 4, 5, 6), _lenet_ood_row),
]


def _table_errors(spec: RunTable, text: str) -> tuple[int, list[str]]:
    rows, errors = _rows_of(text, spec.header), []
    for line in rows:
        cells = row_cells(line)
        run = LENET_RUNS[cells[spec.key]]
        doc = [cell_numbers(cells[c]) for c in spec.columns]
        if not _matches(doc, spec.source(run), [False] * len(doc)):
            errors.append(f"{line.strip()} (run {run}: {doc} against {spec.source(run)})")
    return len(rows), errors


@pytest.mark.parametrize("spec", TABLES, ids=lambda s: f"{s.page}:{s.header[:40]}")
def test_every_row_of_a_hand_written_table_is_its_runs_row_of_the_report(spec):
    n, errors = _table_errors(spec, (REPO / spec.page).read_text(encoding="utf-8"))
    assert n, f"{spec.page} has no table headed {spec.header!r}"
    assert errors == [], f"{spec.page}: rows that are not their run's row: {errors}"
    runs = [LENET_RUNS[row_cells(line)[spec.key]] for line in _rows_of(
        (REPO / spec.page).read_text(encoding="utf-8"), spec.header)]
    assert sorted(runs) == sorted(m["model"] for m in read_models(REPO / LENET))  # each once


def test_a_changed_or_swapped_number_fails_its_row():
    spec = TABLES[0]
    text = (REPO / spec.page).read_text(encoding="utf-8")
    first, second = _rows_of(text, spec.header)[:2]
    cells = row_cells(first)
    moved = cells[:3] + [f"{float(cell_numbers(cells[3])[0]) + 0.01:.2f}"] + cells[4:]
    assert _table_errors(spec, text.replace(first, "| " + " | ".join(moved) + " |"))[1]
    # the numbers of another run's row are not this run's
    swapped = cells[:2] + row_cells(second)[2:]
    assert _table_errors(spec, text.replace(first, "| " + " | ".join(swapped) + " |"))[1]


# ---------------------------------------------------------------- every number


# Numbers of a page's prose that are not results: the paper's year and section, widths,
# epochs, the layers of LeNet-5, the minibatch size, the data split, KL factors, and the
# target set before the LeNet-5 runs. An entry with words is a setting in its context
# (the number there only); a bare number is a setting wherever the page writes it.
SETTINGS = {
    INDEX: {"2015", "section 5.1", "400", "1200", "200", "300", "600", "0.03 -> 1"},
    LENET_PAGE: {"-> 120 ->", "minibatches of 128", "(50,000 train, 10,000 validation)",
                 "(the target was at most 1.0 %)", "differences of 0.1", "400", "1200"},
    GRID_PAGE: {"400"},
}


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page``'s prose that no check builds and no setting declares."""
    text = (REPO / page).read_text(encoding="utf-8")
    for spec in TABLES:
        if spec.page == page:
            text = _blank_checked_cells(spec.blank(), text)
    return uncovered(flat(prose(text)), snippets(page, QUOTES), SETTINGS[page])


test_every_number_of_the_mnist_results_pages_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked)
test_every_declared_setting_is_on_its_page = page_numbers.settings_test(
    SETTINGS, pages=PAGES)

