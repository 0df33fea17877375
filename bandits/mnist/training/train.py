"""A training run: every model of a command trained (a setting's seeds as one batched
model, the settings side by side in worker processes), evaluated, and written out;
checkpoints and resuming.

A run trains a two-hidden-layer ReLU classifier on MNIST, either Bayes by Backprop
(``bbb``, Gaussian or scale-mixture prior) or a same-size baseline (``sgd``: a plain
MLP; ``dropout``: the MLP with dropout ``--dropout`` after each hidden layer, switched
off at test time), and writes into ``--out``:

* ``config.json``: the settings and the versions; ``epochs.csv``: per epoch the training loss,
  the NLL (mean per image) and KL terms (the complexity cost, estimated at every
  tenth minibatch), BBB's KL factor (``--kl-factor``, or its schedule), validation
  and test error of the posterior-mean network, and the seconds of the epoch (of
  all the models trained together);
* ``summary.json``: final and best-validation test error (BBB: posterior mean
  and the average of ``--eval-samples`` sampled networks), the out-of-distribution
  entropy check, the pruning table, wall time, device, command, machine and versions;
* ``pruning.csv`` / ``pruning.md`` (BBB): test error with the lowest-SNR
  0/50/75/95/98 % of the weights removed (the paper's Table 2);
* ``weights_hist.csv``, ``snr_hist.csv`` and, with ``--plots``, the plots
  ``test_error.png`` (Figure 2), ``weights.png`` (Figure 3), ``snr.png`` (Figure 4).

``python -m bandits.mnist report DIR`` gathers the models under ``DIR`` into
``DIR/models.jsonl`` and builds the tables from it (:func:`bandits.mnist.reports.report.report`).

The objective and the optimiser: :mod:`bandits.mnist.models.classifiers`.

**Many models at once.** ``--seeds N`` and several values of the grid settings
(``--prior``, ``--pi``, ``--neg-log-sigma1``, ``--neg-log-sigma2``,
``--neg-log-prior-sigma``, ``--kl-weighting``) train every (setting, seed): the seeds of
a setting as one batched model (:mod:`bandits.mnist.models.classifiers`), in which one pass over
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
from typing import Any, cast

import torch

from bandits.core import checkpoint
from bandits.core.files import package_versions, write_csv, write_json
from bandits.core.outputs import output_dir, refuse_taken
from bandits.core.processes import JobsInterrupted, parent_stopped, run_jobs
from bandits.core.runner import Diverged
from bandits.core.runner import worker_count as worker_count_of
from bandits.mnist.data.splits import Split, load_splits
from bandits.mnist.evaluation.model_files import command_line, saved_config
from bandits.mnist.models.autograd_nets import AutogradNets, Trainer
from bandits.mnist.models.classifiers import BatchedClassifiers, RunSpec
from bandits.mnist.models.config import Config, batches, expand, run_label, setting_name, varying
from bandits.mnist.models.priors import init_sigma, kl_factor_at, make_prior
from bandits.mnist.reports.command_tables import aggregate
from bandits.mnist.training.finish import epoch_line, summarise
from bandits.mnist.training.training_state import (
    CHECKPOINT_KIND,
    MODEL_FILES,
    OUTPUTS,
    TRAINING,
    History,
    checkpoint_paths,
    identity,
    save_checkpoint,
)


class Interrupted(Exception):
    """Ctrl-C during training; the message says how to resume."""


def build_classifiers(cfg: Config, models: Sequence[Config]) -> Trainer:
    """The batched classifiers of ``models`` (see :func:`bandits.mnist.models.config.expand`)."""
    specs = [RunSpec(m.seed, make_prior(m) if cfg.model == "bbb" else None,
                     cast(str, m.kl_weighting)) for m in models]  # one model's: one value
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


def is_model_dir(path: Path) -> bool:
    """Whether ``path`` is a model's directory of an earlier grid: its config.json holds a
    model's settings and its name is the one a grid gives that model (:func:`model_dirs`:
    ``seed=<seed>`` or ``<setting>__seed=<seed>``). A copy of one under another name (a
    user's backup) is not: an ``--overwrite`` leaves it alone."""
    try:
        saved = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    if not (isinstance(saved, dict) and {"model", "arch", "estimator", "seed"} <= saved.keys()):
        return False
    *setting, seed = path.name.split("__")
    if seed != f"seed={saved['seed']}":
        return False
    for part in setting:  # each ``<setting>=<its value>`` of this model (setting_name)
        key, _, value = part.partition("=")
        if key not in saved or value not in (str(saved[key]), f"{saved[key]:g}"
                                             if isinstance(saved[key], float) else None):
            return False
    return True


def model_dirs(out: Path, models: Sequence[Config]) -> list[Path]:
    """Each model's output directory: ``out`` itself for one model, else
    ``out/<setting>__seed=<seed>`` (the setting named by the grid values that vary)."""
    if len(models) == 1:
        return [out]
    fields = varying(models)
    return [out / (f"{setting_name(m, fields)}__seed={m.seed}" if fields else f"seed={m.seed}")
            for m in models]


def worker_count(cfg: Config, n_batches: int) -> int:
    """Workers for ``cfg``: ``--workers``, else ``$BANDITS_WORKERS``, else the cores this
    process may use (1 on a GPU); never more than the batches."""
    return worker_count_of(cfg.workers, n_batches, 1 if cfg.device == "cuda" else None)


def threads(cfg: Config) -> int:
    """Torch threads per process: ``--threads``, else 1 when the command trains several
    batches (so the results are the same for every number of workers: the rounding of
    the matrix products depends on the threads) or in exact mode (so that they are the same
    on a machine with other cores), else 0 (torch's default)."""
    return cfg.threads or (1 if cfg.exact or len(batches(expand(cfg))) > 1 else 0)


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

    def batch_names(self) -> list[str]:
        """The models' directories as its checkpoint names them, relative to the run's
        folder (``.`` for a one-model run: the folder itself, which may be moved)."""
        return ["." if d == self.checkpoint.parent else d.name for d in self.dirs]


def run(cfg: Config, argv: Sequence[str] = (), resume: dict[str, Any] | None = None
        ) -> dict[str, Any]:
    """Train and evaluate every model of ``cfg``; write every output.

    The models of a setting (its seeds) train as one batched model (:func:`train_job`);
    several settings are several batches, trained one after another or side by side in
    :func:`worker_count` worker processes, with the same results either way. One model
    (no grid, one seed) writes its files into ``--out``; several write one directory per
    model and the tables of :func:`bandits.mnist.reports.command_tables.aggregate`.
    ``resume`` (the state of one of the run's checkpoints, see
    :func:`bandits.mnist.cli.config_and_checkpoint_to_resume`) makes every batch continue
    from its own checkpoint, to the same result as an uninterrupted run. Returns the
    summary of the first model (with ``"models"``: how many were trained, and ``"out"``).
    """
    t_start = time.perf_counter()
    if resume is None:  # a taken directory is said at once, before the data loads
        refuse_taken(cfg.out, cfg.overwrite)
    # the data first: a run that cannot find its data leaves no empty output directory
    splits = load_splits(cfg)
    models = expand(cfg)
    groups = batches(models)
    workers = worker_count(cfg, len(groups))  # a bad $BANDITS_WORKERS: before any file
    out = (output_dir(cfg.out, f"mnist-{run_label(cfg)}", cfg.overwrite, OUTPUTS,
                      is_model_dir, dir_outputs=MODEL_FILES, kind="bandits.mnist")
           if resume is None else Path(cast(str, cfg.out)))  # a resume's settings name it
    # a run's id, kept by its resumes: a checkpoint of another run with the same settings
    # (copied in) is refused on --resume
    run_id = (resume or {}).get("config", {}).get("run_id") or uuid.uuid4().hex
    with TRAINING.claimed(out):  # one run at a time in a directory, given up however it ends
        return _run_into(out, cfg, argv, resume, splits, models, groups, workers, t_start,
                         run_id)


def _run_into(out: Path, cfg: Config, argv: Sequence[str], resume: dict[str, Any] | None,
              splits: dict[str, Split], models: list[Config], groups: list[list[int]],
              workers: int, t_start: float, run_id: str) -> dict[str, Any]:
    """:func:`run` once its output directory ``out`` is claimed."""
    dirs = model_dirs(out, models)
    command = command_line(argv)
    if resume is not None:
        command = f"{resume['command']} (resumed with: {command})"
    label = run_label(cfg) if len(models) == 1 else f"{run_label(cfg)} x{len(models)}"
    fields = varying(models)
    n_threads = torch.get_num_threads()  # in this process; each worker sets its own
    print(f"bandits.mnist: {len(models)} model{'s' if len(models) > 1 else ''} "
          f"({len(groups)} batch{'es' if len(groups) > 1 else ''} of seeds: "
          f"{run_label(cfg)}), {cfg.epochs} epochs of "
          f"{len(splits['train'].y):,} images, batch {cfg.batch_size}, "
          f"{workers} worker{'s' if workers > 1 else ''}, device {cfg.device}, "
          f"{n_threads} torch thread{'s' if n_threads > 1 else ''} (--threads) -> {out}",
          flush=True)
    jobs = [TrainingJob(cfg, [models[i] for i in g], [dirs[i] for i in g], path, command,
                  label if len(groups) == 1 else
                  f"{run_label(cfg)} {setting_name(models[g[0]], fields)} x{len(g)}",
                  workers, len(models), run_id)
            for g, path in zip(groups, checkpoint_paths(out, len(groups)), strict=True)]
    for job in jobs if resume is not None else ():  # every batch's checkpoint its own,
        if job.checkpoint.is_file():  # before any batch trains or any file is rewritten
            own_state(job)
    run_record = {"run_id": run_id, "versions": package_versions()}  # as bandits.run's
    for d, m in zip(dirs, models, strict=True):
        d.mkdir(parents=True, exist_ok=True)
        write_json({**saved_config(m), **run_record}, d / "config.json")
    if len(models) > 1:
        write_json({**saved_config(cfg), **run_record}, out / "config.json")
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


def own_state(job: TrainingJob) -> dict[str, Any]:
    """The state in ``job``'s checkpoint, refused (:class:`CheckpointError`) where it is
    another run's or another batch's (a copy over this one)."""
    state = checkpoint.load(job.checkpoint, CHECKPOINT_KIND, identity(saved_config(job.cfg)))
    batch = job.batch_names()
    if state.get("batch") is not None and state["batch"] != batch \
            and batch != ["."]:  # one model: the run's folder, under any name it has
        raise checkpoint.CheckpointError(
            f"{job.checkpoint} holds the models {', '.join(state['batch'])}, not this "
            f"batch's {', '.join(batch)} (was it copied over?); copy back its own "
            "checkpoint or start again with --overwrite")
    return state


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
        state = own_state(job)
        clf.load_state_dict(state["classifiers"])
        if sched is not None:
            sched.load_state_dict(state["scheduler"])
        history = History(state["rows"], state["best_val"], state["best_epoch"],
                          {k: v.to(cfg.device) for k, v in state["best"].items()})
        first_epoch, wall_before = state["epoch"] + 1, state["wall_seconds"]
    schemes = [cast(str, m.kl_weighting) for m in models]  # one model's: one value
    saved, last_save = first_epoch - 1, time.perf_counter()
    for epoch in range(first_epoch, cfg.epochs + 1):
        try:  # Ctrl-C anywhere in the epoch (training, evaluation, the checkpoint write)
            saved, last_save = _run_epoch(job, epoch, clf, sched, history, splits, dirs,
                                      schemes, [kl_factor_at(m, epoch) for m in models],
                                      saved, last_save, wall_before - t_start)
        except KeyboardInterrupt:
            again = TRAINING.resume_command(cfg.out, cfg.exact)  # type: ignore[arg-type]
            kept = (f"resume after epoch {saved} with: {again}"
                    if saved > 0 else "no checkpoint was written yet")
            raise Interrupted(f"interrupted in epoch {epoch}; {kept}") from None
    train_wall = wall_before + time.perf_counter() - t_start
    provenance = {"command": job.command, "workers": job.workers,
                  "command_models": job.command_models, "versions": package_versions()}
    try:
        return [summarise(clf, r, m, d, splits, history, train_wall, provenance)
                for r, (m, d) in enumerate(zip(models, dirs, strict=True))]
    except KeyboardInterrupt:  # the last epoch's checkpoint is always written
        raise Interrupted("interrupted after the last epoch; resume with: "
                          f"{TRAINING.resume_command(cfg.out, cfg.exact)}"  # type: ignore[arg-type]
                          ) from None


def _run_epoch(job: TrainingJob, epoch: int, clf: Trainer,
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
    save_checkpoint(job.checkpoint, cfg, epoch, clf, sched, history, job.command,
                     wall_offset + time.perf_counter(), job.run_id, job.batch_names())
    return epoch, time.perf_counter()


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
    (:func:`bandits.core.processes.run_jobs`); their summaries in order. Ctrl-C is passed on
    once to every worker (each stops where it is and keeps its last checkpoint) and ends
    in :class:`Interrupted`; a worker that dies ends the run with a ``ValueError`` of one
    line (every checkpoint written stays good), never a hang."""
    resume = TRAINING.resume_command(out, jobs[0].cfg.exact)
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
