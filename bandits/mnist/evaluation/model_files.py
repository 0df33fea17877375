"""What a training command writes beside each model's numbers: the command as run (no
local paths) and the settings as saved, the weight and SNR histograms (Figures 3-4 are
drawn from them), the pruning table as markdown, and the CSV files read back."""

from __future__ import annotations

import csv
import dataclasses
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from bandits.bayes import MLP, snr
from bandits.core import checkpoint
from bandits.core.files import write_csv
from bandits.mnist.evaluation.evaluate import is_bayesian
from bandits.mnist.evaluation.markdown import pipe_table


def command_line(argv: Sequence[str]) -> str:
    """The command as run, with a ``--data-dir`` value hidden (it is a local path)."""
    out, hide = [], False
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
    return "python -m bandits.mnist " + shlex.join(out)  # quoted: it pastes back


# a model's trained weights, ``raw/model.pt``: a checkpoint file (bandits.core.checkpoint) of
# this kind whose identity is the model's settings, so that a redraw refuses another
# model's weights or a damaged file
MODEL_KIND = "bandits.mnist/model"
MODEL_FILE = "raw/model.pt"
# config.json's fields that do not decide the trained weights
_NOT_THE_WEIGHTS = {"run_id", "versions", "out", "overwrite", "threads", "data_dir", "download",
                    "progress", "plots", "checkpoint_every", "workers", "resume", "device",
                    "exact"}  # the same model, rounded alike on every processor or not


def model_identity(config: dict[str, Any]) -> str:
    """The fingerprint of the settings (``config.json``'s values) that decide a model's
    weights."""
    return checkpoint.fingerprint({k: v for k, v in config.items()
                                   if k not in _NOT_THE_WEIGHTS})


def save_model(model: MLP, config: dict[str, Any], path: Path) -> None:
    """Write ``model``'s weights to ``path`` (``raw/model.pt``), marked with the identity
    of its settings ``config``."""
    checkpoint.save(path, MODEL_KIND, {"state_dict": model.state_dict()},
                    identity=model_identity(config))


def load_model_state(path: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The weights in ``path`` of the model whose settings are ``config``.

    Raises:
        ValueError: one line: the file is missing, damaged or truncated, not a model of
            this project, or the weights of another model (another seed, other settings).
    """
    try:
        state = checkpoint.load(path, MODEL_KIND, model_identity(config))
    except checkpoint.CheckpointError as e:
        text = str(e).replace("checkpoint ", "", 1)
        if "belongs to another run" in text:
            text = (f"{path} holds the weights of another model (its settings differ from "
                    f"those in {path.parent.parent / 'config.json'}); copy a model's whole "
                    "directory, not its weights alone")
        elif "nothing to resume" in text:
            text = (f"no {path} (the trained weights stay out of git): train the model "
                    "again to redraw it")
        raise ValueError(text) from None
    weights = state.get("state_dict")
    if not isinstance(weights, dict):
        raise ValueError(f"{path} holds no model weights")
    return weights


def saved_config(cfg: Any) -> dict[str, Any]:
    """The settings (a dataclass) as saved: ``data_dir`` as the user gave it (None when
    not given), as bandits.run records it. Runs made before that hold ``"DIR"`` there
    (:data:`OLD_DATA_DIR`); it is no part of a run's or a model's identity."""
    return dataclasses.asdict(cfg)


# what runs made before data_dir was recorded hold in its place (where one was given)
OLD_DATA_DIR = "DIR"


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """Read a CSV file as rows of strings."""
    with open(path) as f:
        return list(csv.DictReader(f))


def read_csv(path: Path) -> list[dict[str, float]]:
    """Read a CSV of numbers written by :func:`bandits.core.files.write_csv`."""
    with open(path) as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


WEIGHT_BINS = np.linspace(-0.4, 0.4, 801)
SNR_BINS_DB = np.linspace(-40.0, 20.0, 241)


def model_weights(model: MLP, sample: bool) -> np.ndarray:
    """All weights (no biases) as one vector: point weights, or one BBB sample / the mean."""
    parts = []
    for m in model.layers:  # linear layers, or LeNet-5's convolutions too: a weight each
        if hasattr(m, "weight_mu"):
            mu, sigma = cast(Tensor, m.weight_mu), cast(Tensor, m.weight_sigma)
            if sample:
                with torch.no_grad():
                    w = mu + sigma * torch.randn_like(mu)
            else:
                w = mu
        else:
            w = cast(Tensor, m.weight)
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
    """The pruning table (``pruning.md``) as markdown."""
    return pipe_table(pd.DataFrame({
        "Proportion removed": [f"{r['removed_pct']:g}%" for r in rows],
        "# weights left": [f"{int(r['weights_left']):,}" for r in rows],
        "Test error, mean net": [f"{r['test_error_mean']:.2f}%" for r in rows],
        "Test error, sampled avg": [f"{r['test_error_sampled']:.2f}%" for r in rows]}),
        "rrrr")
