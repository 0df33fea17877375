"""What a trained model leaves: its evaluation at the last and at the best validation
epoch, its files (weights, pruning table, histograms, plots) and its ``summary.json``;
and the line printed after each epoch."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from torch import Tensor

from bandits.core import kernels
from bandits.core.files import machine, write_atomic, write_csv, write_json
from bandits.mnist.data.splits import Split
from bandits.mnist.evaluation.evaluate import errors, is_bayesian, ood_check, prune_table
from bandits.mnist.evaluation.model_files import (
    MODEL_FILE,
    pruning_markdown,
    save_model,
    saved_config,
    write_histograms,
)
from bandits.mnist.models.autograd_nets import Trainer
from bandits.mnist.models.classifiers import seed_streams, seeded_generator
from bandits.mnist.models.config import Config, run_label
from bandits.mnist.reports.figures import plot_run
from bandits.mnist.training.training_state import History


def summarise(clf: Trainer, r: int, cfg: Config, out: Path,
               splits: dict[str, Split], history: History, train_wall: float,
               provenance: dict[str, Any]) -> dict[str, Any]:
    """Finish model ``r`` (settings ``cfg``, directory ``out``): its evaluation and files
    (:func:`finish_model`), its ``summary.json`` with timing and provenance, and with
    ``--plots`` its plots."""
    t_r = time.perf_counter()
    best = {"epoch": int(history.best_epoch[r]), "val_error": float(history.best_val[r])}
    summary = finish_model(clf, r, cfg, out, splits, best, history.best)
    rows, runs = history.rows[r], clf.runs
    summary.update({
        "epochs": cfg.epochs,
        "seconds_per_epoch": (float(np.median([x["seconds"] for x in rows])) / runs
                              if rows else math.nan),
        "batched_models": runs,
        "wall_seconds": train_wall / runs + time.perf_counter() - t_r,
        "batch_wall_seconds": train_wall,
        "device": cfg.device, "machine": machine(cfg.device), "kernels": kernels.record(),
        **provenance,
        "settings": saved_config(cfg)})
    write_json(summary, out / "summary.json")
    if cfg.plots and rows:
        plot_run(out, run_label(cfg))
    return summary


def epoch_line(label: str, epoch: int, stats: dict[str, Tensor], val: Tensor, test: Tensor,
               seconds: float) -> str:
    """One printed line per epoch: the numbers of the model, or their range over models."""
    def fmt(t: Tensor, spec: str, unit: str = "") -> str:
        if len(t) == 1:
            return f"{t[0].item():{spec}}{unit}"
        return f"{t.min().item():{spec}}..{t.max().item():{spec}}{unit}"
    return (f"{label} epoch {epoch:4d}  loss {fmt(stats['train_loss'], '.4f')}  "
            f"nll {fmt(stats['nll'], '.4f')}  kl {fmt(stats['kl'], '.4g')}  "
            f"val {fmt(val, '.2f', '%')}  test {fmt(test, '.2f', '%')}  {seconds:.1f}s")


def finish_model(clf: Trainer, r: int, cfg: Config, out: Path,
                 splits: dict[str, Split], best: dict[str, Any],
                 best_params: dict[str, Tensor]) -> dict[str, Any]:
    """Evaluate model ``r`` at its last epoch and at its best validation epoch; write its
    model, pruning table and histograms into ``out``; return its summary (without timing)."""
    gen = seeded_generator(seed_streams(cfg.seed)["evaluation"], cfg.device)  # its noise
    model = clf.to_mlp(r, generator=gen)
    has_val = "val" in splits
    raw = out / "raw"  # ignored by git: the trained weights
    raw.mkdir(exist_ok=True)
    save_model(model, saved_config(cfg), out / MODEL_FILE)
    final = {f"test_error_{k}": v for k, v in errors(model, splits["test"], cfg, True).items()}
    if has_val:
        final.update({f"val_error_{k}": v
                      for k, v in errors(model, splits["val"], cfg, True).items()})
    summary: dict[str, Any] = {"label": run_label(cfg), "final": final}
    if has_val and cfg.epochs > 0:
        best_model = clf.to_mlp(r, best_params, generator=gen)
        summary["best_validation"] = {
            "epoch": best["epoch"], "val_error_mean": best["val_error"],
            **{f"test_error_{k}": v
               for k, v in errors(best_model, splits["test"], cfg, True).items()}}
    summary["ood"], entropy_hist = ood_check(model, splits["test"], cfg)
    write_csv(entropy_hist, out / "ood_entropy.csv")
    if is_bayesian(model):
        prune_rows = prune_table(model, splits["test"], cfg)
        summary["pruning"] = prune_rows
        write_csv(prune_rows, out / "pruning.csv")
        write_atomic(out / "pruning.md", pruning_markdown(prune_rows) + "\n")
    write_histograms(model, out)
    summary["n_weights"] = sum(p.numel() for n, p in model.named_parameters()
                               if not n.endswith("_rho"))
    return summary
