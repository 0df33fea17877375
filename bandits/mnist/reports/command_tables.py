"""The tables of one training command of several models, in its ``--out``:
``models.csv`` (one row per model), ``settings.csv`` and ``table.md`` (per setting, mean
and standard deviation over its seeds; the setting with the lowest mean validation error
is marked selected, as the paper chose its settings)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bandits.core.files import write_atomic, write_csv
from bandits.mnist.evaluation.markdown import fmt, mean_std, pipe_table
from bandits.mnist.models.config import Config, run_label, setting_name, varying

ERRORS = ("val_error", "test_error", "test_error_sampled", "final_test_error")


def aggregate(out: Path, cfg: Config, models: Sequence[Config], dirs: Sequence[Path],
              summaries: Sequence[dict[str, Any]], wall: float) -> list[dict[str, Any]]:
    """Write ``models.csv``, ``settings.csv`` and ``table.md`` of the command ``cfg``
    (its ``models``, written to ``dirs``, with their ``summaries``) into ``out``; returns
    the rows of ``settings.csv``."""
    fields = varying(models)
    tidy = [_model_row(m, d, s, fields, cfg.epochs)
            for m, d, s in zip(models, dirs, summaries, strict=True)]
    write_csv(tidy, out / "models.csv")
    settings = _setting_rows(tidy, fields)
    write_csv(settings, out / "settings.csv")
    write_atomic(out / "table.md", _settings_markdown(cfg, tidy, settings, summaries[0], wall))
    return settings


def _model_row(m: Config, d: Path, s: dict[str, Any], fields: Sequence[str], epochs: int
               ) -> dict[str, Any]:
    """A row of ``models.csv``: model ``m`` (written to ``d``, summary ``s``)."""
    bv = s.get("best_validation", {})  # none without a validation set (--full-train)
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
        for col in ERRORS:
            row[f"{col}_mean"], row[f"{col}_std"] = mean_std([g[col] for g in group])
        settings.append(row)
    with_val = [r for r in settings if not math.isnan(r["val_error_mean"])]
    chosen = min(with_val, key=lambda r: r["val_error_mean"]) if with_val else None
    for row in settings:  # none is selected without a validation set (--full-train)
        row["selected"] = row is chosen
    return settings


def _settings_markdown(cfg: Config, tidy: list[dict[str, Any]],
                       settings: list[dict[str, Any]], s0: dict[str, Any], wall: float) -> str:
    """``table.md``: the settings rows, and the command, machine and wall time (of ``s0``)."""
    def cell(name: str, col: str, bold: bool = False) -> str:
        return fmt([r[col] for r in tidy if r["setting"] == name], bold=bold)

    table = pd.DataFrame({
        "Setting": [r["setting"] for r in settings],
        "Seeds": [r["seeds"] for r in settings],
        "Validation": [cell(r["setting"], "val_error") for r in settings],
        "Test": [cell(r["setting"], "test_error", bold=True) for r in settings],
        "Test, sampled avg": [cell(r["setting"], "test_error_sampled") for r in settings],
        "Test, last epoch": [cell(r["setting"], "final_test_error") for r in settings],
        "Selected": ["yes" if r["selected"] else "" for r in settings]})
    n_models, workers = len(tidy), s0["workers"]
    return "\n".join([
        f"# {run_label(cfg)}: {n_models} models, {cfg.seeds} seed(s) per setting", "",
        "Test error (%) at each model's epoch of lowest validation error (the posterior-"
        "mean network for BBB), mean +- std over seeds; the selected setting has the "
        "lowest mean validation error.", "",
        pipe_table(table, "lrrrrrc"), "",
        f"Command: `{s0['command']}`; {s0['machine']}; {n_models} models trained as "
        f"{len(settings)} batched model(s) (one per setting) in {workers} worker "
        f"process(es), {cfg.epochs} epoch(s); wall time {wall / 60:.1f} min "
        "(training and evaluation).", ""])
