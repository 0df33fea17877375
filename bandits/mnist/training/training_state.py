"""What a training run keeps to continue after an interruption: its checkpoints' kind
and paths, the identity of its settings, the flags a ``--resume`` may change, and the
:class:`History` of its epochs (each model's rows and its best validation epoch)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from bandits.core import checkpoint
from bandits.core.runner import RunKind
from bandits.mnist.evaluation.model_files import MODEL_FILE, saved_config
from bandits.mnist.models.autograd_nets import Trainer
from bandits.mnist.models.config import Config

# the batched trainer's checkpoints ("bandits.mnist/2": before each command had its own
# settings; their settings, and so their fingerprints, held bench's and the others')
CHECKPOINT_KIND = "bandits.mnist/3"
# flags that may be given beside --resume (each declared resume=True in Config): they do
# not change the results
RESUME_FLAGS = {f.name for f in dataclasses.fields(Config) if f.metadata.get("resume")}

# what a training run writes into --out, as name patterns (one model's files, or a grid's
# tables and its batches' checkpoints), and into each model's directory of a grid: an
# --overwrite removes these first (in every model directory of an earlier grid too), so
# that report never counts a model of an earlier run; a user's files stay, and so does a
# folder that holds one
MODEL_FILES = ("config.json", "summary.json", "epochs.csv", "ood_entropy.csv", "pruning.csv",
               "pruning.md", MODEL_FILE, "snr_hist.csv", "weights_hist.csv",
               "test_error.png", "weights.png", "snr.png")
OUTPUTS = (*MODEL_FILES, "models.csv", "settings.csv", "table.md", checkpoint.NAME,
           "checkpoints/batch-<n>.pt",
           # a report's, from the models an --overwrite removes (bandits.mnist.reports.report)
           "models.jsonl", "tables.md", "table1.csv", "fig2_test_error.png",
           "fig3_weights.png", "fig4_snr.png")


# the trainer's kind of run (see bandits.core.runner): --threads, the run's id and the
# versions are recorded in config.json but do not decide the results
TRAINING = RunKind("bandits.mnist", CHECKPOINT_KIND, frozenset(RESUME_FLAGS), OUTPUTS,
                   not_settings=frozenset({"threads", "run_id", "versions"}))


def identity(config: dict[str, Any]) -> str:
    """A fingerprint of the settings that decide a run's results (all but the output
    directory and the flags allowed beside ``--resume``), from ``config.json``'s values."""
    return TRAINING.identity(config)


@dataclass
class History:
    """What the epochs so far have recorded (kept in the checkpoints): each model's rows
    of ``epochs.csv``, its lowest validation error, that epoch, and the flat parameters of
    every model at its own best epoch."""

    rows: list[list[dict[str, float]]]
    best_val: Tensor  # (R,)
    best_epoch: Tensor  # (R,) int64
    best: dict[str, Tensor]  # "mu" (and "rho") (R, P)

    @classmethod
    def start(cls, clf: Trainer) -> History:
        """Nothing recorded yet."""
        runs = clf.runs
        return cls([[] for _ in range(runs)], torch.full((runs,), math.inf),
                   torch.zeros(runs, dtype=torch.long),
                   {k: v.clone() for k, v in clf.params().items()})

    def update_best(self, epoch: int, val: Tensor, clf: Trainer) -> None:
        """Keep the parameters of the models whose validation error ``val`` is lower."""
        better = val < self.best_val
        if better.any():
            self.best_val = torch.where(better, val, self.best_val)
            self.best_epoch[better] = epoch
            idx = better.nonzero().squeeze(1).to(clf.device)
            for k, v in clf.params().items():
                self.best[k][idx] = v[idx]


CHECKPOINTS = "checkpoints"  # the directory of the batches' checkpoints (several batches)


def checkpoint_paths(out: Path, n_batches: int) -> list[Path]:
    """Each batch's checkpoint: ``out/checkpoint.pt`` for one batch, else
    ``out/checkpoints/batch-<k>.pt``."""
    if n_batches == 1:
        return [out / checkpoint.NAME]
    return [out / CHECKPOINTS / f"batch-{k}.pt" for k in range(n_batches)]


def save_checkpoint(path: Path, cfg: Config, epoch: int, clf: Trainer,
                     sched: torch.optim.lr_scheduler.LRScheduler | None, history: History,
                     command: str, wall_seconds: float, run_id: str,
                     batch: list[str] | None = None) -> None:
    """Write the checkpoint ``path``: everything :func:`train_job` needs to continue
    after ``epoch``, and ``batch``, the names of the models it holds (its identity among
    the grid's batches)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.save(path, CHECKPOINT_KIND, {
        "epoch": epoch, "classifiers": clf.state_dict(),
        "scheduler": None if sched is None else sched.state_dict(),
        "rows": history.rows, "best_val": history.best_val,
        "best_epoch": history.best_epoch,
        "best": {k: v.cpu() for k, v in history.best.items()},
        "config": {**saved_config(cfg), "run_id": run_id}, "command": command,
        "wall_seconds": wall_seconds, "batch": batch},
        identity=identity(saved_config(cfg)))
