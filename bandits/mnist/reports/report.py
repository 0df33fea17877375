"""``python -m bandits.mnist report DIR``: every model under ``DIR`` gathered into one
tidy file (``models.jsonl``, :mod:`bandits.mnist.reports.gather`), and the tables built from that
file alone (``tables.md``, ``table1.csv``; :mod:`bandits.mnist.reports.rows`,
:mod:`bandits.mnist.reports.tables`), with Figures 2-4 where the models' own files are there to
draw them from (:mod:`bandits.mnist.reports.figures`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from bandits.core.files import write_atomic, write_csv
from bandits.mnist.reports.figures import KIND_COLORS, plot_snr, plot_test_errors, plot_weight_hists
from bandits.mnist.reports.gather import MODELS_FILE, gather, read_models, write_models
from bandits.mnist.reports.rows import best_bbb, models_table, rows_table
from bandits.mnist.reports.tables import (
    NOTES,
    commands,
    cost_table,
    ood_table,
    paper_note,
    prior_pairs,
    pruning_every_row,
    speed_markdown,
    table1,
    table1_rows,
    table2,
)


def report(root: Path) -> str:
    """Tables 1 and 2 (and Figures 2-4) of every model under ``root``; returns the markdown.

    First the models: when ``root`` holds model directories (a ``summary.json`` each),
    they are gathered into ``root/models.jsonl`` (:func:`bandits.mnist.reports.gather.gather`);
    the tables are then built from ``models.jsonl`` alone, so a directory that ships only
    that file (and not the models' own files) gives the same tables. The models trained
    with the same settings form one row (:mod:`bandits.mnist.reports.rows`): the mean +-
    standard deviation over seeds of the test error at each model's best validation
    epoch. Writes ``tables.md`` and ``table1.csv``; the figures ``fig2_test_error.png``,
    ``fig3_weights.png`` and ``fig4_snr.png`` are drawn from the models' ``epochs.csv``,
    ``weights_hist.csv`` and ``snr_hist.csv`` where those are under ``root`` (a figure
    without them is left as it is, with a one-line note).
    """
    _refuse_a_users_file(root)
    if any(root.rglob("summary.json")):
        write_models(root, gather(root))
    records = read_models(root)
    if not records:
        raise ValueError(f"report {root}: no models there (no summary.json under it and "
                         f"no {MODELS_FILE})")
    rows, models = rows_table(models_table(records), records)
    lines = (table1(rows, models) + prior_pairs(rows, models) + commands(models)
             + ood_table(rows, models))
    write_csv(table1_rows(rows, models), root / "table1.csv")
    bbb = rows[rows["bbb"]]
    if len(bbb):
        best = best_bbb(rows)
        lines += table2(best, models) + pruning_every_row(bbb, models) + cost_table(bbb, models)
    _draw(root, rows, best if len(bbb) else None)
    speed = root / "speed.json"
    if speed.exists():
        lines += ["", "## Speed", "", speed_markdown(json.loads(speed.read_text()))]
    widths = sorted(set(rows.loc[rows["arch"] == "mlp", "hidden"]))
    lines += ["", "## Notes", "", paper_note(widths), *NOTES]
    text = "\n".join(lines) + "\n"
    write_atomic(root / "tables.md", text)
    return text


# the first line of each table file a report writes: a file of that name that begins
# otherwise is a user's, and the report refuses to write over it
OWN_FIRST_LINES = {"tables.md": "## Table 1: MNIST test error (%)",
                   "table1.csv": "method,run,arch,"}


def _refuse_a_users_file(root: Path) -> None:
    """Before anything is written: a ValueError naming a ``tables.md`` or ``table1.csv``
    in ``root`` that an earlier report did not write (a user's own), never overwritten."""
    for name, first in OWN_FIRST_LINES.items():
        path = root / name
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                line = f.readline().rstrip("\n")
        except FileNotFoundError:
            continue
        if not line.startswith(first):
            raise ValueError(f"report {root}: {path} was not written by a report (it does not "
                             f"begin with {first!r}); move it away, then run report again")


def _draw(root: Path, rows: pd.DataFrame, best: pd.DataFrame | None) -> None:
    """Figures 2-4 of the report, each where the models' files it is drawn from are
    under ``root``; a note names those that are not."""
    figures: list[tuple[str, list[Path], Callable[[Path], None]]] = []
    if best is not None:
        curves, title, kinds = _fig4_curves(root, best)
        snr_colors = {label: KIND_COLORS[k] for label, k in kinds.items() if k in KIND_COLORS}
        figures.append(("fig4_snr.png", list(curves.values()),
                        lambda path: plot_snr(curves, path, title, snr_colors)))
    # Figure 2: each row chosen on validation (every row when none has a validation
    # set), over the seeds whose epochs are under root (its first seed at least);
    # Figure 3 as the paper draws it: one histogram per method
    drawn = rows[rows["chosen"]] if rows["chosen"].any() else rows
    tests = {label: [root / d / "epochs.csv" for d in row["dirs"]
                     if d == row["first"] or (root / d / "epochs.csv").is_file()]
             for label, (_, row) in zip(_labels(drawn), drawn.iterrows())}
    colors = _kind_colors(drawn)
    figures.append(("fig2_test_error.png", [seeds[0] for seeds in tests.values()],
                    lambda path: plot_test_errors(tests, path, colors)))
    shown = rows[~rows["quick"]]
    shown = shown[shown["chosen"]] if shown["chosen"].any() else shown
    hists = {label: root / row["first"]
             for label, (_, row) in zip(_labels(shown), shown.iterrows())}
    hist_colors = _kind_colors(shown)
    figures.append(("fig3_weights.png", [d / "weights_hist.csv" for d in hists.values()],
                    lambda path: plot_weight_hists(hists, path, hist_colors)))
    missing = []  # figures whose models' files are not there (a shipped models.jsonl)
    for name, sources, draw in sorted(figures, key=lambda f: f[0]):
        if sources and all(p.is_file() for p in sources):
            draw(root / name)
        else:
            missing.append((name, sources[0].name if sources else "no rows"))
    if missing:
        print("bandits.mnist: note: not drawn (no models' files to draw from; a figure "
              "already there is left as it is): "
              + ", ".join(f"{name} (from {source})" for name, source in missing),
              file=sys.stderr)


KIND_LABELS = {"sgd": "SGD", "dropout": "dropout", "bbb-gaussian": "BBB, Gaussian prior",
               "bbb-mixture": "BBB, scale-mixture prior"}
"""How the figures name each kind of model (a row's internal run name where two rows of
one figure are of one kind)."""


def _kind_colors(rows: pd.DataFrame) -> dict[str, str]:
    """Each row's legend label (:func:`_labels`) with its kind's colour, where one kind has
    one row in the figure (two rows of one kind keep the cycle's colours, to be told
    apart)."""
    kinds = list(rows["kind"])
    return {label: KIND_COLORS[k] for label, k in zip(_labels(rows), kinds)
            if k in KIND_COLORS and kinds.count(k) == 1}


def _labels(rows: pd.DataFrame) -> list[str]:
    """A figure's legend label per row: its kind's name and its epochs, with its run's
    name where that is not yet unique."""
    labels = [f"{KIND_LABELS.get(r['kind'], r['kind'])}, {r['settings']['epochs']} epochs"
              for _, r in rows.iterrows()]
    return [lab if labels.count(lab) == 1 else f"{lab} ({r['name']})"
            for lab, (_, r) in zip(labels, rows.iterrows())]


def _fig4_curves(root: Path, best: pd.DataFrame
                 ) -> tuple[dict[str, Path], str, dict[str, str]]:
    """Figure 4's curves (label: ``snr_hist.csv``), title and each label's kind, for the
    paper's model: the
    first seed of the scale-mixture row chosen on validation (the paper's Table 2
    network; of the widest MLP with one), beside the Gaussian row chosen on validation at
    that width; without a scale-mixture MLP row, the BBB row with the lowest validation
    error."""
    mlp = best[best["arch"] == "mlp"]
    widths = sorted(set(mlp.loc[mlp["kind"] == "bbb-mixture", "hidden"]))
    if not widths:
        top = best.iloc[0]  # best is ordered by validation error
        return ({top["name"]: root / top["first"] / "snr_hist.csv"}, top["name"],
                {top["name"]: top["kind"]})
    hidden = widths[-1]
    curves, kinds = {}, {}
    for kind, name in (("bbb-mixture", "scale mixture"), ("bbb-gaussian", "Gaussian")):
        picked = mlp[(mlp["kind"] == kind) & (mlp["hidden"] == hidden)]
        if len(picked):
            row = picked.iloc[0]
            label = f"{name}, seed {row['settings']['seed']}"
            curves[label] = root / row["first"] / "snr_hist.csv"
            kinds[label] = kind
    return curves, f"2 x {hidden}, chosen rows", kinds
