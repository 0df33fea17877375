"""The benchmark's figures, drawn from the CSV files a model wrote (never from the
model itself, so that they can be redrawn without training): a model's plots
(``--plots``, ``redraw DIR``) and the report's Figures 2-4."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from bandits.core.files import save_figure
from bandits.core.style import DPI, OKABE_ITO, styled
from bandits.mnist.evaluation.evaluate import build_model, seed_everything
from bandits.mnist.evaluation.model_files import (
    MODEL_FILE,
    load_model_state,
    read_csv,
    write_histograms,
)
from bandits.mnist.models.config import GRID_FIELDS, Config, run_label

KIND_COLORS = {"sgd": OKABE_ITO[0], "dropout": OKABE_ITO[1], "bbb-gaussian": OKABE_ITO[2],
               "bbb-mixture": OKABE_ITO[3]}
"""The colour of each kind of model in every figure of a report (Figures 2-4 give one
method one colour)."""


def _pyplot() -> Any:
    """matplotlib's pyplot, drawing to files only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plain_log_ticks(ax: Any) -> None:
    """Tick labels 1, 2, 3 ... instead of powers of ten on a log-scale error axis."""
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    ax.set_yscale("log")
    low, high = ax.get_ylim()
    nice = [v * 10.0**k for k in range(-3, 4) for v in (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3,
                                                          4, 5, 6, 8)]
    ticks = [v for v in nice if low <= v <= high]
    if len(ticks) > 12:  # a wide range: 1, 2 and 5 of each decade
        ticks = [v for v in ticks if round(v / 10.0 ** math.floor(math.log10(v)), 6)
                 in (1, 2, 5)]
    if len(ticks) >= 2:  # a label at every tick, between 1.2 and 1.8 % too
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_minor_formatter(NullFormatter())
    fmt = ScalarFormatter()
    fmt.set_scientific(False)
    ax.yaxis.set_major_formatter(fmt)


@styled
def plot_run(out: Path, label: str) -> None:
    """Draw a model's PNGs from its CSV files only: ``test_error.png`` (Figure 2),
    ``weights.png`` (Figure 3) and, for BBB, ``snr.png`` (Figure 4)."""
    plt = _pyplot()
    ep = read_csv(out / "epochs.csv")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot([r["epoch"] for r in ep], [r["test_error"] for r in ep], label=f"{label} test")
    if "val_error" in ep[0] and not math.isnan(ep[0]["val_error"]):
        ax.plot([r["epoch"] for r in ep], [r["val_error"] for r in ep], "--",
                label=f"{label} validation")
    ax.set(xlabel="epoch", ylabel="error (%)", yscale="log", title="Test error (Figure 2)")
    plain_log_ticks(ax)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, out / "test_error.png", dpi=DPI)
    plt.close(fig)
    plot_weight_hists({label: out}, out / "weights.png")
    if (out / "snr_hist.csv").exists():
        plot_snr({label: out / "snr_hist.csv"}, out / "snr.png", label)


def _color(colors: dict[str, str] | None, label: str) -> dict[str, str]:
    """``plot``'s colour keyword for ``label``: none where ``colors`` gives it none."""
    return {"color": colors[label]} if colors and label in colors else {}


@styled
def plot_weight_hists(runs: dict[str, Path], path: Path,
                      colors: dict[str, str] | None = None) -> None:
    """Figure 3: the density of the weights of each model (label: its directory, which
    holds its ``weights_hist.csv``); ``colors``: a colour per label (else the cycle's)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2 + 0.17 * len(runs)))
    for label, d in runs.items():
        rows = read_csv(d / "weights_hist.csv")
        centres = [(r["left"] + r["right"]) / 2 for r in rows]
        width = rows[0]["right"] - rows[0]["left"]
        for col in [k for k in rows[0] if k not in ("left", "right", "mean")]:
            counts = np.array([r[col] for r in rows])
            name = label if col == "weights" else f"{label} ({col})"
            ax.plot(centres, counts / counts.sum() / width, label=name,
                    **_color(colors, label))
    ax.set(xlabel="weight", ylabel="density (of the weights within +-0.4)", yscale="log",
           title="Trained weights (Figure 3; first seed of each chosen row)")
    # below the axes: the curves fill the plot, a spike at zero included
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=1)
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)


@styled
def plot_snr(curves: dict[str, Path], path: Path, title: str,
             colors: dict[str, str] | None = None) -> None:
    """Figure 4: density and CDF of the signal-to-noise ratios, one curve per label (from
    each ``snr_hist.csv``); ``colors``: a colour per label (else the cycle's)."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.8))
    ends = []
    for label, csv_path in curves.items():
        rows = read_csv(csv_path)
        centres = np.array([(r["left_db"] + r["right_db"]) / 2 for r in rows])
        counts = np.array([r["count"] for r in rows])
        width = rows[0]["right_db"] - rows[0]["left_db"]
        # the end bins hold every weight beyond them (the histogram clips): their share is
        # said in words, not drawn as a density spike
        inner = slice(1, -1)
        a1.plot(centres[inner], counts[inner] / counts.sum() / width, label=label,
                **_color(colors, label))
        a2.plot(centres + width / 2, np.cumsum(counts) / counts.sum(), label=label,
                **_color(colors, label))
        ends.append(f"{label}: {100 * counts[0] / counts.sum():.2g} % at or below "
                    f"{rows[0]['right_db']:g} dB, {100 * counts[-1] / counts.sum():.2g} % "
                    f"above {rows[-1]['left_db']:g} dB")
    a1.set(xlabel="signal-to-noise ratio (dB)", ylabel="density", title=f"SNR density, {title}")
    a2.set(xlabel="signal-to-noise ratio (dB)", ylabel="CDF", title="SNR CDF (Figure 4)")
    for ax in (a1, a2):
        ax.legend(fontsize=8, loc="upper left")
    fig.text(0.01, 0.01, "; ".join(ends), fontsize=7, color="0.35")
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)


@styled
def plot_test_errors(curves: dict[str, list[Path]], path: Path,
                     colors: dict[str, str] | None = None) -> None:
    """Figure 2: the test error against the epoch, one line per label: the mean over the
    seeds of its ``epochs.csv`` files, with a band from the lowest to the highest seed
    where there are several (the report draws each row chosen on validation, over the
    seeds whose files it has); ``colors``: a colour per label (else the cycle's)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    counts = set()
    for label, csv_paths in curves.items():
        runs = [read_csv(p) for p in csv_paths]
        epochs = [r["epoch"] for r in runs[0]]
        errors = np.array([[r["test_error"] for r in ep] for ep in runs])
        (line,) = ax.plot(epochs, errors.mean(axis=0),
                          label=f"{label} ({len(runs)} seed{'s' if len(runs) > 1 else ''})",
                          **_color(colors, label))
        if len(runs) > 1:
            ax.fill_between(epochs, errors.min(axis=0), errors.max(axis=0),
                            color=line.get_color(), alpha=0.2, linewidth=0)
        counts.add(len(runs))
    what = ("mean over the seeds, band: lowest to highest seed" if max(counts) > 1
            else "one seed of each row")
    ax.set(xlabel="epoch", ylabel="test error (%)", yscale="log",
           title=f"Test error against epoch (Figure 2)\n{what}")
    plain_log_ticks(ax)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)


# the settings every model's config.json holds (and no other command's)
MODEL_SETTINGS = {"model", "arch", "estimator", "seed"}


def redraw(run_dir: Path) -> None:
    """Rewrite a model's histogram CSVs and plots from ``raw/model.pt`` (no training)."""
    where = f"redraw {run_dir}"
    try:
        saved = json.loads((run_dir / "config.json").read_text())
    except FileNotFoundError:
        raise ValueError(f"{where}: no config.json there: pass a bandits.mnist model's "
                         "directory") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{where}: cannot read its config.json: "
                         f"{' '.join(str(e).split())}") from None
    if not (isinstance(saved, dict) and MODEL_SETTINGS <= saved.keys()):
        raise ValueError(f"{where}: its config.json holds no MNIST model's settings (a "
                         "bandits.run directory, or a grid's top directory?): pass one "
                         "model's directory")
    if any(isinstance(saved.get(k), list) and len(saved[k]) > 1 for k in GRID_FIELDS) or \
            any(run_dir.glob("*/config.json")):  # a grid's settings, or its models below
        models = sorted(p.name for p in run_dir.glob("*/config.json"))
        shown = f" (one of: {', '.join(p.split('/')[0] for p in models[:3])})" if models else ""
        raise ValueError(f"{where}: a grid's top directory, not a model's: pass one "
                         f"model's directory{shown}")
    names = {f.name for f in dataclasses.fields(Config)}
    cfg = Config(**{k: v for k, v in saved.items() if k in names})
    cfg.device, cfg.data_dir = "cpu", None
    weights = load_model_state(run_dir / MODEL_FILE, saved)
    seed_everything(cfg.seed)
    model = build_model(cfg)
    try:
        model.load_state_dict(weights)
    except RuntimeError as e:
        raise ValueError(f"{where}: {run_dir / MODEL_FILE} does not fit the network its "
                         f"config.json describes ({str(e).splitlines()[0]})") from None
    write_histograms(model, run_dir)
    plot_run(run_dir, run_label(cfg))
