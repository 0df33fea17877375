"""``models.jsonl``, the report's tidy file: one JSON object per model and line, in the
order of the model directories, holding the model's directory (relative to the report's
directory), its command, its settings, every number of its ``summary.json`` and the
first and last rows of its ``epochs.csv``. The report's tables are built from this file
alone."""

from __future__ import annotations

import json
import math
from pathlib import Path, PurePosixPath
from typing import Any

from bandits.core.files import write_atomic
from bandits.mnist.evaluation.model_files import read_csv

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
    path = model_dir / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {path}: {' '.join(str(e).split())} (a model's "
                         "summary.json is written when it finishes: train it again)") from None
    if not isinstance(summary, dict) or not {"command", "settings"} <= summary.keys():
        raise ValueError(f"{path} is not a bandits.mnist model's summary")
    epochs_path = model_dir / "epochs.csv"
    if epochs_path.is_file():
        epochs = read_csv(epochs_path)
    elif summary.get("epochs", 0) > 0:
        raise ValueError(f"no {epochs_path}, though {path} says it trained "
                         f"{summary['epochs']} epochs: copy the model's whole directory, or "
                         "train it again")
    else:
        epochs = []
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
    records: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file of models' records; run report on the "
                         "models' directories to rewrite it") from None
    for n, line in enumerate(text.splitlines(), 1):
        record = _record(path, n, line)
        name = record["model"]
        if name in seen:
            raise ValueError(f"{path}, line {n}: model {name} again (first on line "
                             f"{seen[name]}); remove the repeated line")
        seen[name] = n
        records.append(record)
    return records


def _record(path: Path, n: int, line: str) -> dict[str, Any]:
    """Line ``n`` of ``path``: a model's record, as :func:`write_models` writes one (no
    line empty; its model, settings with the seed, and final results; every error a
    percentage), or ValueError naming the line and what is wrong."""
    again = "run report on the models' directories to rewrite it"
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if (not isinstance(record, dict) or not isinstance(record.get("model"), str)
            or not isinstance(record.get("settings"), dict)
            or "seed" not in record["settings"]):
        what = ("empty (a model's line emptied?)" if not line.strip() else
                "not a model's record (a line cut short or edited?)")
        raise ValueError(f"{path}, line {n}: {what}; {again}")
    name = record["model"]
    if not isinstance(record.get("final"), dict) or "test_error_mean" not in record["final"]:
        raise ValueError(f"{path}, line {n}: model {name} has no final results "
                         f"(final.test_error_mean), which its summary.json holds; {again}")
    if not isinstance(record.get("best_validation", {}), dict):
        raise ValueError(f"{path}, line {n}: model {name} has best_validation "
                         f"{record['best_validation']!r}, not a record of results; {again}")
    bad = [(f"{part}.{k}", v) for part in ("final", "best_validation")
           for k, v in (record.get(part) or {}).items()
           if k.endswith(("error_mean", "error_sampled")) and not _percent(v)]
    if bad:
        raise ValueError(f"{path}, line {n}: model {name} has {bad[0][0]} "
                         f"{bad[0][1]!r}, not a number from 0 to 100 (an error in percent; "
                         f"a diverged model?), as its {name}/summary.json says; train it "
                         "again, or move its directory out of the grid and run report again")
    return record


def _percent(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and 0 <= v <= 100)


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
