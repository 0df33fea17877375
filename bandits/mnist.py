"""The MNIST classification benchmark of Blundell et al. (2015), section 5.1.

Trains a two-hidden-layer ReLU classifier on MNIST, either Bayes by Backprop
(``bbb``, Gaussian or scale-mixture prior) or a same-size baseline (``sgd``: a
plain MLP; ``dropout``: the MLP with dropout), and writes into ``--out``:

* ``config.json``: the settings; ``epochs.csv``: per epoch the training loss,
  the NLL (mean per image) and KL terms (the complexity cost, estimated at every
  tenth minibatch), validation and test error of the posterior-mean network, and
  the seconds of the epoch (of all the models trained together);
* ``summary.json``: final and best-validation test error (BBB: posterior mean
  and the average of ``--eval-samples`` sampled networks), the out-of-distribution
  entropy check, the pruning table, wall time, device, command and machine;
* ``pruning.csv`` / ``pruning.md`` (BBB): test error with the lowest-SNR
  0/50/75/95/98 % of the weights removed (the paper's Table 2);
* ``weights_hist.csv``, ``snr_hist.csv`` and the plots ``test_error.png``
  (Figure 2), ``weights.png`` (Figure 3), ``snr.png`` (Figure 4).

The protocol: pixels divided by 126; the first 50,000 training images train,
the last 10,000 validate (``--full-train`` trains on all 60,000); test on the
10,000 test images; minibatches of 128.

**Objective.** For minibatch ``i`` of the ``M`` in an epoch the loss is the
paper's eq. 8, ``F_i = pi_i KL + sum_{j in batch} -log p(y_j | x_j, w)``, with
``KL = log q(w) - log p(w)`` summed over all weights (a Monte Carlo estimate at
the sampled weights, averaged over ``--samples`` draws) and ``pi_i = 2^(M-i) /
(2^M - 1)`` (``--kl-weighting blundell``, the default) or ``1/M`` (``uniform``). The
optimiser minimises ``F_i / B`` (``B``: the batch size); this constant factor
leaves Adam's steps unchanged and keeps the printed loss per image. Summed over
an epoch, ``sum_i F_i`` is the negative ELBO of the whole training set.

**Optimiser.** Adam, learning rate ``--lr`` (1e-3) for every model, constant or
cosine-annealed to ``--lr-min`` (``--lr-schedule cosine``); plain SGD diverges
for many settings of the paper's grid. The learning rate and its schedule are shared
by the models of one run (run several commands for several learning rates).

**Baselines.** ``sgd``: the same MLP with point weights and the cross-entropy
only; ``dropout``: the same with dropout ``--dropout`` (0.5) after each hidden
layer, switched off at test time. Both are trained with Adam as well.

**Many models at once.** ``--seeds N`` and several values of the grid settings
(``--prior``, ``--pi``, ``--neg-log-sigma1``, ``--neg-log-sigma2``,
``--neg-log-prior-sigma``, ``--kl-weighting``) train every (setting, seed) as one
batched model (:mod:`bandits.classifier`): one pass over the data feeds all of them,
each with its own seed, prior and KL weighting, and each trains as it would alone.
Each model then writes the files above into ``--out/<setting>__seed=<seed>/``, and
``--out`` gets ``models.csv`` (one row per model), ``settings.csv`` and ``table.md``
(mean and standard deviation over the seeds per setting; the setting with the lowest
mean validation error is marked selected, as the paper chose its settings).

Run ``python -m bandits.mnist --help`` for the flags, ``--quick`` for a few-minute
check, ``--bench`` to time BBB against the plain MLP (and R batched models against R
single ones), and ``--report DIR`` to build the tables and figures from every model
under ``DIR``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm import tqdm

from bandits import checkpoint
from bandits.bayes import (
    MLP,
    GaussianPrior,
    ScaleMixturePrior,
    kl_weights,
    make_mlp,
    prune_by_snr,
    snr,
)
from bandits.classifier import Classifiers, RunSpec
from bandits.idx import load_mnist, preprocess
from bandits.results import output_dir, save_figure, write_atomic

MODELS = ("bbb", "sgd", "dropout")
PRIORS = ("mixture", "gaussian")
PRUNE_FRACTIONS = (0.0, 0.5, 0.75, 0.95, 0.98)

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


@dataclass
class Config:
    """Settings of one benchmark run; every field is a kebab-case flag."""

    model: str = field(default="bbb", metadata={"help": f"one of {MODELS}"})
    prior: str | list[str] = field(default="mixture", metadata={
        "help": f"BBB prior, one of {PRIORS}"})
    pi: float | list[float] = field(default=0.5, metadata={
        "help": "scale mixture: weight of N(0, sigma1^2)"})
    neg_log_sigma1: float | list[float] = field(default=0.0, metadata={
        "help": "scale mixture: -log sigma1 (paper's grid 0, 1, 2)"})
    neg_log_sigma2: float | list[float] = field(default=6.0, metadata={
        "help": "scale mixture: -log sigma2 (paper's grid 6, 7, 8)"})
    neg_log_prior_sigma: float | list[float] = field(default=0.0, metadata={
        "help": "Gaussian prior: -log sigma"})
    init_rho: float = field(default=-5.0, metadata={
        "help": "initial posterior rho, sigma = softplus(rho) (-5: sigma = 0.0067)"})
    complexity: str = field(default="mc", metadata={
        "help": "complexity cost: 'mc' (the paper's sampled estimate) or 'kl' (Gaussian prior)"})
    kl_weighting: str | list[str] = field(default="blundell", metadata={
        "help": "KL weight per minibatch: 'blundell' (2^(M-i)/(2^M-1), section 3.4; better "
                "than 'uniform' for both priors over 3 seeds, see results/mnist) or "
                "'uniform' (1/M, eq. 8)"})
    hidden: int = field(default=400, metadata={"help": "units in each of the hidden layers"})
    layers: int = field(default=2, metadata={"help": "number of hidden layers"})
    dropout: float = field(default=0.5, metadata={"help": "dropout probability (model dropout)"})
    epochs: int = field(default=10, metadata={"help": "training epochs"})
    samples: int = field(default=1, metadata={"help": "BBB weight samples per training step"})
    eval_samples: int = field(default=10, metadata={
        "help": "sampled networks averaged in the BBB evaluation"})
    lr: float = field(default=1e-3, metadata={"help": "Adam learning rate"})
    lr_schedule: str = field(default="constant", metadata={
        "help": "'constant', or 'cosine': anneal from --lr to --lr-min over the epochs"})
    lr_min: float = field(default=0.0, metadata={"help": "final learning rate of 'cosine'"})
    batch_size: int = field(default=128, metadata={"help": "minibatch size"})
    full_train: bool = field(default=False, metadata={
        "help": "train on all 60,000 images (no validation set)"})
    train_size: int = field(default=0, metadata={
        "help": "use only the first N training images (0: all; for smoke tests)"})
    test_size: int = field(default=0, metadata={
        "help": "use only the first N test and validation images (0: all)"})
    prune: str = field(default="0,50,75,95,98", metadata={
        "help": "percentages of lowest-SNR weights removed in the pruning table"})
    ood_images: int = field(default=1000, metadata={
        "help": "uniform-noise images for the out-of-distribution entropy check"})
    seed: int = field(default=0, metadata={"help": "random seed (of the first seed with --seeds)"})
    seeds: int = field(default=1, metadata={
        "help": "train N seeds (--seed, --seed + 1, ...) of every setting, all in one batched "
                "model; results per model and mean +- std per setting"})
    device: str = field(default="cpu", metadata={"help": "cpu or cuda"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    compile: bool = field(default=False, metadata={
        "help": "fuse BBB's per-weight work with torch.compile (worth it on a GPU)"})
    out: str | None = field(default=None, metadata={
        "help": "output directory (training: a new directory under results/runs/ when unset; "
                "--bench: results/mnist)"})
    overwrite: bool = field(default=False, metadata={
        "help": "allow training into an existing non-empty output directory"})
    data_dir: str | None = field(default=None, metadata={
        "help": "directory holding mnist/*.gz (else $BANDITS_DATA_DIR, the cache, a download)"})
    # a setting that is on by default is switched off by its --no-... flag; "help" says
    # what giving that flag does
    download: bool = field(default=True, metadata={
        "help": "never download: fail with an error if a data file is missing (default: "
                "missing files are downloaded)"})
    progress: bool = field(default=True, metadata={
        "help": "hide the progress bar of each epoch (default: shown)"})
    plots: bool = field(default=True, metadata={
        "help": "do not draw the PNG plots (the CSV files are still written; default: drawn)"})
    quick: bool = field(default=False, metadata={
        "help": "preset: BBB 2x400 scale mixture, Adam, 10 epochs (about 1 min on one CPU core)"})
    bench: bool = field(default=False, metadata={
        "help": "time epochs of BBB and the plain MLP, interleaved; writes speed.csv/json"})
    bench_rounds: int = field(default=3, metadata={
        "help": "interleaved epochs per model (--bench)"})
    bench_hidden: str = field(default="400,1200", metadata={
        "help": "hidden sizes timed by --bench"})
    bench_runs: int = field(default=8, metadata={
        "help": "models batched together in --bench's batched timing"})
    bench_batches: int = field(default=0, metadata={
        "help": "--bench times this many minibatches per epoch, scaled to the epoch (0: all)"})
    report: str | None = field(default=None, metadata={
        "help": "build tables and figures from the runs under this directory, then exit"})
    redraw: str | None = field(default=None, metadata={
        "help": "rewrite a run directory's histograms and plots from its saved model, then exit"})
    checkpoint_every: float = field(default=300.0, metadata={
        "help": "write a checkpoint after an epoch once this many seconds have passed since "
                "the last one (0: after every epoch); always after the last epoch"})
    resume: str | None = field(default=None, metadata={
        "help": "continue the training in this output directory from its checkpoint (written "
                "after an epoch once --checkpoint-every seconds have passed, and after the last "
                "epoch) with its settings; --epochs may extend a constant-lr run"})

    def validate(self) -> None:
        """Raise ValueError on settings that cannot run (naming the flag and a fix)."""
        for name in GRID_FIELDS:
            values = grid_values(self, name)
            flag = "--" + name.replace("_", "-")
            if len(values) != len(set(values)):
                raise ValueError(f"{flag} lists a value twice: {values}; give each value once")
            if len(values) > 1 and self.model != "bbb":
                raise ValueError(f"{flag} takes several values only with --model bbb")
            for v in values:
                if name != "prior" and name != "kl_weighting" and not math.isfinite(v):
                    raise ValueError(f"{flag} must be a finite number, got {v}")
        if any(not 0.0 < p < 1.0 for p in grid_values(self, "pi")) and (
                "mixture" in grid_values(self, "prior")):
            raise ValueError(f"--pi must be strictly between 0 and 1, got "
                             f"{grid_values(self, 'pi')} (for pi 0 or 1 use --prior gaussian)")
        for name in ("neg_log_sigma1", "neg_log_sigma2", "neg_log_prior_sigma"):
            lo, hi = NEG_LOG_SIGMA_RANGE
            values = grid_values(self, name)
            if any(not lo <= v <= hi for v in values):
                raise ValueError(f"--{name.replace('_', '-')} must be >= {lo:g} and <= {hi:g} "
                                 f"(sigma = exp(-value)), got {values}")
        priors, weightings = grid_values(self, "prior"), grid_values(self, "kl_weighting")
        checks = [
            (self.model in MODELS, f"--model must be one of {MODELS}, got {self.model!r}"),
            (set(priors) <= set(PRIORS), f"--prior must be one of {PRIORS}, got {priors}"),
            (self.complexity in ("mc", "kl"),
             f"--complexity must be 'mc' or 'kl', got {self.complexity!r}"),
            (self.complexity == "mc" or priors == ["gaussian"],
             f"--complexity kl needs --prior gaussian, got --prior {' '.join(priors)}"),
            (set(weightings) <= {"uniform", "blundell"},
             f"--kl-weighting must be 'uniform' or 'blundell', got {weightings}"),
            (self.lr_schedule in ("constant", "cosine"),
             f"--lr-schedule must be 'constant' or 'cosine', got {self.lr_schedule!r}"),
            (self.device in ("cpu", "cuda"), f"--device must be cpu or cuda, got {self.device!r}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        for name, (lo, hi, lo_open, hi_open) in NUMERIC_RANGES.items():
            v = getattr(self, name)
            if math.isnan(v) or (v <= lo if lo_open else v < lo) or (
                    v >= hi if hi_open else v > hi):
                raise ValueError(f"--{name.replace('_', '-')} must be "
                                 f"{_range_text(lo, hi, lo_open, hi_open)}, got {v}")
        if self.seed + self.seeds - 1 > MAX_SEED:
            raise ValueError(f"--seed + --seeds - 1 must be at most {MAX_SEED}, got "
                             f"{self.seed + self.seeds - 1}")
        for flag, text, lo, hi in (("--prune", self.prune, 0.0, 100.0),
                                   ("--bench-hidden", self.bench_hidden, 1, MAX_INT)):
            try:
                values = [float(v) if flag == "--prune" else int(v)
                          for v in text.split(",") if v.strip()]
            except ValueError:
                values = None
            if not values or any(not lo <= v <= hi for v in values):
                kind = "percentages from 0 to 100" if flag == "--prune" else "positive integers"
                raise ValueError(f"{flag} must be a comma-separated list of {kind}, got {text!r}")
        check_memory(self)

    def prune_fractions(self) -> list[float]:
        """``--prune`` as fractions in [0, 1]."""
        return [float(p) / 100.0 for p in self.prune.split(",") if p.strip()]


# The numeric settings' allowed ranges: (low, high, low excluded, high excluded). The caps
# keep the values a machine can run (a seed numpy accepts, finite learning rates, ...);
# sizes that would not fit in memory are refused by check_memory.
MAX_INT = 2**31 - 1
MAX_SEED = 2**31 - 1
NEG_LOG_SIGMA_RANGE = (-10.0, 30.0)  # sigma from 2.2e4 down to 9e-14, fine in float32
NUMERIC_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "hidden": (1, MAX_INT, False, False),
    "layers": (1, 1000, False, False),
    "epochs": (1, 1_000_000, False, False),
    "samples": (1, 100_000, False, False),
    "eval_samples": (1, 100_000, False, False),
    "lr": (0.0, 10.0, True, False),
    "lr_min": (0.0, 10.0, False, False),
    "batch_size": (1, MAX_INT, False, False),
    "dropout": (0.0, 1.0, False, True),
    "init_rho": (-30.0, 10.0, False, False),
    "train_size": (0, MAX_INT, False, False),
    "test_size": (0, MAX_INT, False, False),
    "ood_images": (1, 10_000_000, False, False),
    "seed": (0, MAX_SEED, False, False),
    "seeds": (1, 100_000, False, False),
    "threads": (0, 1024, False, False),
    "checkpoint_every": (0.0, math.inf, False, False),
    "bench_rounds": (1, 100_000, False, False),
    "bench_runs": (1, 100_000, False, False),
    "bench_batches": (0, MAX_INT, False, False),
}


def _range_text(lo: float, hi: float, lo_open: bool, hi_open: bool) -> str:
    """The allowed range for an error message: ``>= 1 and <= 1000``, ``> 0 and <= 10``."""
    def num(x: float) -> str:
        return f"{x:,}" if isinstance(x, int) else f"{x:g}"
    low = f"{'>' if lo_open else '>='} {num(lo)}"
    return low if hi == math.inf else f"{low} and {'<' if hi_open else '<='} {num(hi)}"


def _bytes_text(n: float) -> str:
    """``12.3 GiB`` and the like."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    raise AssertionError


def machine_memory(device: str) -> int:
    """Bytes of memory of the machine (``cuda``: of the GPU), or 0 when unknown."""
    if device == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(0).total_memory)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not on this platform
        return 0


def memory_estimate(cfg: Config) -> tuple[int, int, int]:
    """Rough bytes the settings need, before anything is allocated: float32 parameters of
    one model x the models trained together x 4 (mu and rho, or weights and gradients, and
    Adam's two moments), plus the out-of-distribution noise images. Returns
    ``(bytes, models, largest hidden size)``."""
    if cfg.bench:
        hidden = max(int(h) for h in cfg.bench_hidden.split(",") if h.strip())
        models = cfg.bench_runs + 5
    else:
        hidden = cfg.hidden
        models = len(expand(dataclasses.replace(cfg, seeds=1))) * cfg.seeds
    sizes = [784] + [hidden] * cfg.layers + [10]
    n_params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    return n_params * 4 * models * 4 + cfg.ood_images * 784 * 12, models, hidden


def check_memory(cfg: Config) -> None:
    """Raise ValueError when the settings would need more memory than the machine has."""
    need, models, hidden = memory_estimate(cfg)
    have = machine_memory(cfg.device)
    if have and need > have:
        what = "GPU" if cfg.device == "cuda" else "machine"
        raise ValueError(
            f"--{'bench-hidden' if cfg.bench else 'hidden'} {hidden} with --layers {cfg.layers} "
            f"and {models} model(s) needs about {_bytes_text(need)} (parameters x models x 4 "
            f"for mu, rho and Adam's moments), more than this {what}'s "
            f"{_bytes_text(have)} of memory; use a smaller --hidden, --layers, --seeds or grid")


# Settings that may take several values in one run (BBB): every combination is trained,
# each with --seeds seeds, as one batched model.
GRID_FIELDS = ("prior", "pi", "neg_log_sigma1", "neg_log_sigma2", "neg_log_prior_sigma",
               "kl_weighting")
# the settings that matter for each prior (the others are ignored by it)
PRIOR_FIELDS = {"mixture": ("pi", "neg_log_sigma1", "neg_log_sigma2"),
                "gaussian": ("neg_log_prior_sigma",)}


def grid_values(cfg: Config, name: str) -> list[Any]:
    """The values of a grid setting as a list (one value or several)."""
    v = getattr(cfg, name)
    return list(v) if isinstance(v, list | tuple) else [v]


def expand(cfg: Config) -> list[Config]:
    """The models of a run: every combination of the grid settings, times ``--seeds`` seeds.

    Each is a :class:`Config` of one model (single values, ``seeds = 1``, its own
    ``seed``). For a Gaussian prior the scale-mixture settings are left at one value,
    and the other way round, so no model is trained twice.
    """
    base = {name: grid_values(cfg, name) for name in GRID_FIELDS}
    models: list[Config] = []
    seen: set[tuple] = set()
    for combo in itertools.product(*base.values()):
        values = dict(zip(base, combo, strict=True))
        unused = [f for p, fs in PRIOR_FIELDS.items() if p != values["prior"] for f in fs]
        for f in unused:
            values[f] = base[f][0]
        key = tuple(values.values())
        if key in seen:
            continue
        seen.add(key)
        for k in range(cfg.seeds):
            models.append(dataclasses.replace(cfg, **values, seed=cfg.seed + k, seeds=1))
    return models


def varying(models: Sequence[Config]) -> list[str]:
    """The grid settings that differ between ``models``, in :data:`GRID_FIELDS` order."""
    return [f for f in GRID_FIELDS if len({getattr(m, f) for m in models}) > 1]


def setting_name(cfg: Config, fields: Sequence[str]) -> str:
    """A model's setting as a name: ``prior=mixture__pi=0.25`` (``fields`` that matter)."""
    used = [f for f in fields if f in ("prior", "kl_weighting")
            or f in PRIOR_FIELDS.get(cfg.prior, ())]
    return "__".join(f"{f}={getattr(cfg, f):g}" if isinstance(getattr(cfg, f), float)
                     else f"{f}={getattr(cfg, f)}" for f in used) or "base"


QUICK = {"model": "bbb", "prior": "mixture", "hidden": 400, "layers": 2, "epochs": 10,
         "samples": 1, "lr": 1e-3, "batch_size": 128}


# --------------------------------------------------------------------------- CLI


PROG = "bandits.mnist"  # the prefix of every error message: "bandits.mnist: error: ..."


class UsageError(ValueError):
    """A command line argparse cannot parse: reported as one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line (no usage dump), printed by main()
        raise UsageError(f"{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    """An argparse parser with one kebab-case flag per :class:`Config` field.

    A setting that is on by default (``download``, ``progress``, ``plots``) becomes a
    ``--no-...`` flag; its help says what giving that flag does. Parse errors raise
    :class:`UsageError` (a ``ValueError``) instead of printing the usage and exiting.
    """
    parser = _Parser(
        prog="python -m bandits.mnist",
        description="MNIST benchmark of Bayes by Backprop (Blundell et al. 2015, Tables 1-2).",
        argument_default=argparse.SUPPRESS)
    for f in dataclasses.fields(Config):
        flag = "--" + f.name.replace("_", "-")
        help_ = f"{f.metadata['help']} (default: {f.default})"
        if f.type in ("bool", bool):
            if f.default:  # the help describes the --no-... flag and states the default
                parser.add_argument("--no-" + f.name.replace("_", "-"), dest=f.name,
                                    action="store_false", help=f.metadata["help"])
            else:
                parser.add_argument(flag, dest=f.name, action="store_true", help=help_)
            continue
        typ = {"int": int, "float": float}.get(str(f.type), str)
        if f.name in GRID_FIELDS:
            typ = float if f.name not in ("prior", "kl_weighting") else str
            parser.add_argument(flag, dest=f.name, type=typ, nargs="+", metavar=f.name.upper(),
                                help=help_ + "; several values: one model per value")
            continue
        parser.add_argument(flag, dest=f.name, type=typ, metavar=f.name.upper(), help=help_)
    return parser


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse flags into a :class:`Config`; ``--quick`` fills in what was not given."""
    given = vars(build_parser().parse_args(argv))
    values: dict[str, Any] = dict(QUICK) if given.get("quick") else {}
    values.update({k: v[0] if isinstance(v, list) and len(v) == 1 else v
                   for k, v in given.items()})
    cfg = Config(**values)
    cfg.validate()
    return cfg


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


def machine(device: str) -> str:
    """A description of the machine without host names or paths."""
    if device == "cuda" and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    build = "CPU" if not torch.version.cuda else "CUDA"
    return (f"{os.cpu_count()}-core CPU, torch {torch.__version__.split('+')[0]} {build} build, "
            f"{torch.get_num_threads()} thread(s)")


# --------------------------------------------------------------------------- data


@dataclass
class Split:
    """Preprocessed tensors: images ``(n, 784)`` float32 in ``[0, 255/126]``, labels ``(n,)``."""

    x: Tensor
    y: Tensor


def load_splits(cfg: Config) -> dict[str, Split]:
    """The train / validation / test splits of the paper's protocol, on ``cfg.device``."""
    data = load_mnist(cfg.data_dir, download=cfg.download)
    x_all = torch.from_numpy(preprocess(data.train_images))  # (60000, 784)
    y_all = torch.from_numpy(data.train_labels.astype(np.int64))
    n_train = 60000 if cfg.full_train else 50000
    splits = {"train": Split(x_all[:n_train], y_all[:n_train])}
    if not cfg.full_train:
        splits["val"] = Split(x_all[50000:], y_all[50000:])
    splits["test"] = Split(torch.from_numpy(preprocess(data.test_images)),
                           torch.from_numpy(data.test_labels.astype(np.int64)))
    for name, s in splits.items():
        n = cfg.train_size if name == "train" else cfg.test_size
        if n > 0:
            s.x, s.y = s.x[:n], s.y[:n]
        s.x, s.y = s.x.to(cfg.device), s.y.to(cfg.device)
    return splits


# --------------------------------------------------------------------------- model


def make_prior(cfg: Config) -> GaussianPrior | ScaleMixturePrior:
    """The BBB prior of ``cfg``."""
    if cfg.prior == "gaussian":
        return GaussianPrior(math.exp(-cfg.neg_log_prior_sigma))
    return ScaleMixturePrior(cfg.pi, math.exp(-cfg.neg_log_sigma1), math.exp(-cfg.neg_log_sigma2))


def build_model(cfg: Config, generator: torch.Generator | None = None) -> MLP:
    """The classifier ``784 -> hidden x layers -> 10`` of ``cfg.model``."""
    hidden = [cfg.hidden] * cfg.layers
    if cfg.model == "bbb":
        return make_mlp(784, hidden, 10, bayesian=True, prior=make_prior(cfg),
                        init_sigma=F.softplus(torch.tensor(cfg.init_rho)).item(),
                        generator=generator, device=cfg.device)
    drop = cfg.dropout if cfg.model == "dropout" else 0.0
    return make_mlp(784, hidden, 10, bayesian=False, dropout=drop, device=cfg.device)


def is_bayesian(model: MLP) -> bool:
    """Whether the model has Bayesian layers."""
    return bool(model.bayes_layers())


# --------------------------------------------------------------------------- training


def train_epoch(model: MLP, opt: torch.optim.Optimizer, data: Split, cfg: Config,
                shuffle: torch.Generator, desc: str = "", max_batches: int = 0
                ) -> dict[str, float]:
    """One epoch of minibatch training with autograd; returns the epoch means of loss, NLL, KL.

    Minimises ``(pi_i KL + sum NLL) / B`` per minibatch (see the module docstring). This
    is the first version's training step, one model through :mod:`bandits.bayes`'s layers
    and autograd: the reference the batched trainer is tested and timed against.
    """
    model.train()
    n = len(data.y)
    perm = torch.randperm(n, generator=shuffle).to(data.x.device)
    n_batches = math.ceil(n / cfg.batch_size)
    bayes = is_bayesian(model)
    weights = kl_weights(n_batches, cfg.kl_weighting) if bayes else None
    tot_nll = tot_kl = tot_loss = 0.0
    stop = n_batches if max_batches <= 0 else min(max_batches, n_batches)
    bar = tqdm(range(stop), desc=desc, disable=not cfg.progress, leave=False,
               mininterval=1.0, file=sys.stderr)
    for i in bar:
        idx = perm[i * cfg.batch_size:(i + 1) * cfg.batch_size]
        x, y = data.x[idx], data.y[idx]  # (B, 784), (B,)
        b = len(y)
        if bayes:
            nll = kl = 0.0
            for _ in range(cfg.samples):  # each forward call draws one network
                nll = nll + F.cross_entropy(model(x), y, reduction="sum")
                kl = kl + model.complexity_cost(cfg.complexity)
            nll, kl = nll / cfg.samples, kl / cfg.samples
            loss = (weights[i] * kl + nll) / b
        else:
            nll = F.cross_entropy(model(x), y, reduction="sum")
            kl = torch.zeros(())
            loss = nll / b
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tot_nll += nll.item()
        tot_kl += float(kl.detach()) if bayes else 0.0
        tot_loss += loss.item() * b
        if i % 50 == 0:
            bar.set_postfix(nll=f"{nll.item() / b:.3f}", kl=f"{float(kl.detach()):.3g}")
    bar.close()
    return {"nll": tot_nll / n, "kl": tot_kl / n_batches,
            "train_loss": tot_nll / n + tot_kl / n_batches / n}


@torch.no_grad()
def predict(model: MLP, x: Tensor, mode: str = "mean", samples: int = 1,
            chunk: int = 5000) -> Tensor:
    """Predictive class probabilities ``(n, 10)``.

    Args:
        model: The classifier.
        x: Images ``(n, 784)``.
        mode: BBB only: ``"mean"`` (the posterior-mean network) or ``"sample"``
            (the average of ``samples`` sampled networks; each network is one draw
            held for all images).
        samples: Networks averaged in ``"sample"`` mode.
        chunk: Images per forward call.
    """
    model.eval()
    if not is_bayesian(model):
        return torch.cat([F.softmax(model(xc), -1) for xc in x.split(chunk)])
    if mode == "mean":
        with model.sampling("mean"):
            return torch.cat([F.softmax(model(xc), -1) for xc in x.split(chunk)])
    probs = torch.zeros(len(x), 10, device=x.device)
    with model.sampling("held"):
        for _ in range(samples):
            model.resample()  # one network for every image of this pass
            probs += torch.cat([F.softmax(model(xc), -1) for xc in x.split(chunk)])
    return probs / samples


def error_pct(probs: Tensor, y: Tensor) -> float:
    """Classification error in percent."""
    return 100.0 * (probs.argmax(-1) != y).float().mean().item()


def entropy(probs: Tensor) -> Tensor:
    """Entropy (nats) of each predictive distribution ``(n, classes) -> (n,)``."""
    return -(probs * probs.clamp_min(1e-12).log()).sum(-1)


def evaluate(model: MLP, split: Split, cfg: Config, sampled: bool) -> dict[str, float]:
    """Test error of the mean network and, with ``sampled``, of the sampled average."""
    out = {"mean": error_pct(predict(model, split.x, "mean"), split.y)}
    if sampled and is_bayesian(model):
        out["sampled"] = error_pct(predict(model, split.x, "sample", cfg.eval_samples), split.y)
    return out


def ood_check(model: MLP, test: Split, cfg: Config) -> dict[str, float]:
    """Mean predictive entropy on uniform-noise images and on test images.

    A noise image has independent uniform pixel values 0..255, scaled like the data.
    A model that knows what it does not know has a high entropy on noise (the
    maximum is ``log 10 = 2.303`` nats).
    """
    g = torch.Generator().manual_seed(cfg.seed + 12345)
    noise = torch.randint(0, 256, (cfg.ood_images, 784), generator=g).float() / 126.0
    noise = noise.to(test.x.device)
    x_in = test.x[: cfg.ood_images]
    res: dict[str, float] = {"max_entropy": math.log(10), "images": cfg.ood_images}
    for name, mode in (("", "sample"), ("mean_", "mean")):
        if name and not is_bayesian(model):
            continue
        p_noise = predict(model, noise, mode, cfg.eval_samples)
        p_test = predict(model, x_in, mode, cfg.eval_samples)
        res[f"{name}entropy_noise"] = entropy(p_noise).mean().item()
        res[f"{name}entropy_test"] = entropy(p_test).mean().item()
        res[f"{name}max_prob_noise"] = p_noise.max(-1).values.mean().item()
    return res


def prune_table(model: MLP, test: Split, cfg: Config) -> list[dict[str, float]]:
    """Test error with the lowest-SNR fractions of the weights removed (Table 2)."""
    n_weights = sum(m.weight_mu.numel() for m in model.bayes_layers())
    rows = []
    for frac in cfg.prune_fractions():
        removed = prune_by_snr(model, frac)
        err = evaluate(model, test, cfg, sampled=True)
        rows.append({"removed_pct": 100 * frac, "weights_left": n_weights - removed,
                     "test_error_mean": err["mean"], "test_error_sampled": err["sampled"]})
    prune_by_snr(model, 0.0)  # back to the whole network
    return rows


# --------------------------------------------------------------------------- outputs


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write dicts with the same keys as a CSV file."""
    f = io.StringIO(newline="")
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    write_atomic(path, f.getvalue())


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """Read a CSV file as rows of strings."""
    with open(path) as f:
        return list(csv.DictReader(f))


def read_csv(path: Path) -> list[dict[str, float]]:
    """Read a CSV of numbers written by :func:`write_csv`."""
    with open(path) as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


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
    write_csv(out / "weights_hist.csv", rows)
    if is_bayesian(model):
        db = 10.0 * np.log10(snr(model).cpu().numpy())
        counts, _ = np.histogram(np.clip(db, SNR_BINS_DB[0], SNR_BINS_DB[-1]), SNR_BINS_DB)
        write_csv(out / "snr_hist.csv", [
            {"left_db": a, "right_db": b, "count": int(c)}
            for a, b, c in zip(SNR_BINS_DB[:-1], SNR_BINS_DB[1:], counts, strict=True)])


def plot_run(out: Path, label: str) -> None:
    """Draw a run's PNGs from its CSV files only (so plots can be redrawn without training)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
        _plot_snr(out / "snr_hist.csv", out / "snr.png", label)


def _plain_log_ticks(ax: Any) -> None:
    """Tick labels 1, 2, 3 ... instead of powers of ten on a log-scale error axis."""
    from matplotlib.ticker import ScalarFormatter

    ax.set_yscale("log")
    for axis_fmt in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
        fmt = ScalarFormatter()
        fmt.set_scientific(False)
        axis_fmt(fmt)


def _plot_weight_hists(runs: dict[str, Path], path: Path) -> None:
    import matplotlib.pyplot as plt

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


def _plot_snr(csv_path: Path, path: Path, label: str) -> None:
    import matplotlib.pyplot as plt

    rows = read_csv(csv_path)
    centres = np.array([(r["left_db"] + r["right_db"]) / 2 for r in rows])
    counts = np.array([r["count"] for r in rows])
    width = rows[0]["right_db"] - rows[0]["left_db"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    a1.plot(centres, counts / counts.sum() / width)
    a1.set(xlabel="signal-to-noise ratio (dB)", ylabel="density", title=f"SNR density, {label}")
    a2.plot(centres + width / 2, np.cumsum(counts) / counts.sum())
    a2.set(xlabel="signal-to-noise ratio (dB)", ylabel="CDF", title="SNR CDF (Figure 4)")
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


def run_label(cfg: Config) -> str:
    """A short name: ``bbb-mixture-2x400``."""
    kind = f"bbb-{'+'.join(grid_values(cfg, 'prior'))}" if cfg.model == "bbb" else cfg.model
    return f"{kind}-{cfg.layers}x{cfg.hidden}"


def saved_config(cfg: Config) -> dict[str, Any]:
    """The config as saved: a local ``data_dir`` path is not written out."""
    d = dataclasses.asdict(cfg)
    if d["data_dir"] is not None:
        d["data_dir"] = "DIR"
    return d


# --------------------------------------------------------------------------- main run


def seed_everything(seed: int) -> tuple[torch.Generator, torch.Generator]:
    """Seed torch's global generator (dropout, init) and return (noise, shuffle) generators."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    return torch.Generator().manual_seed(seed + 1), torch.Generator().manual_seed(seed + 2)


CHECKPOINT_KIND = "bandits.mnist/2"  # the batched trainer's checkpoints
# flags that may be given beside --resume: they do not change the results
RESUME_FLAGS = {"resume", "epochs", "progress", "plots", "data_dir", "download",
                "checkpoint_every"}


def identity(config: dict[str, Any]) -> str:
    """A fingerprint of the settings that decide a run's results (all but the output
    directory and the flags allowed beside ``--resume``), from ``config.json``'s values."""
    return checkpoint.fingerprint({k: v for k, v in config.items()
                                   if k not in RESUME_FLAGS | {"out", "overwrite", "threads"}})


def resume_config(argv: Sequence[str]) -> tuple[Config, dict[str, Any]]:
    """The settings of the run to resume (from its checkpoint) and the checkpoint's state."""
    given = vars(build_parser().parse_args(argv))
    refused = sorted(set(given) - RESUME_FLAGS)
    if refused:
        raise ValueError(f"--{refused[0].replace('_', '-')} cannot be given with --resume: it "
                         "would change the results (only --epochs, --no-progress, --no-plots, "
                         "--data-dir, --no-download, --checkpoint-every may be added)")
    out = Path(given["resume"])
    try:  # the checkpoint must be this directory's own, and intact
        state = checkpoint.load_own(out, CHECKPOINT_KIND, identity)
    except checkpoint.CheckpointError as e:
        raise ValueError(str(e)) from None
    settings = {**state["config"], "data_dir": None, "out": str(out), "overwrite": True}
    settings.update({k: v for k, v in given.items() if k != "resume"})
    cfg = Config(**settings)
    cfg.validate()
    if cfg.epochs != state["config"]["epochs"] and cfg.lr_schedule == "cosine":
        raise ValueError("--epochs cannot change with --resume under --lr-schedule cosine: the "
                         "schedule is laid out over the epochs the run started with")
    if cfg.epochs < state["epoch"]:
        raise ValueError(f"--epochs {cfg.epochs} is fewer than the {state['epoch']} epochs the "
                         f"checkpoint in {out} has trained")
    return cfg, state


def build_classifiers(cfg: Config, models: Sequence[Config]) -> Classifiers:
    """The batched classifiers of ``models`` (see :func:`expand`)."""
    specs = [RunSpec(m.seed, make_prior(m) if cfg.model == "bbb" else None, m.kl_weighting)
             for m in models]
    return Classifiers(cfg.model, [cfg.hidden] * cfg.layers, specs,
                       init_sigma=F.softplus(torch.tensor(cfg.init_rho)).item(),
                       dropout=cfg.dropout, samples=cfg.samples, complexity=cfg.complexity,
                       lr=cfg.lr, device=cfg.device, compile=cfg.compile)


def model_dirs(out: Path, models: Sequence[Config]) -> list[Path]:
    """Each model's output directory: ``out`` itself for one model, else
    ``out/<setting>__seed=<seed>`` (the setting named by the grid values that vary)."""
    if len(models) == 1:
        return [out]
    fields = varying(models)
    return [out / (f"{setting_name(m, fields)}__seed={m.seed}" if fields else f"seed={m.seed}")
            for m in models]


def run(cfg: Config, argv: Sequence[str] = (), resume: dict[str, Any] | None = None
        ) -> dict[str, Any]:
    """Train and evaluate every model of ``cfg`` as one batched model; write every output.

    One model (no grid, one seed) writes its files into ``--out`` as before; several write
    one directory per model and the tables of :func:`aggregate`. A checkpoint is written
    after an epoch once ``--checkpoint-every`` seconds have passed, and after the last
    one; ``resume`` (a checkpoint's state, see :func:`resume_config`)
    continues from it to the same result as an uninterrupted run. Returns the summary of
    the first model (with ``"models"``: how many were trained).
    """
    t_start = time.perf_counter()
    # the data first: a run that cannot find its data leaves no empty output directory
    splits = load_splits(cfg)
    if resume is None:
        out = output_dir(cfg.out, f"mnist-{run_label(cfg)}", cfg.overwrite)
    else:
        out = Path(cfg.out)
    models = expand(cfg)
    dirs = model_dirs(out, models)
    for d, m in zip(dirs, models, strict=True):
        d.mkdir(parents=True, exist_ok=True)
        write_atomic(d / "config.json", json.dumps(saved_config(m), indent=2) + "\n")
    if len(models) > 1:
        write_atomic(out / "config.json", json.dumps(saved_config(cfg), indent=2) + "\n")
    torch.manual_seed(cfg.seed)
    clf = build_classifiers(cfg, models)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(clf.optimizer, max(cfg.epochs, 1),
                                                        cfg.lr_min)
             if cfg.lr_schedule == "cosine" else None)
    label = run_label(cfg) if len(models) == 1 else f"{run_label(cfg)} x{len(models)}"
    has_val = "val" in splits
    runs = len(models)
    rows: list[list[dict[str, float]]] = [[] for _ in models]
    best_val = torch.full((runs,), math.inf)
    best_epoch = torch.zeros(runs, dtype=torch.long)
    best = {k: v.clone() for k, v in clf.params().items()}
    first_epoch, wall_before = 1, 0.0
    command = command_line(argv)
    if resume is not None:
        command = f"{resume['command']} (resumed with: {command})"
        clf.load_state_dict(resume["classifiers"])
        if sched is not None:
            sched.load_state_dict(resume["scheduler"])
        rows, best_val, best_epoch = resume["rows"], resume["best_val"], resume["best_epoch"]
        best = {k: v.to(cfg.device) for k, v in resume["best"].items()}
        first_epoch, wall_before = resume["epoch"] + 1, resume["wall_seconds"]
    schemes = [m.kl_weighting for m in models]
    saved, last_save = first_epoch - 1, time.perf_counter()
    for epoch in range(first_epoch, cfg.epochs + 1):
        try:
            t0 = time.perf_counter()
            lr = clf.optimizer.param_groups[0]["lr"]
            stats = clf.train_epoch(splits["train"].x, splits["train"].y, cfg.batch_size,
                                    schemes, desc=f"{label} epoch {epoch}/{cfg.epochs}",
                                    progress=cfg.progress)
        except KeyboardInterrupt:
            kept = (f"resume after epoch {saved} with: python -m bandits.mnist --resume {out}"
                    if saved > 0 else "no checkpoint was written yet")
            raise Interrupted(f"interrupted in epoch {epoch}; {kept}") from None
        t_train = time.perf_counter() - t0
        if sched is not None:
            sched.step()
        val = (clf.errors(splits["val"].x, splits["val"].y) if has_val
               else torch.full((runs,), math.nan))
        test = clf.errors(splits["test"].x, splits["test"].y)
        t_eval = time.perf_counter() - t0 - t_train
        for r in range(runs):
            rows[r].append({"epoch": epoch, "lr": lr, "nll": stats["nll"][r].item(),
                            "kl": stats["kl"][r].item(),
                            "train_loss": stats["train_loss"][r].item(),
                            "val_error": val[r].item(), "test_error": test[r].item(),
                            "seconds": t_train, "eval_seconds": t_eval})
            write_csv(dirs[r] / "epochs.csv", rows[r])
        better = val < best_val
        if better.any():
            best_val = torch.where(better, val, best_val)
            best_epoch[better] = epoch
            idx = better.nonzero().squeeze(1).to(cfg.device)
            for k, v in clf.params().items():
                best[k][idx] = v[idx]
        print(epoch_line(label, epoch, stats, val, test, t_train), flush=True)
        if (epoch < cfg.epochs
                and time.perf_counter() - last_save < cfg.checkpoint_every):
            continue
        saved, last_save = epoch, time.perf_counter()
        checkpoint.save(out / checkpoint.NAME, CHECKPOINT_KIND, {
            "epoch": epoch, "classifiers": clf.state_dict(),
            "scheduler": None if sched is None else sched.state_dict(),
            "rows": rows, "best_val": best_val, "best_epoch": best_epoch,
            "best": {k: v.cpu() for k, v in best.items()},
            "config": saved_config(cfg), "command": command,
            "wall_seconds": wall_before + time.perf_counter() - t_start},
            identity=identity(saved_config(cfg)))
    train_wall = wall_before + time.perf_counter() - t_start
    summaries = []
    for r, (m, d) in enumerate(zip(models, dirs, strict=True)):
        t_r = time.perf_counter()
        best_r = {"epoch": int(best_epoch[r]), "val_error": float(best_val[r])}
        summary = finish_model(clf, r, m, d, splits, best_r, best)
        summary.update({
            "epochs": cfg.epochs,
            "seconds_per_epoch": (float(np.median([x["seconds"] for x in rows[r]])) / runs
                                  if rows[r] else math.nan),
            "batched_models": runs,
            "wall_seconds": train_wall / runs + time.perf_counter() - t_r,
            "batch_wall_seconds": train_wall,
            "device": cfg.device, "machine": machine(cfg.device), "command": command,
            "settings": saved_config(m)})
        write_atomic(d / "summary.json", json.dumps(summary, indent=2) + "\n")
        if cfg.plots and rows[r]:
            plot_run(d, run_label(m))
        summaries.append(summary)
    if runs > 1:
        aggregate(out, cfg, models, dirs, summaries, wall=wall_before + time.perf_counter()
                  - t_start)
    return {**summaries[0], "models": runs, "out": str(out)}


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


def finish_model(clf: Classifiers, r: int, cfg: Config, out: Path, splits: dict[str, Split],
                 best: dict[str, Any], best_params: dict[str, Tensor]) -> dict[str, Any]:
    """Evaluate model ``r`` at its last epoch and at its best validation epoch; write its
    model, pruning table and histograms into ``out``; return its summary (without timing)."""
    gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed + 4)  # evaluation noise
    model = clf.to_mlp(r, generator=gen)
    has_val = "val" in splits
    raw = out / "raw"  # ignored by git: the trained weights
    raw.mkdir(exist_ok=True)
    torch.save(model.state_dict(), raw / "model.pt")
    final = {f"test_error_{k}": v for k, v in evaluate(model, splits["test"], cfg, True).items()}
    if has_val:
        final.update({f"val_error_{k}": v
                      for k, v in evaluate(model, splits["val"], cfg, True).items()})
    summary: dict[str, Any] = {"label": run_label(cfg), "final": final}
    if has_val and cfg.epochs > 0:
        best_model = clf.to_mlp(r, best_params, generator=gen)
        summary["best_validation"] = {
            "epoch": best["epoch"], "val_error_mean": best["val_error"],
            **{f"test_error_{k}": v
               for k, v in evaluate(best_model, splits["test"], cfg, True).items()}}
    summary["ood"] = ood_check(model, splits["test"], cfg)
    if is_bayesian(model):
        prune_rows = prune_table(model, splits["test"], cfg)
        summary["pruning"] = prune_rows
        write_csv(out / "pruning.csv", prune_rows)
        write_atomic(out / "pruning.md", pruning_markdown(prune_rows) + "\n")
    write_histograms(model, out)
    summary["n_weights"] = sum(p.numel() for n, p in model.named_parameters()
                               if not n.endswith("_rho"))
    return summary


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def _cell(row: dict[str, Any], col: str) -> str:
    """``mean +- std`` of a column of a settings row (the mean alone for one seed)."""
    if math.isnan(row[f"{col}_mean"]):
        return "-"
    if row["seeds"] == 1:
        return f"{row[f'{col}_mean']:.2f}"
    return f"{row[f'{col}_mean']:.2f} +- {row[f'{col}_std']:.2f}"


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
    tidy = []
    for m, d, s in zip(models, dirs, summaries, strict=True):
        bv = s.get("best_validation", {})
        row = {"model": d.name, "setting": setting_name(m, fields) if fields else run_label(m),
               "seed": m.seed,
               **{f: getattr(m, f) for f in fields},
               "best_epoch": bv.get("epoch", cfg.epochs),
               "val_error": bv.get("val_error_mean", math.nan),
               "test_error": bv.get("test_error_mean", s["final"]["test_error_mean"]),
               "test_error_sampled": bv.get("test_error_sampled",
                                            s["final"].get("test_error_sampled", math.nan)),
               "final_test_error": s["final"]["test_error_mean"]}
        tidy.append(row)
    write_csv(out / "models.csv", tidy)
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
    write_csv(out / "settings.csv", settings)
    lines = [f"# {run_label(cfg)}: {len(models)} models, {cfg.seeds} seed(s) per setting", "",
             "Test error (%) at each model's epoch of lowest validation error (the posterior-"
             "mean network for BBB), mean +- std over seeds; the selected setting has the "
             "lowest mean validation error.", "",
             "| Setting | Seeds | Validation | Test | Test, sampled avg | Test, last epoch | "
             "Selected |", "|---|---:|---:|---:|---:|---:|:---:|"]
    for r in settings:
        lines.append(f"| {r['setting']} | {r['seeds']} | {_cell(r, 'val_error')} | "
                     f"**{_cell(r, 'test_error')}** | {_cell(r, 'test_error_sampled')} | "
                     f"{_cell(r, 'final_test_error')} | {'yes' if r['selected'] else ''} |")
    s0 = summaries[0]
    lines += ["", f"Command: `{s0['command']}`; {s0['machine']}; {len(models)} models trained "
              f"as one batched model, {cfg.epochs} epoch(s); wall time {wall / 60:.1f} min "
              "(training and evaluation).", ""]
    write_atomic(out / "table.md", "\n".join(lines))
    return settings


def pruning_markdown(rows: list[dict[str, float]]) -> str:
    """The pruning table as markdown."""
    lines = ["| Proportion removed | # weights left | Test error, mean net | "
             "Test error, sampled avg |", "|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['removed_pct']:g}% | {int(r['weights_left']):,} | "
                     f"{r['test_error_mean']:.2f}% | {r['test_error_sampled']:.2f}% |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- benchmark


def bench(cfg: Config, argv: Sequence[str] = ()) -> dict[str, Any]:
    """Seconds per training epoch: BBB against the plain MLP, and R models batched.

    For each ``--bench-hidden`` size, in one process on the same data, alternating model by
    model (``--bench-rounds`` rounds) so that all see the same machine load:

    * ``mlp`` and ``bbb``: one model of the batched trainer (:mod:`bandits.classifier`);
      their ratio is the cost of Bayes by Backprop over a plain network;
    * ``autograd-mlp`` and ``autograd-bbb``: the first version's training step
      (:func:`train_epoch`: :mod:`bandits.bayes` layers and autograd), the baseline;
    * ``bbb-batched``: ``--bench-runs`` BBB models (seeds) in one batched model, against
      as many single-model ``bbb`` epochs one after another.

    ``--bench-batches N`` times N minibatches and scales to a whole epoch (0: whole
    epochs). Medians over the rounds. Writes ``speed.csv`` and ``speed.json``.
    """
    splits = load_splits(cfg)  # before the output directory is made: the data may be missing
    out = Path(cfg.out or "results/mnist")
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg.seed)
    train = splits["train"]
    n_batches = math.ceil(len(train.y) / cfg.batch_size)
    stop = n_batches if cfg.bench_batches <= 0 else min(cfg.bench_batches, n_batches)
    sizes = [int(h) for h in cfg.bench_hidden.split(",") if h.strip()]
    rows: list[dict[str, Any]] = []
    res: dict[str, Any] = {"sizes": {}}
    for hidden in sizes:
        c = dataclasses.replace(cfg, hidden=hidden, seeds=1, compile=False)
        single = {kind: build_classifiers(dataclasses.replace(c, model=kind), [c])
                  for kind in ("sgd", "bbb")}
        many = [dataclasses.replace(c, seed=c.seed + k) for k in range(cfg.bench_runs)]
        batched = build_classifiers(c, many)
        autograd = {}
        for kind in ("sgd", "bbb"):
            ck = dataclasses.replace(c, model=kind)
            m = build_model(ck, torch.Generator(device=c.device).manual_seed(c.seed + 1)
                            if kind == "bbb" else None)
            autograd[kind] = (ck, m, torch.optim.Adam(m.parameters(), lr=c.lr))
        shuffle = torch.Generator().manual_seed(c.seed + 2)

        jobs = {
            "mlp": partial(single["sgd"].train_epoch, train.x, train.y, c.batch_size,
                           ["uniform"], max_batches=stop),
            "bbb": partial(single["bbb"].train_epoch, train.x, train.y, c.batch_size,
                           [c.kl_weighting], max_batches=stop),
            "autograd-mlp": partial(train_epoch, *autograd["sgd"][1:], train, autograd["sgd"][0],
                                    shuffle, max_batches=stop),
            "autograd-bbb": partial(train_epoch, *autograd["bbb"][1:], train, autograd["bbb"][0],
                                    shuffle, max_batches=stop),
            "bbb-batched": partial(batched.train_epoch, train.x, train.y, c.batch_size,
                                   [c.kl_weighting] * len(many), max_batches=stop),
        }
        if cfg.compile:  # --compile: the single BBB model with its per-weight work fused
            fused = build_classifiers(dataclasses.replace(c, compile=True), [c])
            jobs["bbb-compiled"] = partial(fused.train_epoch, train.x, train.y, c.batch_size,
                                           [c.kl_weighting], max_batches=stop)
        for r in range(cfg.bench_rounds + 1):  # round 0 warms up and is not recorded
            for name, job in jobs.items():
                _sync(c.device)
                t0 = time.perf_counter()
                job()
                _sync(c.device)
                dt = time.perf_counter() - t0
                if r == 0:
                    continue
                rows.append({"round": r, "hidden": hidden, "model": name,
                             "models": len(many) if name == "bbb-batched" else 1,
                             "batches": stop, "seconds": dt,
                             "seconds_per_epoch": dt * n_batches / stop})
                print(rows[-1], flush=True)
        med = {name: float(np.median([x["seconds_per_epoch"] for x in rows
                                      if x["model"] == name and x["hidden"] == hidden]))
               for name in jobs}
        res["sizes"][str(hidden)] = {
            "architecture": f"784-{'-'.join([str(hidden)] * c.layers)}-10",
            "seconds_per_epoch": med,
            "ratio_bbb_over_mlp": med["bbb"] / med["mlp"],
            "ratio_bbb_over_mlp_autograd": med["autograd-bbb"] / med["autograd-mlp"],
            "bbb_speedup_over_autograd": med["autograd-bbb"] / med["bbb"],
            "batched_models": len(many),
            "batched_speedup": len(many) * med["bbb"] / med["bbb-batched"]}
        if "bbb-compiled" in med:
            res["sizes"][str(hidden)]["ratio_bbb_compiled_over_mlp"] = (med["bbb-compiled"]
                                                                        / med["mlp"])
    write_csv(out / "speed.csv", rows)
    res.update({"rounds": cfg.bench_rounds, "batches_timed": stop, "batches_per_epoch": n_batches,
                "prior": str(make_prior(cfg)), "samples": cfg.samples,
                "batch_size": cfg.batch_size, "train_images": len(train.y),
                "optimiser": f"Adam lr={cfg.lr}", "device": cfg.device,
                "machine": machine(cfg.device), "command": command_line(argv)})
    write_atomic(out / "speed.json", json.dumps(res, indent=2) + "\n")
    print(speed_markdown(res))
    return res


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def speed_markdown(sp: dict[str, Any]) -> str:
    """The benchmark's numbers as a markdown table."""
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


# --------------------------------------------------------------------------- report


# settings that do not change what a model learns (left out when grouping seeds)
_NOT_SETTINGS = {"seed", "seeds", "out", "overwrite", "progress", "plots", "threads", "device",
                 "data_dir", "download", "checkpoint_every", "resume", "report", "redraw",
                 "bench", "bench_rounds", "quick"}


def _kind(s: dict[str, Any]) -> str:
    st = s["settings"]
    return f"bbb-{st['prior']}" if st["model"] == "bbb" else st["model"]


def _fmt(values: Sequence[float], bold: bool = False) -> str:
    m, sd = mean_std(values)
    text = f"{m:.2f}" if len(values) == 1 else f"{m:.2f} +- {sd:.2f}"
    return f"**{text}**" if bold else text


def report(root: Path) -> str:
    """Tables 1 and 2 and Figures 2-4 from every model under ``root``; returns the markdown.

    Models that differ only in their seed form one row: the mean +- standard deviation
    over seeds of the test error at each model's best validation epoch.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = {"sgd": 0, "dropout": 1, "bbb-gaussian": 2, "bbb-mixture": 3}
    found = [(p.parent, json.loads(p.read_text())) for p in sorted(root.rglob("summary.json"))]
    groups: dict[tuple, list[tuple[Path, dict[str, Any]]]] = {}
    for d, s in found:
        key = (str(d.parent.relative_to(root)) if s.get("batched_models", 1) > 1 else
               str(d.relative_to(root)),
               json.dumps({k: v for k, v in s["settings"].items() if k not in _NOT_SETTINGS},
                          sort_keys=True))
        groups.setdefault(key, []).append((d, s))

    def name(key: tuple, members: list) -> str:
        d = members[0][0]
        if len(members) == 1 and members[0][1].get("batched_models", 1) == 1:
            return key[0]
        setting = d.name.rsplit("__seed=", 1)[0] if "__seed=" in d.name else ""
        return f"{key[0]}/{setting}" if setting else key[0]

    rows = sorted(groups.items(), key=lambda t: (t[1][0][1]["settings"]["hidden"],
                                                 order.get(_kind(t[1][0][1]), 9), t[0][0],
                                                 name(*t)))
    lines = ["## Table 1: MNIST test error (%)", "",
             "Ours: the test error at each model's epoch of lowest validation error (BBB: the "
             "posterior-mean network, and the average of sampled networks), and at the last "
             "epoch; mean +- standard deviation over seeds.", "",
             "| Method | Run | Units/layer | # weights | Epochs | Seeds | Test error | "
             "BBB sampled avg | Last epoch | Paper |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, members in rows:
        s0 = members[0][1]
        st = s0["settings"]
        sizes = [784] + [st["hidden"]] * st["layers"] + [10]
        n_w = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        bvs = [s.get("best_validation", s["final"]) for _, s in members]
        sampled = [b["test_error_sampled"] for b in bvs if "test_error_sampled" in b]
        paper = PAPER_TABLE1.get((_kind(s0), st["hidden"]))
        lines.append(
            f"| {_kind(s0)} | {name(key, members)} | {st['hidden']} | {n_w / 1000:.0f}k | "
            f"{s0['epochs']} | {len(members)} | "
            f"{_fmt([b['test_error_mean'] for b in bvs], bold=True)} | "
            f"{_fmt(sampled) if sampled else '-'} | "
            f"{_fmt([s['final']['test_error_mean'] for _, s in members])} | "
            f"{paper if paper else '-'} |")
    lines += ["", "Commands, machine and wall time (training + evaluation of all the models "
              "of the command):", ""]
    seen_cmd: set[str] = set()
    for _key, members in rows:
        s0 = members[0][1]
        if s0["command"] in seen_cmd:
            continue
        seen_cmd.add(s0["command"])
        wall = sum(s["wall_seconds"] for _, s in found if s["command"] == s0["command"])
        n = sum(1 for _, s in found if s["command"] == s0["command"])
        lines.append(f"- `{s0['command']}`: {n} model(s); {s0['machine']}; wall time "
                     f"{wall / 60:.1f} min ({s0['seconds_per_epoch']:.1f} s per training epoch "
                     "and model)")
    lines += ["", "## Out-of-distribution check", "",
              f"Mean predictive entropy (nats; the maximum is log 10 = {math.log(10):.3f}) and "
              "mean top-class probability on uniform-noise images, against real test images "
              "(mean over seeds). BBB: the average of the sampled networks.", "",
              "| Method | Run | Entropy, noise | Top prob., noise | Entropy, test images |",
              "|---|---|---:|---:|---:|"]
    for key, members in rows:
        ood = [s["ood"] for _, s in members]
        lines.append(f"| {_kind(members[0][1])} | {name(key, members)} | "
                     f"{np.mean([o['entropy_noise'] for o in ood]):.3f} | "
                     f"{np.mean([o['max_prob_noise'] for o in ood]):.3f} | "
                     f"{np.mean([o['entropy_test'] for o in ood]):.3f} |")
    bbb = [(k, m) for k, m in rows if "pruning" in m[0][1] and "quick" not in k[0]]
    if bbb:
        # per prior and size, the row with the lowest mean test error at the last epoch
        best: dict[tuple, tuple] = {}
        for k, m in sorted(bbb, key=lambda t: np.mean([s["final"]["test_error_mean"]
                                                       for _, s in t[1]])):
            best.setdefault((_kind(m[0][1]), m[0][1]["settings"]["hidden"]), (k, m))
        for k, members in best.values():
            st = members[0][1]["settings"]
            lines += ["", f"## Table 2: pruning by signal-to-noise ratio ({name(k, members)}, "
                      f"2 x {st['hidden']}, last epoch, {len(members)} seed(s))", "",
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
        fracs = [r["removed_pct"] for r in bbb[0][1][0][1]["pruning"]]
        if all([r["removed_pct"] for r in m[0][1]["pruning"]] == fracs for _, m in bbb):
            lines += ["", "## Pruning, every BBB row (test error of the posterior-mean "
                      "network, last epoch, mean +- std over seeds)", "",
                      "| Method | Run | Units/layer | "
                      + " | ".join(f"{f:g}% removed" for f in fracs) + " |",
                      "|---|---|---:|" + "---:|" * len(fracs)]
            for k, members in bbb:
                cells = [_fmt([s["pruning"][i]["test_error_mean"] for _, s in members])
                         for i in range(len(fracs))]
                lines.append(f"| {_kind(members[0][1])} | {name(k, members)} | "
                             f"{members[0][1]['settings']['hidden']} | " + " | ".join(cells)
                             + " |")
        k, members = min(best.values(), key=lambda t: np.mean(
            [s["final"]["test_error_mean"] for _, s in t[1]]))
        _plot_snr(members[0][0] / "snr_hist.csv", root / "fig4_snr.png", name(k, members))
    if rows:
        fig, ax = plt.subplots(figsize=(6, 4))
        for key, members in rows:  # the first seed of each row
            ep = read_csv(members[0][0] / "epochs.csv")
            ax.plot([r["epoch"] for r in ep], [r["test_error"] for r in ep],
                    label=name(key, members))
        ax.set(xlabel="epoch", ylabel="test error (%)", yscale="log",
               title="Test error against epoch (Figure 2; first seed of each row)")
        _plain_log_ticks(ax)
        ax.legend(fontsize=6)
        fig.tight_layout()
        save_figure(fig, root / "fig2_test_error.png", dpi=100)
        plt.close(fig)
        _plot_weight_hists({name(k, m): m[0][0] for k, m in rows if "quick" not in k[0]},
                           root / "fig3_weights.png")
    speed = root / "speed.json"
    if speed.exists():
        lines += ["", "## Speed", "", speed_markdown(json.loads(speed.read_text()))]
    lines += ["", "## Notes", "",
              "- Paper: Blundell et al. (2015), Table 1 (2 x 400: SGD 1.83, dropout 1.51, BBB "
              "Gaussian 1.82, BBB scale mixture 1.36) and Table 2 (pruning of the 2 x 1200 "
              "scale-mixture model: 1.24, 1.24, 1.24, 1.29, 1.39; the paper's own Table 1 gives "
              "1.32 for that model). Check these against the paper before quoting them.",
              "- 0.1 % is 10 of the 10,000 test images.",
              "- Figures: fig2_test_error.png (Figure 2), fig3_weights.png (Figure 3; BBB: one "
              "sample of the weights), fig4_snr.png (Figure 4, the SNR 10 log10(|mu|/sigma) in "
              "dB of the best BBB row's first seed)."]
    text = "\n".join(lines) + "\n"
    write_atomic(root / "tables.md", text)
    return text


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


class Interrupted(Exception):
    """Ctrl-C during training; the message says how to resume."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bandits.mnist``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except (ValueError, OSError, checkpoint.CheckpointError) as e:
        # bad flags or settings, missing or damaged data, a file that cannot be written
        return _error(str(e))
    except (MemoryError, torch.cuda.OutOfMemoryError):
        return _error("out of memory; use a smaller --hidden, --layers, --batch-size, "
                      "--seeds or grid")
    except Interrupted as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 130


def _error(message: str) -> int:
    """Print ``bandits.mnist: error: <message>`` as one line on stderr; return status 2."""
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _main(argv: list[str]) -> int:
    resume = None
    if "resume" in vars(build_parser().parse_args(argv)):
        cfg, resume = resume_config(argv)
    else:
        cfg = parse_config(argv)
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    if cfg.redraw is not None:
        redraw(Path(cfg.redraw))
        print(f"outputs in {cfg.redraw}")
        return 0
    if cfg.report is not None:
        if not Path(cfg.report).is_dir():
            raise ValueError(f"--report {cfg.report}: no such directory")
        print(report(Path(cfg.report)))
        print(f"outputs in {cfg.report}")
        return 0
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available to this torch "
                         f"{torch.__version__}; use --device cpu")
    print(f"torch threads: {torch.get_num_threads()} (--threads N changes it)", flush=True)
    if cfg.bench:
        bench(cfg, argv)
        print(f"outputs in {cfg.out or 'results/mnist'}")
        return 0
    summary = run(cfg, argv, resume)
    if summary["models"] > 1:
        print((Path(summary["out"]) / "table.md").read_text())
    else:
        print(json.dumps({k: summary[k] for k in ("label", "final", "ood", "wall_seconds")},
                         indent=2))
    print(f"outputs in {summary['out']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
