"""``models.jsonl``, the report's tidy file: one JSON object per model and line, in the
order of the model directories, holding the model's directory (relative to the report's
directory), its command, its settings, every number of its ``summary.json`` and the
first and last rows of its ``epochs.csv``. The report's tables are built from this file
alone."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from bandits.mnist.model_files import read_csv
from bandits.outputs import write_atomic

MODELS_FILE = "models.jsonl"
# the rows of a model's epochs.csv that the tables need (the cost after the first epoch,
# the cost and the training NLL after the last), kept in its line of models.jsonl
EPOCH_ROWS = ("first_epoch", "last_epoch")


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
            EPOCH_ROWS[0]: epochs[0] if epochs else None,
            EPOCH_ROWS[1]: epochs[-1] if epochs else None}


def read_models(root: Path) -> list[dict[str, Any]]:
    """The lines of ``root/models.jsonl`` (none when there is no such file)."""
    path = root / MODELS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_dir(record: dict[str, Any]) -> PurePosixPath:
    """The directory of the command that trained a model (relative to the report's
    directory): the model's own, or for a command of several models its parent."""
    model = PurePosixPath(record["model"])
    return model.parent if record["command_models"] > 1 else model


def gather(root: Path) -> list[dict[str, Any]]:
    """Every model under ``root`` as the lines of ``models.jsonl``, ordered by directory.
    The models of a command whose directory is on disk come from their own files (each
    model's ``summary.json`` and ``epochs.csv``); every other line of ``root/models.jsonl``
    stays as it is (a shipped model whose files are not kept, or a run whose directory
    was removed). So a new run beside the shipped ones adds its models, and a rerun into
    a run's directory replaces that run's models."""
    found = [model_record(root, p.parent) for p in root.rglob("summary.json")]
    kept = [r for r in read_models(root) if not (root / run_dir(r)).exists()]
    return sorted(found + kept, key=lambda r: PurePosixPath(r["model"]))


def write_models(root: Path, records: list[dict[str, Any]]) -> None:
    """``root/models.jsonl``: one JSON object per line and model, in the order given."""
    write_atomic(root / MODELS_FILE, "".join(json.dumps(r) + "\n" for r in records))
