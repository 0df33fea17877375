"""A training run: every model of a command trained (a setting's seeds as one batched
model, the settings side by side in worker processes), evaluated, and written out;
checkpoints and resuming.

A run trains a two-hidden-layer ReLU classifier on MNIST, either Bayes by Backprop
(``bbb``, Gaussian or scale-mixture prior) or a same-size baseline (``sgd``: a plain
MLP; ``dropout``: the MLP with dropout ``--dropout`` after each hidden layer, switched
off at test time), and writes into ``--out``:

* ``config.json``: the settings; ``epochs.csv``: per epoch the training loss,
  the NLL (mean per image) and KL terms (the complexity cost, estimated at every
  tenth minibatch), BBB's KL factor (``--kl-factor``, or its schedule), validation
  and test error of the posterior-mean network, and the seconds of the epoch (of
  all the models trained together);
* ``summary.json``: final and best-validation test error (BBB: posterior mean
  and the average of ``--eval-samples`` sampled networks), the out-of-distribution
  entropy check, the pruning table, wall time, device, command and machine;
* ``pruning.csv`` / ``pruning.md`` (BBB): test error with the lowest-SNR
  0/50/75/95/98 % of the weights removed (the paper's Table 2);
* ``weights_hist.csv``, ``snr_hist.csv`` and, with ``--plots``, the plots
  ``test_error.png`` (Figure 2), ``weights.png`` (Figure 3), ``snr.png`` (Figure 4).

``python -m bandits.mnist report DIR`` gathers the models under ``DIR`` into
``DIR/models.jsonl`` and builds the tables from it (:func:`bandits.mnist.report.report`).

**Objective.** For minibatch ``i`` of the ``M`` in an epoch the loss is the
paper's eq. 8, ``F_i = pi_i KL + sum_{j in batch} -log p(y_j | x_j, w)``, with
``KL = log q(w) - log p(w)`` summed over all weights (a Monte Carlo estimate at
the sampled weights, averaged over ``--samples`` draws) and ``pi_i = 2^(M-i) /
(2^M - 1)`` (``--kl-weighting blundell``, the default) or ``1/M`` (``uniform``). Adam
minimises ``F_i / B`` (``B``: the batch size, 128); this constant factor leaves Adam's
steps unchanged; the printed loss is per image. Summed over
an epoch, ``sum_i F_i`` is the negative ELBO of the whole training set. The baselines
minimise the cross-entropy alone.

**Optimiser.** Adam (``--optimizer adam``, the default) on ``F_i / B``, or plain
minibatch gradient descent (``--optimizer sgd``, the paper's) on ``F_i`` itself, so
that ``--lr`` has the paper's meaning (its grid: 1e-3, 1e-4, 1e-5); learning rate
``--lr`` constant or cosine-annealed to ``--lr-min`` (``--lr-schedule cosine``). Under
Adam, whose step does not follow the gradient's scale, the ``blundell`` weighting's
cost lands on a few minibatches of an epoch and barely acts; under SGD both
weightings take one whole complexity cost per epoch. The learning rate and its
schedule are shared by the models of one run (run several commands for several
learning rates).

**Many models at once.** ``--seeds N`` and several values of the grid settings
(``--prior``, ``--pi``, ``--neg-log-sigma1``, ``--neg-log-sigma2``,
``--neg-log-prior-sigma``, ``--kl-weighting``) train every (setting, seed): the seeds of
a setting as one batched model (:mod:`bandits.mnist.classifiers`), in which one pass over
the data feeds all of them, each with its own seed and each training as it would alone;
the settings one after another, or side by side in ``--workers`` processes (one torch
thread each), with the same results for any number of workers: which models share a
batch never depends on it. Each batch keeps its own checkpoint
(``--out/checkpoints/batch-<k>.pt``; ``--out/checkpoint.pt`` for one batch).
Each model then writes the files above into ``--out/<setting>__seed=<seed>/``, and
``--out`` gets ``models.csv`` (one row per model), ``settings.csv`` and ``table.md``
(mean and standard deviation over the seeds per setting; the setting with the lowest
mean validation error is marked selected, as the paper chose its settings).
"""

from __future__ import annotations

import json
import math
import signal
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bandits import checkpoint
from bandits.files import machine, write_atomic, write_csv, write_json
from bandits.mnist.autograd_nets import AutogradNets
from bandits.mnist.classifiers import (
    BatchedClassifiers,
    EpochTrainer,
    RunSpec,
    seed_streams,
    seeded_generator,
)
from bandits.mnist.command_tables import aggregate
from bandits.mnist.config import (
    Config,
    batches,
    expand,
    init_sigma,
    kl_factor_at,
    make_prior,
    run_label,
    setting_name,
    varying,
)
from bandits.mnist.data import Split, load_splits
from bandits.mnist.evaluate import errors, is_bayesian, ood_check, prune_table
from bandits.mnist.figures import plot_run
from bandits.mnist.model_files import (
    MODEL_FILE,
    command_line,
    pruning_markdown,
    save_model,
    saved_config,
    write_histograms,
)
from bandits.outputs import claim_dir, output_dir, release_dir
from bandits.processes import (
    JobsInterrupted,
    available_cores,
    parent_stopped,
    requested_workers,
    run_jobs,
)

# the batched trainer's checkpoints ("bandits.mnist/2": before each command had its own
# settings; their settings, and so their fingerprints, held bench's and the others')
CHECKPOINT_KIND = "bandits.mnist/3"
# flags that may be given beside --resume: they do not change the results
RESUME_FLAGS = {"resume", "epochs", "progress", "plots", "data_dir", "download",
                "checkpoint_every", "workers"}


class Interrupted(Exception):
    """Ctrl-C during training; the message says how to resume."""


def identity(config: dict[str, Any]) -> str:
    """A fingerprint of the settings that decide a run's results (all but the output
    directory and the flags allowed beside ``--resume``), from ``config.json``'s values."""
    return checkpoint.fingerprint({
        k: v for k, v in config.items()
        if k not in RESUME_FLAGS | {"out", "overwrite", "threads", "run_id"}})


def build_classifiers(cfg: Config, models: Sequence[Config]) -> EpochTrainer:
    """The batched classifiers of ``models`` (see :func:`bandits.mnist.config.expand`)."""
    specs = [RunSpec(m.seed, make_prior(m) if cfg.model == "bbb" else None, m.kl_weighting)
             for m in models]
    if cfg.arch == "lenet5" or cfg.estimator != "reparam":
        hidden = None if cfg.arch == "lenet5" else [cfg.hidden] * cfg.layers
        return AutogradNets(cfg.model, specs, hidden=hidden, init_sigma=init_sigma(cfg),
                            estimator=cfg.estimator, samples=cfg.samples,
                            complexity=cfg.complexity, lr=cfg.lr,
                            optimizer=cfg.optimizer, device=cfg.device)
    return BatchedClassifiers(cfg.model, [cfg.hidden] * cfg.layers, specs,
                              init_sigma=init_sigma(cfg), dropout=cfg.dropout,
                              samples=cfg.samples, complexity=cfg.complexity, lr=cfg.lr,
                              optimizer=cfg.optimizer, device=cfg.device,
                              compile=cfg.compile)


# what a training run writes into --out, as name patterns (one model's files, or a grid's
# tables and its batches' checkpoints), and into each model's directory of a grid: an
# --overwrite removes these first (in every model directory of an earlier grid too), so
# that report never counts a model of an earlier run; a user's files stay, and so does a
# folder that holds one
MODEL_FILES = ("config.json", "summary.json", "epochs.csv", "ood_entropy.csv", "pruning.csv",
               "pruning.md", MODEL_FILE, "snr_hist.csv", "weights_hist.csv",
               "test_error.png", "weights.png", "snr.png")
OUTPUTS = (*MODEL_FILES, "models.csv", "settings.csv", "table.md", checkpoint.NAME,
           "checkpoints/batch-[0-9]*.pt",
           # a report's, from the models an --overwrite removes (bandits.mnist.report)
           "models.jsonl", "tables.md", "table1.csv", "fig2_test_error.png",
           "fig3_weights.png", "fig4_snr.png")


def is_model_dir(path: Path) -> bool:
    """Whether ``path`` is a model's directory of an earlier grid (its config.json holds a
    model's settings)."""
    try:
        saved = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(saved, dict) and {"model", "arch", "estimator", "seed"} <= saved.keys()


def model_dirs(out: Path, models: Sequence[Config]) -> list[Path]:
    """Each model's output directory: ``out`` itself for one model, else
    ``out/<setting>__seed=<seed>`` (the setting named by the grid values that vary)."""
    if len(models) == 1:
        return [out]
    fields = varying(models)
    return [out / (f"{setting_name(m, fields)}__seed={m.seed}" if fields else f"seed={m.seed}")
            for m in models]


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
    def start(cls, clf: BatchedClassifiers) -> History:
        """Nothing recorded yet."""
        runs = clf.runs
        return cls([[] for _ in range(runs)], torch.full((runs,), math.inf),
                   torch.zeros(runs, dtype=torch.long),
                   {k: v.clone() for k, v in clf.params().items()})

    def update_best(self, epoch: int, val: Tensor, clf: BatchedClassifiers) -> None:
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


def worker_count(cfg: Config, n_batches: int) -> int:
    """Workers for ``cfg``: ``--workers``, else ``$BANDITS_WORKERS``, else the cores this
    process may use (1 on a GPU); never more than the batches."""
    default = 1 if cfg.device == "cuda" else available_cores()
    return max(1, min(requested_workers(cfg.workers, default), n_batches))


def threads(cfg: Config) -> int:
    """Torch threads per process: ``--threads``, else 1 when the command trains several
    batches (so the results are the same for every number of workers: the rounding of
    the matrix products depends on the threads), else 0 (torch's default)."""
    return cfg.threads or (1 if len(batches(expand(cfg))) > 1 else 0)


@dataclass
class TrainingJob:
    """A training job: one batched model of a command, a setting's seeds (``models``),
    with their output directories and its checkpoint file."""

    cfg: Config  # the command's settings
    models: list[Config]
    dirs: list[Path]
    checkpoint: Path
    command: str
    label: str
    workers: int  # of the command (recorded in each summary)
    command_models: int  # models the command trains (recorded in each summary)
    run_id: str = ""  # this run's own (in config.json and its checkpoints), see run()


def run(cfg: Config, argv: Sequence[str] = (), resume: dict[str, Any] | None = None
        ) -> dict[str, Any]:
    """Train and evaluate every model of ``cfg``; write every output.

    The models of a setting (its seeds) train as one batched model (:func:`train_job`);
    several settings are several batches, trained one after another or side by side in
    :func:`worker_count` worker processes, with the same results either way. One model
    (no grid, one seed) writes its files into ``--out``; several write one directory per
    model and the tables of :func:`bandits.mnist.command_tables.aggregate`. ``resume`` (the state
    of one of the run's checkpoints, see :func:`bandits.mnist.cli.resume_config`) makes
    every batch continue from its own checkpoint, to the same result as an uninterrupted
    run. Returns the summary of the first model (with ``"models"``: how many were
    trained, and ``"out"``).
    """
    t_start = time.perf_counter()
    # the data first: a run that cannot find its data leaves no empty output directory
    splits = load_splits(cfg)
    models = expand(cfg)
    groups = batches(models)
    workers = worker_count(cfg, len(groups))  # a bad $BANDITS_WORKERS: before any file
    if resume is None:
        out = output_dir(cfg.out, f"mnist-{run_label(cfg)}", cfg.overwrite, OUTPUTS,
                         is_model_dir, dir_outputs=MODEL_FILES, kind="bandits.mnist")
    else:
        out = Path(cfg.out)
        claim_dir(out, OUTPUTS)  # one run at a time in a directory
    # a run's id, kept by its resumes: a checkpoint of another run with the same settings
    # (copied in) is refused on --resume
    run_id = (resume or {}).get("config", {}).get("run_id") or uuid.uuid4().hex
    try:  # the claim is given up (its lock file removed) however the run ends
        return _run_into(out, cfg, argv, resume, splits, models, groups, workers, t_start,
                         run_id)
    finally:
        release_dir(out)


def _run_into(out: Path, cfg: Config, argv: Sequence[str], resume: dict[str, Any] | None,
              splits: dict[str, Split], models: list[Config], groups: list[list[int]],
              workers: int, t_start: float, run_id: str) -> dict[str, Any]:
    """:func:`run` once its output directory ``out`` is claimed."""
    dirs = model_dirs(out, models)
    for d, m in zip(dirs, models, strict=True):
        d.mkdir(parents=True, exist_ok=True)
        write_json({**saved_config(m), "run_id": run_id}, d / "config.json")
    if len(models) > 1:
        write_json({**saved_config(cfg), "run_id": run_id}, out / "config.json")
    command = command_line(argv)
    if resume is not None:
        command = f"{resume['command']} (resumed with: {command})"
    label = run_label(cfg) if len(models) == 1 else f"{run_label(cfg)} x{len(models)}"
    fields = varying(models)
    print(f"bandits.mnist: {len(models)} model{'s' if len(models) > 1 else ''} "
          f"({len(groups)} batch{'es' if len(groups) > 1 else ''} of seeds: "
          f"{run_label(cfg)}), {cfg.epochs} epochs of "
          f"{len(splits['train'].y):,} images, batch {cfg.batch_size}, "
          f"{workers} worker{'s' if workers > 1 else ''}, device {cfg.device} -> {out}",
          flush=True)
    jobs = [TrainingJob(cfg, [models[i] for i in g], [dirs[i] for i in g], path, command,
                  label if len(groups) == 1 else
                  f"{run_label(cfg)} {setting_name(models[g[0]], fields)} x{len(g)}",
                  workers, len(models), run_id)
            for g, path in zip(groups, checkpoint_paths(out, len(groups)), strict=True)]
    if workers == 1:
        done = [train_job(job, splits, resume is not None) for job in jobs]
    else:
        done = _in_workers(jobs, workers, resume is not None, out)
    summaries: list[dict[str, Any]] = [{}] * len(models)
    for g, batch_summaries in zip(groups, done, strict=True):
        for i, s in zip(g, batch_summaries, strict=True):
            summaries[i] = s
    if len(models) > 1:
        wall = (time.perf_counter() - t_start if resume is None
                else sum(b[0]["batch_wall_seconds"] for b in done))
        aggregate(out, cfg, models, dirs, summaries, wall=wall)
    return {**summaries[0], "models": len(models), "out": str(out)}


def train_job(job: TrainingJob, splits: dict[str, Split], resumed: bool = False
                ) -> list[dict[str, Any]]:
    """Train and evaluate one batch (:class:`TrainingJob`); returns its models' summaries.

    A checkpoint is written after an epoch once ``--checkpoint-every`` seconds have
    passed, and after the last one; with ``resumed`` the batch continues from its
    checkpoint (or starts, if it has none yet)."""
    cfg, models, dirs = job.cfg, job.models, job.dirs
    t_start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    clf = build_classifiers(cfg, models)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(clf.optimizer, max(cfg.epochs, 1),
                                                        cfg.lr_min)
             if cfg.lr_schedule == "cosine" else None)
    history = History.start(clf)
    first_epoch, wall_before = 1, 0.0
    if resumed and job.checkpoint.is_file():
        state = checkpoint.load(job.checkpoint, CHECKPOINT_KIND, identity(saved_config(cfg)))
        clf.load_state_dict(state["classifiers"])
        if sched is not None:
            sched.load_state_dict(state["scheduler"])
        history = History(state["rows"], state["best_val"], state["best_epoch"],
                          {k: v.to(cfg.device) for k, v in state["best"].items()})
        first_epoch, wall_before = state["epoch"] + 1, state["wall_seconds"]
    schemes = [m.kl_weighting for m in models]
    saved, last_save = first_epoch - 1, time.perf_counter()
    for epoch in range(first_epoch, cfg.epochs + 1):
        try:  # Ctrl-C anywhere in the epoch (training, evaluation, the checkpoint write)
            saved, last_save = _run_epoch(job, epoch, clf, sched, history, splits, dirs,
                                      schemes, [kl_factor_at(m, epoch) for m in models],
                                      saved, last_save,
                                      wall_before - t_start)
        except KeyboardInterrupt:
            kept = (f"resume after epoch {saved} with: python -m bandits.mnist --resume "
                    f"{cfg.out}" if saved > 0 else "no checkpoint was written yet")
            raise Interrupted(f"interrupted in epoch {epoch}; {kept}") from None
    train_wall = wall_before + time.perf_counter() - t_start
    provenance = {"command": job.command, "workers": job.workers,
                  "command_models": job.command_models}
    try:
        return [_summarise(clf, r, m, d, splits, history, train_wall, provenance)
                for r, (m, d) in enumerate(zip(models, dirs, strict=True))]
    except KeyboardInterrupt:  # the last epoch's checkpoint is always written
        raise Interrupted(f"interrupted after the last epoch; resume with: python -m "
                          f"bandits.mnist --resume {cfg.out}") from None


def _run_epoch(job: TrainingJob, epoch: int, clf: BatchedClassifiers,
           sched: torch.optim.lr_scheduler.LRScheduler | None, history: History,
           splits: dict[str, Split], dirs: list[Path], schemes: list[str],
           factors: list[float], saved: int, last_save: float, wall_offset: float
           ) -> tuple[int, float]:
    """One epoch of :func:`train_job`: train, evaluate, log, and write the checkpoint
    when it is due (the wall time so far is ``wall_offset + time.perf_counter()``).
    Returns the epoch of the last checkpoint written and when it was written."""
    cfg, runs = job.cfg, clf.runs
    t0 = time.perf_counter()
    lr = clf.optimizer.param_groups[0]["lr"]
    stats = clf.train_epoch(splits["train"].x, splits["train"].y, cfg.batch_size, schemes,
                            desc=f"{job.label} epoch {epoch}/{cfg.epochs}",
                            progress=cfg.progress, kl_factor=factors)
    t_train = time.perf_counter() - t0
    bad = ~torch.isfinite(stats["train_loss"])
    if bad.any():  # never write a NaN model's numbers (nor NaN into summary.json)
        r = int(bad.nonzero()[0])
        raise Diverged(f"{job.models[r].model} seed {job.models[r].seed} ({job.label}) "
                       f"diverged in epoch {epoch}: its training loss is not finite; lower "
                       f"--lr (it is {cfg.lr:g})")
    if sched is not None:
        sched.step()
    val = (clf.errors(splits["val"].x, splits["val"].y) if "val" in splits
           else torch.full((runs,), math.nan))
    test = clf.errors(splits["test"].x, splits["test"].y)
    t_eval = time.perf_counter() - t0 - t_train
    for r in range(runs):
        history.rows[r].append({
            "epoch": epoch, "lr": lr, "nll": stats["nll"][r].item(),
            "kl": stats["kl"][r].item(), "train_loss": stats["train_loss"][r].item(),
            **({"kl_factor": factors[r]} if clf.bayesian else {}),
            "val_error": val[r].item(), "test_error": test[r].item(),
            "seconds": t_train, "eval_seconds": t_eval})
        write_csv(history.rows[r], dirs[r] / "epochs.csv")
    history.update_best(epoch, val, clf)
    print(epoch_line(job.label, epoch, stats, val, test, t_train), flush=True)
    if epoch < cfg.epochs and time.perf_counter() - last_save < cfg.checkpoint_every:
        return saved, last_save
    _save_checkpoint(job.checkpoint, cfg, epoch, clf, sched, history, job.command,
                     wall_offset + time.perf_counter(), job.run_id)
    return epoch, time.perf_counter()


class Diverged(Exception):
    """A model's training loss became NaN or infinite (exit status 3, as bandits.run's)."""


def _train_in_worker(job: TrainingJob, resumed: bool) -> list[dict[str, Any]]:
    """:func:`train_job` in a pool worker: its own data, one torch thread unless
    ``--threads`` says otherwise, and Ctrl-C (passed on by the parent) on. A batch taken
    after the parent's Ctrl-C (the pool hands out queued batches that cannot be
    cancelled), or whose Ctrl-C came while SIGINT was still ignored, never starts."""
    torch.set_num_threads(threads(job.cfg))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if parent_stopped():
            raise Interrupted(f"{job.label} not started")
        return train_job(job, load_splits(job.cfg), resumed)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _in_workers(jobs: list[TrainingJob], workers: int, resumed: bool, out: Path
                ) -> list[list[dict[str, Any]]]:
    """Every batch of ``jobs`` in the shared pool of ``workers`` processes
    (:func:`bandits.processes.run_jobs`); their summaries in order. Ctrl-C is passed on
    once to every worker (each stops where it is and keeps its last checkpoint) and ends
    in :class:`Interrupted`; a worker that dies ends the run with a ``ValueError`` of one
    line (every checkpoint written stays good), never a hang."""
    resume = f"python -m bandits.mnist --resume {out}"
    try:
        ended, stopped = run_jobs(partial(_train_in_worker, resumed=resumed), jobs, workers), False
    except JobsInterrupted as e:
        ended, stopped = e.ended, True
    for x in ended:  # an error of the training itself, raised as it came
        if x.error is not None and not x.died and not isinstance(
                x.error, Interrupted | KeyboardInterrupt):
            raise x.error
    died = next((x.job for x in ended if x.died), None)
    if died is not None:
        raise ValueError(f"a worker died while training {died.label}; every checkpoint "
                         f"written stays good; resume with: {resume}")
    if stopped or any(x.error is not None for x in ended):
        raise Interrupted(f"interrupted; every batch keeps its last checkpoint; resume "
                          f"with: {resume}")
    return [x.result for x in ended]


def _save_checkpoint(path: Path, cfg: Config, epoch: int, clf: BatchedClassifiers,
                     sched: torch.optim.lr_scheduler.LRScheduler | None, history: History,
                     command: str, wall_seconds: float, run_id: str) -> None:
    """Write the checkpoint ``path``: everything :func:`train_job` needs to continue
    after ``epoch``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.save(path, CHECKPOINT_KIND, {
        "epoch": epoch, "classifiers": clf.state_dict(),
        "scheduler": None if sched is None else sched.state_dict(),
        "rows": history.rows, "best_val": history.best_val,
        "best_epoch": history.best_epoch,
        "best": {k: v.cpu() for k, v in history.best.items()},
        "config": {**saved_config(cfg), "run_id": run_id}, "command": command,
        "wall_seconds": wall_seconds},
        identity=identity(saved_config(cfg)))


def _summarise(clf: BatchedClassifiers, r: int, cfg: Config, out: Path,
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
        "device": cfg.device, "machine": machine(cfg.device), **provenance,
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


def finish_model(clf: BatchedClassifiers, r: int, cfg: Config, out: Path,
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
