"""What the benchmark writes: CSV files, weight and SNR histograms, figures, the table of
one command's models (``table.md``), and ``--report`` over every model under a
directory: the models gathered into one tidy file (``models.jsonl``, one line per
model), and the tables built from that file (``tables.md``, ``table1.csv``), with
Figures 2-4 where the models' own files are there to draw them from."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import torch

from bandits.bayes import MLP, snr
from bandits.mnist.classifiers import n_parameters
from bandits.mnist.config import (
    PRIOR_FIELDS,
    Config,
    lenet5_parameters,
    run_label,
    setting_name,
    varying,
)
from bandits.mnist.evaluate import build_model, is_bayesian, seed_everything
from bandits.outputs import save_figure, write_atomic, write_csv

# Blundell et al. (2015): Table 1 (test error, %) and Table 2 (BBB 2 x 1200, pruned).
PAPER_TABLE1: dict[tuple[str, int], float] = {
    ("sgd", 400): 1.83, ("sgd", 800): 1.84, ("sgd", 1200): 1.88,
    ("dropout", 400): 1.51, ("dropout", 800): 1.33, ("dropout", 1200): 1.36,
    ("bbb-gaussian", 400): 1.82, ("bbb-gaussian", 800): 1.99, ("bbb-gaussian", 1200): 2.04,
    ("bbb-mixture", 400): 1.36, ("bbb-mixture", 800): 1.34, ("bbb-mixture", 1200): 1.32,
}
PAPER_TABLE2: dict[float, tuple[str, float]] = {
    0.0: ("2.4m", 1.24), 0.5: ("1.2m", 1.24), 0.75: ("600k", 1.24),
    0.95: ("120k", 1.29), 0.98: ("48k", 1.39),
}


# --------------------------------------------------------------------------- provenance


def command_line(argv: Sequence[str]) -> str:
    """The command as run, with a ``--data-dir`` value hidden (it is a local path)."""
    out, hide = ["python -m bandits.mnist"], False
    for a in argv:
        if hide:
            out.append("DIR")
            hide = False
        elif a == "--data-dir":
            out.append(a)
            hide = True
        elif a.startswith("--data-dir="):
            out.append("--data-dir=DIR")
        else:
            out.append(a)
    return " ".join(out)


def saved_config(cfg: Config) -> dict[str, Any]:
    """The config as saved: a local ``data_dir`` path is not written out."""
    d = dataclasses.asdict(cfg)
    if d["data_dir"] is not None:
        d["data_dir"] = "DIR"
    return d


# --------------------------------------------------------------------------- CSV files


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """Read a CSV file as rows of strings."""
    with open(path) as f:
        return list(csv.DictReader(f))


def read_csv(path: Path) -> list[dict[str, float]]:
    """Read a CSV of numbers written by :func:`write_csv`."""
    with open(path) as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


# --------------------------------------------------------------------------- one model


WEIGHT_BINS = np.linspace(-0.4, 0.4, 801)
SNR_BINS_DB = np.linspace(-40.0, 20.0, 241)


def model_weights(model: MLP, sample: bool) -> np.ndarray:
    """All weights (no biases) as one vector: point weights, or one BBB sample / the mean."""
    parts = []
    for m in model.layers:
        if hasattr(m, "weight_mu"):
            if sample:
                with torch.no_grad():
                    w = m.weight_mu + m.weight_sigma * torch.randn_like(m.weight_mu)
            else:
                w = m.weight_mu
        else:
            w = m.weight
        parts.append(w.detach().cpu().reshape(-1).numpy())
    return np.concatenate(parts)


def write_histograms(model: MLP, out: Path) -> None:
    """``weights_hist.csv`` (and ``snr_hist.csv`` for BBB): tidy histograms for Figures 3-4."""
    cols: dict[str, np.ndarray] = {}
    if is_bayesian(model):
        cols["sampled"] = model_weights(model, sample=True)
        cols["mean"] = model_weights(model, sample=False)
    else:
        cols["weights"] = model_weights(model, sample=False)
    rows = [{"left": a, "right": b} for a, b in zip(WEIGHT_BINS[:-1], WEIGHT_BINS[1:],
                                                     strict=True)]
    for name, w in cols.items():
        counts, _ = np.histogram(w, WEIGHT_BINS)  # weights outside +-0.4 are left out
        for r, c in zip(rows, counts, strict=True):
            r[name] = int(c)
    write_csv(rows, out / "weights_hist.csv")
    if is_bayesian(model):
        db = 10.0 * np.log10(snr(model).cpu().numpy())
        counts, _ = np.histogram(np.clip(db, SNR_BINS_DB[0], SNR_BINS_DB[-1]), SNR_BINS_DB)
        write_csv([{"left_db": a, "right_db": b, "count": int(c)}
                   for a, b, c in zip(SNR_BINS_DB[:-1], SNR_BINS_DB[1:], counts, strict=True)],
                  out / "snr_hist.csv")


def pruning_markdown(rows: list[dict[str, float]]) -> str:
    """The pruning table as markdown."""
    lines = ["| Proportion removed | # weights left | Test error, mean net | "
             "Test error, sampled avg |", "|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['removed_pct']:g}% | {int(r['weights_left']):,} | "
                     f"{r['test_error_mean']:.2f}% | {r['test_error_sampled']:.2f}% |")
    return "\n".join(lines)


def redraw(run_dir: Path) -> None:
    """Rewrite a run's histogram CSVs and plots from ``raw/model.pt`` (no training)."""
    saved = json.loads((run_dir / "config.json").read_text())
    names = {f.name for f in dataclasses.fields(Config)}
    cfg = Config(**{k: v for k, v in saved.items() if k in names})
    cfg.device, cfg.data_dir = "cpu", None
    seed_everything(cfg.seed)
    model = build_model(cfg)
    model.load_state_dict(torch.load(run_dir / "raw" / "model.pt", map_location="cpu"))
    write_histograms(model, run_dir)
    plot_run(run_dir, run_label(cfg))


# --------------------------------------------------------------------------- figures


def _pyplot() -> Any:
    """matplotlib's pyplot, drawing to files only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_run(out: Path, label: str) -> None:
    """Draw a run's PNGs from its CSV files only (so plots can be redrawn without training)."""
    plt = _pyplot()
    ep = read_csv(out / "epochs.csv")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot([r["epoch"] for r in ep], [r["test_error"] for r in ep], label=f"{label} test")
    if "val_error" in ep[0] and not math.isnan(ep[0]["val_error"]):
        ax.plot([r["epoch"] for r in ep], [r["val_error"] for r in ep], "--",
                label=f"{label} validation")
    ax.set(xlabel="epoch", ylabel="error (%)", yscale="log", title="Test error (Figure 2)")
    _plain_log_ticks(ax)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, out / "test_error.png", dpi=100)
    plt.close(fig)
    _plot_weight_hists({label: out}, out / "weights.png")
    if (out / "snr_hist.csv").exists():
        _plot_snr({label: out / "snr_hist.csv"}, out / "snr.png", label)


def _plain_log_ticks(ax: Any) -> None:
    """Tick labels 1, 2, 3 ... instead of powers of ten on a log-scale error axis."""
    from matplotlib.ticker import ScalarFormatter

    ax.set_yscale("log")
    for axis_fmt in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
        fmt = ScalarFormatter()
        fmt.set_scientific(False)
        axis_fmt(fmt)


def _plot_weight_hists(runs: dict[str, Path], path: Path) -> None:
    """Figure 3: the density of the weights of each run (from its ``weights_hist.csv``)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for label, d in runs.items():
        rows = read_csv(d / "weights_hist.csv")
        centres = [(r["left"] + r["right"]) / 2 for r in rows]
        width = rows[0]["right"] - rows[0]["left"]
        for col in [k for k in rows[0] if k not in ("left", "right", "mean")]:
            counts = np.array([r[col] for r in rows])
            name = label if col == "weights" else f"{label} ({col})"
            ax.plot(centres, counts / counts.sum() / width, label=name)
    ax.set(xlabel="weight", ylabel="density (of the weights within +-0.4)", yscale="log",
           title="Trained weights (Figure 3)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


def _plot_snr(curves: dict[str, Path], path: Path, title: str) -> None:
    """Figure 4: density and CDF of the signal-to-noise ratios, one curve per label (from
    each ``snr_hist.csv``)."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    for label, csv_path in curves.items():
        rows = read_csv(csv_path)
        centres = np.array([(r["left_db"] + r["right_db"]) / 2 for r in rows])
        counts = np.array([r["count"] for r in rows])
        width = rows[0]["right_db"] - rows[0]["left_db"]
        a1.plot(centres, counts / counts.sum() / width, label=label)
        a2.plot(centres + width / 2, np.cumsum(counts) / counts.sum(), label=label)
    a1.set(xlabel="signal-to-noise ratio (dB)", ylabel="density", title=f"SNR density, {title}")
    a2.set(xlabel="signal-to-noise ratio (dB)", ylabel="CDF", title="SNR CDF (Figure 4)")
    if len(curves) > 1:
        a2.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------- one command


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def aggregate(out: Path, cfg: Config, models: Sequence[Config], dirs: Sequence[Path],
              summaries: Sequence[dict[str, Any]], wall: float) -> list[dict[str, Any]]:
    """The tables of a run of several models, in ``out``.

    * ``models.csv``: one row per model (its setting, seed, best-validation epoch, validation
      and test errors at that epoch, and at the last epoch);
    * ``settings.csv`` and ``table.md``: per setting, mean and standard deviation over the
      seeds; the setting with the lowest mean validation error is marked ``selected``
      (the paper chose its settings on the validation set).

    Returns the rows of ``settings.csv``.
    """
    fields = varying(models)
    tidy = [_model_row(m, d, s, fields, cfg.epochs)
            for m, d, s in zip(models, dirs, summaries, strict=True)]
    write_csv(tidy, out / "models.csv")
    settings = _setting_rows(tidy, fields)
    write_csv(settings, out / "settings.csv")
    write_atomic(out / "table.md", _settings_markdown(cfg, len(models), settings, summaries[0],
                                                      wall))
    return settings


def _model_row(m: Config, d: Path, s: dict[str, Any], fields: Sequence[str], epochs: int
               ) -> dict[str, Any]:
    """A row of ``models.csv``: model ``m`` (written to ``d``, summary ``s``)."""
    bv = s.get("best_validation", {})
    return {"model": d.name, "setting": setting_name(m, fields) if fields else run_label(m),
            "seed": m.seed,
            **{f: getattr(m, f) for f in fields},
            "best_epoch": bv.get("epoch", epochs),
            "val_error": bv.get("val_error_mean", math.nan),
            "test_error": bv.get("test_error_mean", s["final"]["test_error_mean"]),
            "test_error_sampled": bv.get("test_error_sampled",
                                         s["final"].get("test_error_sampled", math.nan)),
            "final_test_error": s["final"]["test_error_mean"]}


def _setting_rows(tidy: list[dict[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of ``settings.csv``: mean and std over the seeds of each setting, and
    ``selected`` on the one with the lowest mean validation error (none without one)."""
    settings: list[dict[str, Any]] = []
    for name in dict.fromkeys(r["setting"] for r in tidy):
        group = [r for r in tidy if r["setting"] == name]
        row: dict[str, Any] = {"setting": name, "seeds": len(group),
                               **{f: group[0][f] for f in fields}}
        for col in ("val_error", "test_error", "test_error_sampled", "final_test_error"):
            row[f"{col}_mean"], row[f"{col}_std"] = mean_std([g[col] for g in group])
        settings.append(row)
    with_val = [r for r in settings if not math.isnan(r["val_error_mean"])]
    chosen = min(with_val, key=lambda r: r["val_error_mean"]) if with_val else None
    for row in settings:  # none is selected without a validation set (--full-train)
        row["selected"] = row is chosen
    return settings


def _cell(row: dict[str, Any], col: str) -> str:
    """``mean +- std`` of a column of a settings row (the mean alone for one seed)."""
    if math.isnan(row[f"{col}_mean"]):
        return "-"
    if row["seeds"] == 1:
        return f"{row[f'{col}_mean']:.2f}"
    return f"{row[f'{col}_mean']:.2f} +- {row[f'{col}_std']:.2f}"


def _settings_markdown(cfg: Config, n_models: int, settings: list[dict[str, Any]],
                       s0: dict[str, Any], wall: float) -> str:
    """``table.md``: the settings rows, and the command, machine and wall time (of ``s0``)."""
    lines = [f"# {run_label(cfg)}: {n_models} models, {cfg.seeds} seed(s) per setting", "",
             "Test error (%) at each model's epoch of lowest validation error (the posterior-"
             "mean network for BBB), mean +- std over seeds; the selected setting has the "
             "lowest mean validation error.", "",
             "| Setting | Seeds | Validation | Test | Test, sampled avg | Test, last epoch | "
             "Selected |", "|---|---:|---:|---:|---:|---:|:---:|"]
    for r in settings:
        lines.append(f"| {r['setting']} | {r['seeds']} | {_cell(r, 'val_error')} | "
                     f"**{_cell(r, 'test_error')}** | {_cell(r, 'test_error_sampled')} | "
                     f"{_cell(r, 'final_test_error')} | {'yes' if r['selected'] else ''} |")
    workers = s0.get("workers", 1)
    lines += ["", f"Command: `{s0['command']}`; {s0['machine']}; {n_models} models trained "
              f"as {len(settings)} batched model(s) (one per setting) in {workers} worker "
              f"process(es), {cfg.epochs} epoch(s); wall time {wall / 60:.1f} min "
              "(training and evaluation).", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- --report

# A model found under the report's directory: its directory and its summary.json.
Member = tuple[Path, dict[str, Any]]
# A row of the report: (run directory, settings as JSON) and its models (the seeds).
Group = tuple[tuple[str, str], list[Member]]

# settings that do not change what a model learns (left out when grouping seeds)
_NOT_SETTINGS = {"seed", "seeds", "out", "overwrite", "progress", "plots", "threads", "workers",
                 "device", "data_dir", "download", "checkpoint_every", "resume", "report",
                 "redraw", "bench", "bench_rounds", "quick"}
# settings added after the first runs, with the value a run made before them had: a
# setting at that value and a setting left out group together
_ABSENT = {"arch": "mlp", "estimator": "reparam", "optimizer": "adam", "samples": 1,
           "init_rho": -5.0, "complexity": "mc", "kl_factor": 1.0, "kl_factor_final": None,
           "adam_probe": False}
_KIND_ORDER = {"sgd": 0, "dropout": 1, "bbb-gaussian": 2, "bbb-mixture": 3}
_NOTES = [
    "- 0.1 % is 10 of the 10,000 test images.",
    "- Figures: fig2_test_error.png (Figure 2; the row of each method chosen on "
    "validation), fig3_weights.png (Figure 3, the same rows; BBB: one "
    "sample of the weights), fig4_snr.png (Figure 4, the SNR 10 log10(|mu|/sigma) in "
    "dB of the first seed of the scale-mixture row chosen on validation, the paper's "
    "Table 2 network, beside the Gaussian row chosen on validation).",
]


MODELS = "models.jsonl"  # the tidy file of --report: one line per model
# the rows of a model's epochs.csv that the tables need (the cost after the first epoch,
# the cost and the training NLL after the last), kept in its line of models.jsonl
_EPOCH_ROWS = ("first_epoch", "last_epoch")


def model_record(root: Path, model_dir: Path) -> dict[str, Any]:
    """A model's line of ``models.jsonl``: its directory (relative to ``root``), command,
    settings (its ``config.json``, also in its ``summary.json``), every number of its
    ``summary.json`` (errors, best-validation epoch, out-of-distribution entropies,
    pruning rows, timing, machine) and the first and last rows of its ``epochs.csv``
    (None for a run of no epochs): what the tables need, and nothing of the model's
    histograms, which only the figures use."""
    summary = json.loads((model_dir / "summary.json").read_text())
    epochs = read_csv(model_dir / "epochs.csv") if (model_dir / "epochs.csv").is_file() else []
    return {"model": model_dir.relative_to(root).as_posix(), "command": summary["command"],
            "settings": summary["settings"],
            **{k: v for k, v in summary.items() if k not in ("command", "settings")},
            _EPOCH_ROWS[0]: epochs[0] if epochs else None,
            _EPOCH_ROWS[1]: epochs[-1] if epochs else None}


def read_models(root: Path) -> list[dict[str, Any]]:
    """The lines of ``root/models.jsonl`` (none when there is no such file)."""
    path = root / MODELS
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _run_dir(record: dict[str, Any]) -> PurePosixPath:
    """The directory of the command that trained a model (relative to the report's
    directory): the model's own, or for a command of several models its parent."""
    model = PurePosixPath(record["model"])
    return model.parent if _in_multi_model_run(record) else model


def gather(root: Path) -> list[dict[str, Any]]:
    """Every model under ``root`` as the lines of ``models.jsonl``, ordered by directory.
    The models of a command whose directory is on disk come from their own files (each
    model's ``summary.json`` and ``epochs.csv``); every other line of ``root/models.jsonl``
    stays as it is (a shipped model whose files are not kept, or a run whose directory
    was removed). So a new run beside the shipped ones adds its models, and a rerun into
    a run's directory replaces that run's models."""
    found = [model_record(root, p.parent) for p in root.rglob("summary.json")]
    kept = [r for r in read_models(root) if not (root / _run_dir(r)).exists()]
    return sorted(found + kept, key=lambda r: PurePosixPath(r["model"]))


def write_models(root: Path, records: list[dict[str, Any]]) -> None:
    """``root/models.jsonl``: one JSON object per line and model, in the order given."""
    write_atomic(root / MODELS, "".join(json.dumps(r) + "\n" for r in records))


def report(root: Path) -> str:
    """Tables 1 and 2 (and Figures 2-4) of every model under ``root``; returns the markdown.

    First the models: when ``root`` holds model directories (a ``summary.json`` each),
    they are gathered into ``root/models.jsonl`` (:func:`gather`); the tables are then
    built from ``models.jsonl`` alone, so a directory that ships only that file (and not
    the models' own files) gives the same tables. Models that differ only in their seed
    form one row: the mean +- standard deviation over seeds of the test error at each
    model's best validation epoch. Writes ``tables.md`` and ``table1.csv``; the figures
    ``fig2_test_error.png``, ``fig3_weights.png`` and ``fig4_snr.png`` are drawn from the
    models' ``epochs.csv``, ``weights_hist.csv`` and ``snr_hist.csv`` where those are
    under ``root`` (a figure without them is left as it is, with a one-line note).
    """
    if any(root.rglob("summary.json")):
        write_models(root, gather(root))
    found = [(root / r["model"], r) for r in read_models(root)]
    if not found:
        raise ValueError(f"--report {root}: no models there (no summary.json under it and "
                         f"no {MODELS})")
    rows = _groups(root, found)
    chosen = _chosen(rows)
    lines = (_table1(rows, chosen) + _prior_pairs(rows, chosen) + _commands(rows, found)
             + _ood_table(rows))
    write_csv(_table1_rows(rows, chosen), root / "table1.csv")
    figures: list[tuple[str, list[Path], Any]] = []
    bbb = [(k, m) for k, m in rows if "pruning" in m[0][1] and "quick" not in k[0]]
    if bbb:
        best = _best_bbb(bbb)
        lines += _table2(best) + _pruning_every_row(bbb) + _cost_table(bbb)
        curves, title = _fig4_curves(best)
        figures.append(("fig4_snr.png", list(curves.values()),
                        lambda path: _plot_snr(curves, path, title)))
    # Figure 2: the first seed of each row chosen on validation (every row when none
    # has a validation set); Figure 3 as the paper draws it: one histogram per method
    drawn = [(k, m) for k, m in rows if k in chosen] or rows
    figures.append(("fig2_test_error.png", [m[0][0] / "epochs.csv" for _, m in drawn],
                    lambda path: _plot_test_errors(drawn, path)))
    shown = [(k, m) for k, m in rows if "quick" not in k[0]]
    shown = [(k, m) for k, m in shown if k in chosen] or shown
    hists = {_row_name(k, m): m[0][0] for k, m in shown}
    figures.append(("fig3_weights.png", [d / "weights_hist.csv" for d in hists.values()],
                    lambda path: _plot_weight_hists(hists, path)))
    missing = []  # figures whose models' files are not there (a shipped models.jsonl)
    for name, sources, draw in sorted(figures, key=lambda f: f[0]):
        if all(p.is_file() for p in sources):
            draw(root / name)
        else:
            missing.append((name, sources[0].name))
    if missing:
        print("bandits.mnist: note: not drawn (no models' files to draw from; a figure "
              "already there is left as it is): "
              + ", ".join(f"{name} (from {source})" for name, source in missing),
              file=sys.stderr)
    speed = root / "speed.json"
    if speed.exists():
        lines += ["", "## Speed", "", speed_markdown(json.loads(speed.read_text()))]
    widths = sorted({m[0][1]["settings"]["hidden"] for _, m in rows
                     if m[0][1]["settings"].get("arch", "mlp") == "mlp"})
    lines += ["", "## Notes", "", _paper_note(widths), *_NOTES]
    text = "\n".join(lines) + "\n"
    write_atomic(root / "tables.md", text)
    return text


def _paper_note(widths: list[int]) -> str:
    """The paper's numbers the report sets beside ours, for the widths it holds."""
    names = {"sgd": "SGD", "dropout": "dropout", "bbb-gaussian": "BBB Gaussian",
             "bbb-mixture": "BBB scale mixture"}
    per_width = [f"2 x {w}: " + ", ".join(f"{names[k]} {PAPER_TABLE1[(k, w)]:.2f}"
                                          for k in names)
                 for w in widths if ("sgd", w) in PAPER_TABLE1]
    table1 = f"Table 1 ({'; '.join(per_width)}) and " if per_width else ""
    table2 = ", ".join(f"{err:.2f}" for _, err in PAPER_TABLE2.values())
    return (f"- Paper: Blundell et al. (2015), {table1}Table 2 (pruning of the 2 x 1200 "
            f"scale-mixture model: {table2}; the paper's own Table 1 gives "
            f"{PAPER_TABLE1[('bbb-mixture', 1200)]:.2f} for that model).")


def _kind(s: dict[str, Any]) -> str:
    """A summary's model kind: ``sgd``, ``dropout``, ``bbb-gaussian`` or ``bbb-mixture``."""
    st = s["settings"]
    return f"bbb-{st['prior']}" if st["model"] == "bbb" else st["model"]


def _fmt(values: Sequence[float], bold: bool = False) -> str:
    """``mean +- std`` of ``values`` (the value alone for one)."""
    m, sd = mean_std(values)
    text = f"{m:.2f}" if len(values) == 1 else f"{m:.2f} +- {sd:.2f}"
    return f"**{text}**" if bold else text


def _mean_val_error(members: list[Member]) -> float:
    """The mean over seeds of the lowest validation error (a run on all 60,000 training
    images has none: its test error at the last epoch stands in, and sorts last)."""
    vals = [s.get("best_validation", {}).get("val_error_mean") for _, s in members]
    if any(v is None for v in vals):
        return 100.0 + _mean_final_error(members)
    return float(np.mean(vals))


def _mean_final_error(members: list[Member]) -> float:
    """The mean over seeds of the test error at the last epoch."""
    return np.mean([s["final"]["test_error_mean"] for _, s in members])


def _groups(root: Path, found: list[Member]) -> list[Group]:
    """The models under ``root`` grouped into rows (the same run directory and settings),
    ordered by hidden size, kind and name."""
    groups: dict[tuple[str, str], list[Member]] = {}
    for d, s in found:
        key = (str(d.parent.relative_to(root)) if _in_multi_model_run(s) else
               str(d.relative_to(root)), _settings_key(s["settings"]))
        groups.setdefault(key, []).append((d, s))
    merged = _merge_seed_runs(groups)
    return sorted(merged, key=lambda t: (t[1][0][1]["settings"]["hidden"],
                                         _KIND_ORDER.get(_kind(t[1][0][1]), 9), t[0][0],
                                         _row_name(*t)))


def _settings_key(settings: dict[str, Any], leave_out: frozenset[str] = frozenset()) -> str:
    """What a model learns from, as JSON: its settings less those that never change it
    (and less ``leave_out``), a setting at its value before it existed left out too."""
    return json.dumps({k: v for k, v in settings.items()
                       if k not in _NOT_SETTINGS and k not in leave_out
                       and not (k in _ABSENT and v == _ABSENT[k])}, sort_keys=True)


def _seed(member: Member) -> int:
    """A model's seed."""
    return int(member[1]["settings"]["seed"])


def _merge_seed_runs(groups: dict[tuple[str, str], list[Member]]) -> list[Group]:
    """One row for a setting whose seeds were trained by several commands: run
    directories side by side (the same parent directory) with the same settings and no
    seed in common, such as ``ramp`` (seeds 0-2) and ``ramp-seeds-3-5`` (``--seed 3``).
    The row's run is the rows' names joined by `` + ``; its models are ordered by seed.
    Directories that share a seed stay separate rows (a repeat, not more seeds)."""
    by_setting: dict[tuple[str, str], list[tuple[tuple[str, str], list[Member]]]] = {}
    for key, members in sorted(groups.items()):
        by_setting.setdefault((str(Path(key[0]).parent), key[1]), []).append((key, members))
    out: list[Group] = []
    for runs in by_setting.values():
        rows: list[list[Group]] = []  # the runs joined into each row
        for key, members in runs:
            seeds = {_seed(m) for m in members}
            for row in rows:
                if not seeds & {_seed(m) for _, ms in row for m in ms}:
                    row.append((key, members))
                    break
            else:
                rows.append([(key, members)])
        for row in rows:
            key = row[0][0] if len(row) == 1 else (
                " + ".join(_row_name(k, ms) for k, ms in row), row[0][0][1])
            out.append((key, sorted((m for _, ms in row for m in ms), key=_seed)))
    return out


def _in_multi_model_run(s: dict[str, Any]) -> bool:
    """Whether a model's command trained several models (it has a directory of its own
    under the command's ``--out``)."""
    return s.get("command_models", s.get("batched_models", 1)) > 1


def _row_name(key: tuple[str, str], members: list[Member]) -> str:
    """A row's name: its run directory, and the setting of a batched model's directory."""
    d = members[0][0]
    if (len(members) == 1 and not _in_multi_model_run(members[0][1])) or " + " in key[0]:
        return key[0]
    setting = d.name.rsplit("__seed=", 1)[0] if "__seed=" in d.name else ""
    return f"{key[0]}/{setting}" if setting else key[0]


def _table1(rows: list[Group], chosen: set[tuple[str, str]]) -> list[str]:
    """Table 1: the test error of each row, beside the paper's; ``chosen``: see
    :func:`_chosen`."""
    lines = ["## Table 1: MNIST test error (%)", "",
             "Ours: the test error at each model's epoch of lowest validation error (BBB: the "
             "posterior-mean network, and the average of sampled networks), and at the last "
             "epoch; mean +- standard deviation over seeds.", "",
             "| Method | Run | Units/layer | # weights | Epochs | Seeds | Validation | "
             "Test error | BBB sampled avg | Last epoch | Paper |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, members in rows:
        s0 = members[0][1]
        st = s0["settings"]
        n_w = (lenet5_parameters() if st.get("arch") == "lenet5"
               else n_parameters([st["hidden"]] * st["layers"]))
        bvs = [s.get("best_validation", s["final"]) for _, s in members]
        sampled = [b["test_error_sampled"] for b in bvs if "test_error_sampled" in b]
        mlp = st.get("arch", "mlp") == "mlp"
        paper = PAPER_TABLE1.get((_kind(s0), st["hidden"])) if mlp else None
        vals = [s["best_validation"]["val_error_mean"] for _, s in members
                if "best_validation" in s]
        mark = " (chosen)" if key in chosen else ""
        lines.append(
            f"| {_kind(s0)}{mark} | {_row_name(key, members)} | {st['hidden'] if mlp else '-'} | "
            f"{n_w / 1000:.0f}k | {s0['epochs']} | {len(members)} | "
            f"{_fmt(vals) if len(vals) == len(members) else '-'} | "
            f"{_fmt([b['test_error_mean'] for b in bvs], bold=key in chosen)} | "
            f"{_fmt(sampled) if sampled else '-'} | "
            f"{_fmt([s['final']['test_error_mean'] for _, s in members])} | "
            f"{paper if paper else '-'} |")
    return lines


# two-sided 95 % quantiles of Student's t with 1-30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
         2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
         2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
# the settings that make a BBB model's prior (everything else is its training)
_PRIOR_SETTINGS = frozenset({"prior"}.union(*PRIOR_FIELDS.values()))


def t975(df: int) -> float:
    """The two-sided 95 % quantile of Student's t with ``df`` degrees of freedom (the
    normal's 1.96 beyond 30)."""
    return _T975[df - 1] if df <= len(_T975) else 1.96


def paired_difference(mixture: list[Member], gaussian: list[Member]
                      ) -> dict[str, float] | None:
    """The scale mixture's test error minus the Gaussian's, seed by seed, over the seeds
    both rows trained (a seed's two models share their initialisation and minibatch
    order, so the per-seed difference is free of most of the seed-to-seed spread): the
    number of seeds, on how many the mixture is lower, the mean difference, its standard
    error and 95 % interval (Student's t), and the mean difference of the validation
    errors. None below two common seeds."""
    def errors(members: list[Member], key: str) -> dict[int, float]:
        return {_seed(m): m[1]["best_validation"][key] for m in members
                if "best_validation" in m[1]}
    test_g, val_g = errors(gaussian, "test_error_mean"), errors(gaussian, "val_error_mean")
    test_m, val_m = errors(mixture, "test_error_mean"), errors(mixture, "val_error_mean")
    seeds = sorted(set(test_m) & set(test_g))
    if len(seeds) < 2:
        return None
    diffs = [test_m[k] - test_g[k] for k in seeds]
    mean, sd = mean_std(diffs)
    se = sd / math.sqrt(len(diffs))
    return {"seeds": len(seeds), "lower": sum(d < 0 for d in diffs), "mean": mean, "se": se,
            "low": mean - t975(len(diffs) - 1) * se, "high": mean + t975(len(diffs) - 1) * se,
            "val_mean": float(np.mean([val_m[k] - val_g[k] for k in seeds]))}


def _pair_cells(d: dict[str, float]) -> str:
    """The cells of one seed-by-seed comparison (see :func:`paired_difference`)."""
    return (f"{d['seeds']} | {d['lower']} | {d['mean']:+.3f} | {d['se']:.3f} | "
            f"{d['low']:+.2f} .. {d['high']:+.2f} | {d['val_mean']:+.3f} |")


_PAIR_HEADER = ("Seeds | Mixture lower on | Difference: mean | Standard error | "
                "95 % interval | Validation difference |")


def _prior_pairs(rows: list[Group], chosen: set[tuple[str, str]]) -> list[str]:
    """The two priors' chosen rows compared seed by seed (:func:`paired_difference`)."""
    picked: dict[tuple[str, int], Group] = {}
    for key, members in rows:
        kind, arch, hidden = _method_key(members)
        if key in chosen and kind.startswith("bbb-") and arch == "mlp":
            picked[(kind, hidden)] = (key, members)
    lines: list[str] = []
    for hidden in sorted({h for _, h in picked}):
        if ("bbb-mixture", hidden) not in picked or ("bbb-gaussian", hidden) not in picked:
            continue
        (km, mix), (kg, gau) = picked[("bbb-mixture", hidden)], picked[("bbb-gaussian", hidden)]
        d = paired_difference(mix, gau)
        if d is None:
            continue
        if not lines:
            lines = ["", "## Scale mixture against Gaussian, seed by seed", "",
                     "The chosen rows of the two priors, test error of the mixture minus the "
                     "Gaussian's for each seed both trained (points; 95 % interval of the "
                     "mean difference by Student's t; the validation difference is the same "
                     "for the validation errors).", "",
                     f"| Units/layer | Mixture row | Gaussian row | {_PAIR_HEADER}",
                     "|---:|---|---|---:|---:|---:|---:|---|---:|"]
        lines.append(f"| {hidden} | {_row_name(km, mix)} | {_row_name(kg, gau)} | "
                     f"{_pair_cells(d)}")
    return lines + _same_training_pairs(rows)


def _training_key(members: list[Member]) -> str:
    """A BBB row's training: its settings less its prior's (and less what never changes
    what a model learns)."""
    return _settings_key(members[0][1]["settings"], _PRIOR_SETTINGS)


def _same_training_pairs(rows: list[Group]) -> list[str]:
    """Every scale-mixture row against every Gaussian row trained the same way (the same
    settings but the prior's, in any run directory), seed by seed."""
    by_training: dict[str, dict[str, list[Group]]] = {}
    for key, members in rows:
        kind, arch, _ = _method_key(members)
        if kind.startswith("bbb-") and arch == "mlp":
            by_training.setdefault(_training_key(members), {}).setdefault(kind, []).append(
                (key, members))
    lines: list[str] = []
    for kinds in by_training.values():
        for km, mix in kinds.get("bbb-mixture", []):
            for kg, gau in kinds.get("bbb-gaussian", []):
                d = paired_difference(mix, gau)
                if d is None:
                    continue
                st, sg = mix[0][1]["settings"], gau[0][1]["settings"]
                lines.append(f"| {st['hidden']} | {_row_name(km, mix)} | {_prior_text(st)} | "
                             f"{_row_name(kg, gau)} | {_prior_text(sg)} | "
                             f"{st.get('optimizer', 'adam')} {st['lr']:g}, "
                             f"{_weighting_text(st)}, {st['epochs']} epochs | {_pair_cells(d)}")
    if not lines:
        return []
    return ["", "## Scale mixture against Gaussian under the same training, seed by seed", "",
            "Every pair of rows whose settings differ only in the prior, test error of the "
            "mixture minus the Gaussian's at each model's best-validation epoch, for each seed "
            "both trained (points; columns as above).", "",
            "| Units/layer | Mixture row | Mixture prior | Gaussian row | Gaussian prior | "
            f"Training | {_PAIR_HEADER}",
            "|---:|---|---|---|---|---|---:|---:|---:|---:|---|---:|", *lines]


def _method_key(members: list[Member]) -> tuple[str, str, int]:
    """What one row is chosen among: the method, the network and its hidden size."""
    s0 = members[0][1]
    return _kind(s0), s0["settings"].get("arch", "mlp"), s0["settings"]["hidden"]


def _chosen(rows: list[Group]) -> set[tuple[str, str]]:
    """The rows chosen on the validation set: per method, network and hidden size, the
    row with the lowest mean validation error (rows without a validation set are never
    chosen; see :func:`_selection` for ties)."""
    best: dict[tuple, tuple[tuple[float, int], tuple[str, str]]] = {}
    for key, members in rows:
        if any("best_validation" not in s for _, s in members):
            continue
        group = _method_key(members)
        val = _selection(members)
        if group not in best or val < best[group][0]:
            best[group] = (val, key)
    return {key for _, key in best.values()}


def _selection(members: list[Member]) -> tuple[float, int]:
    """What a row is chosen by: the lowest mean validation error, and at equal errors (to
    1e-6 points: the same number of misclassified images on average; float32 sums
    differ below that) the row with more seeds."""
    return round(_mean_val_error(members), 6), -len(members)


def _table1_rows(rows: list[Group], chosen: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """Table 1 as data (``table1.csv``): per row, the test error at each model's epoch of
    lowest validation error, mean and standard deviation over seeds; ``chosen`` marks the
    row of each method (and network) with the lowest mean validation error; ``samples``,
    ``init_rho``, ``complexity``, ``kl_factor`` and ``kl_factor_final`` are a BBB row's
    Monte Carlo samples per step, initial rho, complexity cost ('mc' or the closed form
    'kl'), the factor on its KL weights (1: the ELBO) and, for a scheduled factor, its
    value at the last epoch (empty: constant)."""
    out = []
    for key, members in rows:
        s0 = members[0][1]
        st = s0["settings"]
        errs = [s.get("best_validation", s["final"])["test_error_mean"] for _, s in members]
        bbb = st["model"] == "bbb"
        out.append({"method": _kind(s0), "run": _row_name(key, members),
                    "arch": st.get("arch", "mlp"),
                    "estimator": st.get("estimator", "reparam") if bbb else "",
                    "prior": st["prior"] if bbb else "",
                    "kl_weighting": st["kl_weighting"] if bbb else "",
                    "hidden": st["hidden"] if st.get("arch", "mlp") == "mlp" else "",
                    "epochs": s0["epochs"], "seeds": len(members),
                    "test_error_mean": round(float(np.mean(errs)), 4),
                    "test_error_std": round(float(np.std(errs, ddof=1)), 4)
                    if len(errs) > 1 else 0.0,
                    "optimizer": st.get("optimizer", "adam"), "lr": st["lr"],
                    "prior_settings": _prior_text(st) if bbb else "",
                    "val_error_mean": round(_mean_val_error(members), 4),
                    "chosen": key in chosen,
                    "samples": st.get("samples", 1) if bbb else "",
                    "init_rho": st.get("init_rho", -5.0) if bbb else "",
                    "complexity": st.get("complexity", "mc") if bbb else "",
                    "kl_factor": st.get("kl_factor", 1.0) if bbb else "",
                    "kl_factor_final": (st.get("kl_factor_final") or "") if bbb else ""})
    return out


def _prior_text(st: dict[str, Any]) -> str:
    """A BBB model's prior: ``pi=0.5 sigma1=e^-0 sigma2=e^-6`` or ``sigma=e^-0``."""
    if st["prior"] == "gaussian":
        return f"sigma=e^-{st['neg_log_prior_sigma']:g}"
    return (f"pi={st['pi']:g} sigma1=e^-{st['neg_log_sigma1']:g} "
            f"sigma2=e^-{st['neg_log_sigma2']:g}")


def _commands(rows: list[Group], found: list[Member]) -> list[str]:
    """Each command once: its models, machine and wall time."""
    lines = ["", "Commands, machine and time (training + evaluation of all the models "
             "of the command):", ""]
    seen_cmd: set[str] = set()
    for _key, members in rows:
        for _, s0 in members:
            if s0["command"] in seen_cmd:
                continue
            seen_cmd.add(s0["command"])
            mine = [s for _, s in found if s["command"] == s0["command"]]
            lines.append(f"- `{s0['command']}`: {len(mine)} model(s); {s0['machine']}; "
                         f"{_time_text(mine)}; {s0['seconds_per_epoch']:.1f} s per training "
                         "epoch and model")
    return lines


def _time_text(summaries: list[dict[str, Any]]) -> str:
    """The time one command took. Its batches (the models that trained together share a
    ``batch_wall_seconds``) ran one after another in one process, so their times add up
    to the wall time; in several worker processes they ran side by side, so with no
    more batches than processes the wall time is the longest batch's."""
    batches: dict[float, float] = {}
    for s in summaries:
        key = s.get("batch_wall_seconds", id(s))
        batches[key] = batches.get(key, 0.0) + s["wall_seconds"]
    total = sum(batches.values()) / 60
    workers = min(summaries[0].get("workers", 1), len(batches))
    if workers <= 1:
        return f"wall time {total:.1f} min"
    if len(batches) <= workers:
        return (f"wall time {max(batches.values()) / 60:.1f} min ({len(batches)} batches "
                f"side by side in {workers} processes; {total:.1f} min of batch time in all)")
    return (f"{total:.1f} min of batch time in all ({len(batches)} batches in {workers} "
            "processes side by side)")


OOD_INPUTS = ("test", "rotated_30", "rotated_60", "rotated_90", "inverted", "noise")


def _ood_table(rows: list[Group]) -> list[str]:
    """The out-of-distribution check of each row: mean predictive entropy on test digits
    and on inputs ever further from them (columns a run made before an input was added
    are left empty)."""
    lines = ["", "## Out-of-distribution check", "",
             f"Mean predictive entropy (nats; the maximum is log 10 = {math.log(10):.3f}) on "
             "test digits, digits rotated by 30, 60 and 90 degrees, inverted digits and "
             "uniform-noise images, and the mean top-class probability on noise (mean over "
             "seeds). BBB: the average of the sampled networks.", "",
             "| Method | Run | Test | Rot. 30 | Rot. 60 | Rot. 90 | Inverted | Noise | "
             "Top prob., noise |",
             "|---|---|" + "---:|" * (len(OOD_INPUTS) + 1)]
    for key, members in rows:
        ood = [s["ood"] for _, s in members]
        lines.append(f"| {_kind(members[0][1])} | {_row_name(key, members)} | "
                     + " | ".join(_mean_cell(ood, f"entropy_{i}") for i in OOD_INPUTS)
                     + f" | {_mean_cell(ood, 'max_prob_noise')} |")
    return lines


def _mean_cell(records: list[dict], key: str) -> str:
    """The mean of ``key`` over the records, or ``-`` when a record lacks it."""
    vals = [r[key] for r in records if key in r]
    return f"{np.mean(vals):.3f}" if vals and len(vals) == len(records) else "-"


def _cost_table(bbb: list[Group]) -> list[str]:
    """Whether the complexity cost acted: per BBB row, the cost (nats: the Monte Carlo
    estimate of KL(q || p), or the closed form) after the first and the last epoch, their
    ratio, and the last epoch's training NLL per image (mean over seeds)."""
    lines = ["", "## What the complexity cost did (mean over seeds)", "",
             "| Method | Run | Optimiser | KL weighting | Cost, epoch 1 | Cost, last epoch | "
             "Last / first | Training NLL, last epoch |",
             "|---|---|---|---|---:|---:|---:|---:|"]
    for key, members in bbb:
        first_rows = [s.get(_EPOCH_ROWS[0]) for _, s in members]
        last_rows = [s.get(_EPOCH_ROWS[1]) for _, s in members]
        if not all(first_rows) or not all(last_rows):
            continue
        first = float(np.mean([e["kl"] for e in first_rows]))
        last = float(np.mean([e["kl"] for e in last_rows]))
        nll = float(np.mean([e["nll"] for e in last_rows]))
        st = members[0][1]["settings"]
        lines.append(f"| {_kind(members[0][1])} | {_row_name(key, members)} | "
                     f"{st.get('optimizer', 'adam')} {st['lr']:g} | {_weighting_text(st)} | "
                     f"{first:,.0f} | {last:,.0f} | {last / first:.2f} | {nll:.4f} |")
    return lines


def _weighting_text(st: dict[str, Any]) -> str:
    """A BBB row's KL weighting, with its factor and a closed-form cost where not the
    defaults: ``uniform``, ``uniform x 0.1``, ``uniform, closed form``."""
    text = st["kl_weighting"]
    if st.get("kl_factor_final") is not None:
        text += f" x {st.get('kl_factor', 1.0):g} -> {st['kl_factor_final']:g}"
    elif st.get("kl_factor", 1.0) != 1.0:
        text += f" x {st['kl_factor']:g}"
    if st.get("complexity", "mc") == "kl":
        text += ", closed form"
    return text


def _best_bbb(bbb: list[Group]) -> dict[tuple[str, str, int], Group]:
    """Per BBB kind, network and hidden size, the row with the lowest mean validation
    error (the model chosen as everything else is: never on the test set)."""
    best: dict[tuple[str, str, int], Group] = {}
    for k, m in sorted(bbb, key=lambda t: _selection(t[1])):
        best.setdefault(_method_key(m), (k, m))
    return best


def _fig4_curves(best: dict[tuple[str, str, int], Group]) -> tuple[dict[str, Path], str]:
    """Figure 4's curves (label: ``snr_hist.csv``) and title, for the paper's model: the
    first seed of the scale-mixture row chosen on validation (the paper's Table 2
    network; of the widest MLP with one), beside the Gaussian row chosen on validation at
    that width; without a scale-mixture MLP row, the BBB row with the lowest validation
    error."""
    mlp = {key: v for key, v in best.items() if key[1] == "mlp"}
    widths = sorted({h for kind, _, h in mlp if kind == "bbb-mixture"})
    if not widths:
        k, members = min(best.values(), key=lambda t: _selection(t[1]))
        return ({_row_name(k, members): members[0][0] / "snr_hist.csv"},
                _row_name(k, members))
    hidden = widths[-1]
    names = {"bbb-mixture": "scale mixture", "bbb-gaussian": "Gaussian"}
    curves = {}
    for kind, name in names.items():
        if (kind, "mlp", hidden) in mlp:
            members = mlp[(kind, "mlp", hidden)][1]
            curves[f"{name}, seed {_seed(members[0])}"] = members[0][0] / "snr_hist.csv"
    return curves, f"2 x {hidden}, chosen rows"


def _network(settings: dict[str, Any]) -> str:
    """``2 x 400`` for the MLP, ``LeNet-5`` for the convolutional network."""
    if settings.get("arch") == "lenet5":
        return "LeNet-5"
    return f"{settings['layers']} x {settings['hidden']}"


def _table2(best: dict[tuple[str, str, int], Group]) -> list[str]:
    """Table 2 (pruning by SNR) of each of the ``best`` rows, beside the paper's."""
    lines: list[str] = []
    for k, members in best.values():
        st = members[0][1]["settings"]
        lines += ["", f"## Table 2: pruning by signal-to-noise ratio ({_row_name(k, members)}, "
                  f"{_network(st)}, last epoch, {len(members)} seed(s))", "",
                  "| Proportion removed | # weights (ours) | Test error, mean net | "
                  "Sampled avg | Paper (2x1200): # weights | Paper test error |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for i, r in enumerate(members[0][1]["pruning"]):
            pw, pe = PAPER_TABLE2.get(r["removed_pct"] / 100, ("-", "-"))
            errs = [s["pruning"][i] for _, s in members]
            lines.append(f"| {r['removed_pct']:g}% | {int(r['weights_left']):,} | "
                         f"{_fmt([e['test_error_mean'] for e in errs])} | "
                         f"{_fmt([e['test_error_sampled'] for e in errs])} | "
                         f"{pw} | {pe}% |")
    return lines


def _pruning_every_row(bbb: list[Group]) -> list[str]:
    """The pruned test error of every BBB row, when they all pruned the same fractions."""
    fracs = [r["removed_pct"] for r in bbb[0][1][0][1]["pruning"]]
    if not all([r["removed_pct"] for r in m[0][1]["pruning"]] == fracs for _, m in bbb):
        return []
    lines = ["", "## Pruning, every BBB row (test error of the posterior-mean "
             "network, last epoch, mean +- std over seeds)", "",
             "| Method | Run | Units/layer | "
             + " | ".join(f"{f:g}% removed" for f in fracs) + " |",
             "|---|---|---:|" + "---:|" * len(fracs)]
    for k, members in bbb:
        cells = [_fmt([s["pruning"][i]["test_error_mean"] for _, s in members])
                 for i in range(len(fracs))]
        lines.append(f"| {_kind(members[0][1])} | {_row_name(k, members)} | "
                     f"{members[0][1]['settings']['hidden']} | " + " | ".join(cells) + " |")
    return lines


def _plot_test_errors(drawn: list[Group], path: Path) -> None:
    """Figure 2: the test error against the epoch of the first seed of each of the rows
    ``drawn`` (the report draws those chosen on validation, one curve per method as in
    the paper)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, members in drawn:
        ep = read_csv(members[0][0] / "epochs.csv")
        ax.plot([r["epoch"] for r in ep], [r["test_error"] for r in ep],
                label=_row_name(key, members))
    ax.set(xlabel="epoch", ylabel="test error (%)", yscale="log",
           title="Test error against epoch (Figure 2; first seed of each chosen row)")
    _plain_log_ticks(ax)
    ax.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------- --bench


def speed_markdown(sp: dict[str, Any]) -> str:
    """The numbers of ``speed.json`` (``--bench``) as a markdown table."""
    lines = ["| Architecture | MLP s/epoch | BBB s/epoch | BBB / MLP | First version: BBB / MLP | "
             "BBB speed-up over the first version | Batched: models | Batched speed-up |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for v in sp["sizes"].values():
        t = v["seconds_per_epoch"]
        lines.append(f"| {v['architecture']} | {t['mlp']:.2f} | {t['bbb']:.2f} | "
                     f"**{v['ratio_bbb_over_mlp']:.2f}** | "
                     f"{v['ratio_bbb_over_mlp_autograd']:.2f} | "
                     f"{v['bbb_speedup_over_autograd']:.2f}x | {v['batched_models']} | "
                     f"**{v['batched_speedup']:.2f}x** |")
    compiled = [v for v in sp["sizes"].values() if "ratio_bbb_compiled_over_mlp" in v]
    if compiled:
        parts = [f"{v['architecture']}: BBB {v['seconds_per_epoch']['bbb-compiled']:.2f} "
                 f"s/epoch, **{v['ratio_bbb_compiled_over_mlp']:.2f}** x the MLP"
                 for v in compiled]
        lines += ["", "With `--compile` (BBB's per-weight work fused by torch.compile): "
                  + "; ".join(parts) + "."]
    timed = ("whole epochs" if sp["batches_timed"] == sp["batches_per_epoch"] else
             f"{sp['batches_timed']} of the {sp['batches_per_epoch']} minibatches of an epoch, "
             "scaled to the epoch")
    lines += ["", f"Medians of {sp['rounds']} interleaved rounds ({timed}); batched speed-up: "
              "the time of that many single-model epochs one after another over the time of "
              f"one batched epoch. `{sp['command']}`; {sp['machine']}."]
    return "\n".join(lines)
