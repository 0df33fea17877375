"""The settings of the benchmark's commands: :class:`Config` (``train``: one field per
flag), :class:`BenchConfig` (``bench``), the settings ``bench`` and ``adam-probe`` take
(:data:`BENCH_SETTINGS`, :data:`PROBE_SETTINGS`), their checks, and the models a command
trains (every combination of the grid settings, times ``--seeds`` seeds)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from bandits.bayes import ESTIMATORS, make_lenet5
from bandits.core import kernels
from bandits.core.config import OPEN, check_choices, check_ranges, flag, setting
from bandits.core.files import machine_memory
from bandits.mnist.models.classifiers import IN_FEATURES, MODEL_KINDS, OPTIMIZERS, n_parameters

T = TypeVar("T")  # a grid setting's type (one)
ARCHS = ("mlp", "lenet5")
PRIORS = ("mixture", "gaussian")

# the settings that matter for each prior (the others are ignored by it)
PRIOR_FIELDS = {"mixture": ("pi", "neg_log_sigma1", "neg_log_sigma2"),
                "gaussian": ("neg_log_prior_sigma",)}

# The numeric settings' allowed ranges are on their fields. The caps keep the values a
# machine can run (a seed numpy accepts, finite learning rates, ...); sizes that would
# not fit in memory are refused by check_memory.
MAX_INT = 2**31 - 1
MAX_SEED = 2**31 - 1
NEG_LOG_SIGMA = (-10.0, 30.0)  # sigma from 2.2e4 down to 9e-14, fine in float32


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# settings that act only under another's value (refused elsewhere: bandits.core.conditions)
BBB_ONLY = (lambda c: c["model"] == "bbb", "use --model bbb (it is BBB's)")
WITH_MIXTURE = (lambda c: c["model"] == "bbb" and "mixture" in _listed(c["prior"]),
                "use --model bbb --prior mixture")
WITH_GAUSSIAN = (lambda c: c["model"] == "bbb" and "gaussian" in _listed(c["prior"]),
                 "use --model bbb --prior gaussian")


@dataclass
class Config:
    """Settings of one training command; every field is a kebab-case flag. A grid setting
    may take several values in one run (BBB): every combination is trained, each with
    --seeds seeds as one batched model."""

    model: str = setting("bbb", f"one of {MODEL_KINDS}", choices=MODEL_KINDS)
    arch: str = setting("mlp", "network: 'mlp' (784 -> --hidden x --layers -> 10, the "
                               "paper's) or 'lenet5' (LeNet-5: two convolutions, 120, 84; "
                               "--model bbb or sgd)", choices=ARCHS)
    estimator: str = setting("reparam", "BBB: how the weight noise is drawn: 'reparam' (one "
                                        "weight sample per minibatch, the paper's), 'lrt' "
                                        "(local reparameterisation: noise per image) or "
                                        "'flipout'; the MLP trains 'lrt' and 'flipout' by "
                                        "autograd", choices=ESTIMATORS)
    prior: str | list[str] = setting("mixture", f"BBB prior, one of {PRIORS}", grid=True,
                                               choices=PRIORS, acts_when=BBB_ONLY)
    pi: float | list[float] = setting(
        0.5, "scale mixture: weight of N(0, sigma1^2)", grid=True, acts_when=WITH_MIXTURE)
    neg_log_sigma1: float | list[float] = setting(
        0.0, "scale mixture: -log sigma1 (paper's grid 0, 1, 2)", range=NEG_LOG_SIGMA,
        grid=True, acts_when=WITH_MIXTURE)
    neg_log_sigma2: float | list[float] = setting(
        6.0, "scale mixture: -log sigma2 (paper's grid 6, 7, 8)", range=NEG_LOG_SIGMA,
        grid=True, acts_when=WITH_MIXTURE)
    neg_log_prior_sigma: float | list[float] = setting(
        0.0, "Gaussian prior: -log sigma", range=NEG_LOG_SIGMA, grid=True, acts_when=WITH_GAUSSIAN)
    init_rho: float = setting(
        -5.0, "initial posterior rho, sigma = softplus(rho) (-5: sigma = 0.0067)",
        range=(-30.0, 10.0))
    complexity: str = setting(
        "mc", "complexity cost: 'mc' (the paper's sampled estimate) or 'kl' (closed form, no "
              "sampling noise: the KL for --prior gaussian; for --prior mixture the KL of the "
              "mixture as a hierarchical prior, an upper bound on its KL)", choices=("mc", "kl"))
    kl_weighting: str | list[str] = setting(
        "blundell", "KL weight per minibatch: 'blundell' (2^(M-i)/(2^M-1), section 3.4; "
        "better than 'uniform' for both priors over 3 seeds, see results/mnist) or "
        "'uniform' (1/M, eq. 8)", grid=True, choices=("uniform", "blundell"))
    kl_factor: float | list[float] = setting(
        1.0, "multiplies every minibatch's KL weight: 1 is the ELBO; a smaller factor is a "
        "tempered ELBO (the complexity cost counts less than the data)", range=(0.0, 1e6),
        grid=True, acts_when=BBB_ONLY)
    kl_factor_final: float | None = setting(
        None, "schedule the KL factor: it moves geometrically from --kl-factor at the first "
        "epoch to this value at the last (e.g. --kl-factor 0.03 --kl-factor-final 1: a "
        "tempered ELBO that becomes the ELBO by the end; default: --kl-factor throughout)",
        range=(OPEN(0.0), 1e6), type=float)
    hidden: int = setting(400, "units in each of the hidden layers", range=(1, MAX_INT))
    layers: int = setting(2, "number of hidden layers", range=(1, 1000))
    dropout: float = setting(
        0.5, "dropout probability (model dropout)", range=(0.0, OPEN(1.0)),
        acts_when=(lambda c: c["model"] == "dropout", "use --model dropout"))
    epochs: int = setting(10, "training epochs", range=(1, 1_000_000), resume=True)
    samples: int = setting(1, "BBB weight samples per training step", range=(1, 100_000))
    eval_samples: int = setting(
        10, "sampled networks averaged in the BBB evaluation", range=(1, 100_000))
    optimizer: str = setting(
        "adam", "'adam' (on the loss per image) or 'sgd' (plain minibatch gradient descent "
        "on the minibatch's summed loss, eq. 8: the paper's, whose --lr grid is 1e-3, 1e-4, "
        "1e-5)", choices=OPTIMIZERS)
    lr: float = setting(1e-3, "learning rate", range=(OPEN(0.0), 10.0))
    lr_schedule: str = setting(
        "constant", "'constant', or 'cosine': anneal from --lr to --lr-min over the epochs",
        choices=("constant", "cosine"))
    lr_min: float = setting(0.0, "final learning rate of 'cosine'", range=(0.0, 10.0),
                            acts_when=(lambda c: c["lr_schedule"] == "cosine",
                                       "add --lr-schedule cosine"))
    batch_size: int = setting(128, "minibatch size", range=(1, MAX_INT))
    full_train: bool = setting(False, "train on all 60,000 images (no validation set)")
    train_size: int = setting(
        0, "use only the first N training images (0: all; for smoke tests)",
        range=(0, MAX_INT))
    test_size: int = setting(
        0, "use only the first N test and validation images (0: all)", range=(0, MAX_INT))
    prune: str = setting(
        "0,50,75,95,98", "percentages of lowest-SNR weights removed in the pruning table")
    ood_images: int = setting(
        1000, "uniform-noise images for the out-of-distribution entropy check",
        range=(1, 10_000_000))
    seed: int = setting(
        0, "random seed (of the first seed with --seeds)", range=(0, MAX_SEED))
    seeds: int = setting(
        1, "train N seeds (--seed, --seed + 1, ...) of every setting, a setting's seeds in "
        "one batched model; results per model and mean +- std per setting",
        range=(1, 100_000))
    device: str = setting("cpu", "cpu or cuda", choices=("cpu", "cuda"))
    threads: int = setting(
        0, "torch CPU threads per process (0: 1 when the command trains several settings, "
        "so that the results do not depend on --workers, or with --exact; else torch's "
        "default)", range=(0, 1024))
    workers: int | None = setting(
        None, "processes that train the batched models (one per setting, with its seeds) "
        "side by side; the results are the same for every value (default: "
        "$BANDITS_WORKERS, else the cores this process may use on a CPU and 1 with --device "
        "cuda, at most one per setting)", range=(1, 1024), type=int, resume=True)
    compile: bool = setting(
        False, "fuse BBB's per-weight work with torch.compile (worth it on a GPU)")
    exact: bool = setting(False, kernels.EXACT_HELP,  # beside --resume only as the run was
                          resume=True)  # made: the process's mode, checked against the run's
    out: str | None = setting(
        None, "output directory (default: a new directory under runs/)", type=str)
    overwrite: bool = setting(
        False, "allow training into an existing non-empty output directory")
    data_dir: str | None = setting(
        None, "directory holding mnist/*.gz (else $BANDITS_DATA_DIR, the cache, a download)",
        type=str, resume=True)
    # a setting that is on by default is switched off by its --no-... flag; its help
    # says what giving that flag does
    download: bool = setting(
        True, "never download: fail with an error if a data file is missing (default: "
        "missing files are downloaded)", resume=True)
    progress: bool = setting(True, "hide the progress bar of each epoch (default: shown)",
                             resume=True)
    # off by default: a run's per-model PNGs are drawn only when asked for
    plots: bool = setting(
        False, "draw each model's plots (test_error.png, weights.png, snr.png) from its CSV "
        "files, which are written either way", resume=True)
    quick: bool = setting(
        False, "preset: BBB 2x400 scale mixture, Adam, 10 epochs (about 1 min on one CPU core)")
    checkpoint_every: float = setting(
        300.0, "write a checkpoint after an epoch once this many seconds have passed since "
        "the last one (0: after every epoch); always after the last epoch",
        range=(0.0, math.inf), allow_inf=True, resume=True)
    resume: str | None = setting(
        None, "continue the training in this output directory from its checkpoint (written "
        "after an epoch once --checkpoint-every seconds have passed, and after the last "
        "epoch) with its settings; --epochs may extend a constant-lr run", type=str, resume=True)

    def validate(self) -> None:
        """Raise ValueError on settings that cannot run (naming the flag and a fix), and
        :class:`bandits.core.config.UsageError` on a number outside its field's range."""
        check_choices(self, ValueError)  # each field's own (setting(choices=...))
        for name in GRID_FIELDS:
            values = grid_values(self, name)
            if len(values) != len(set(values)):
                raise ValueError(f"{flag(name)} lists a value twice: {values}; give each value "
                                 "once")
            if len(values) > 1 and self.model != "bbb":
                raise ValueError(f"{flag(name)} takes several values only with --model bbb")
            for v in values:
                if name != "prior" and name != "kl_weighting" and not math.isfinite(v):
                    raise ValueError(f"{flag(name)} must be a finite number, got {v}")
        if any(not 0.0 < p < 1.0 for p in grid_values(self, "pi")) and (
                "mixture" in grid_values(self, "prior")):
            raise ValueError(f"--pi must be strictly between 0 and 1, got "
                             f"{grid_values(self, 'pi')} (for pi 0 or 1 use --prior gaussian)")
        checks = [
            (self.arch == "mlp" or self.model in ("bbb", "sgd"),
             f"--arch lenet5 trains --model bbb or sgd, got --model {self.model}"),
            (self.arch == "lenet5" or self.estimator == "reparam" or self.model == "bbb",
             f"--estimator {self.estimator} draws BBB's weight noise: use it with --model bbb"),
            (not self.compile or (self.arch == "mlp" and self.estimator == "reparam"),
             "--compile fuses the MLP's 'reparam' step: leave it out with --arch lenet5 "
             "or --estimator lrt/flipout"),
            (self.kl_factor_final is None or (self.model == "bbb"
                                              and min(grid_values(self, "kl_factor")) > 0),
             "--kl-factor-final schedules BBB's training: use it with --model bbb and a "
             "--kl-factor above 0 (the schedule is geometric)"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        check_ranges(self)
        if self.seed + self.seeds - 1 > MAX_SEED:
            raise ValueError(f"--seed + --seeds - 1 must be at most {MAX_SEED}, got "
                             f"{self.seed + self.seeds - 1}")
        _check_list(self, "prune", float, 0.0, 100.0, "percentages from 0 to 100")
        check_memory(self)

    def prune_fractions(self) -> list[float]:
        """``--prune`` as fractions in [0, 1]."""
        return [float(p) / 100.0 for p in self.prune.split(",") if p.strip()]


def _check_list(cfg: Config, name: str, kind: type, lo: float, hi: float, what: str) -> None:
    """Raise ValueError unless the setting ``name`` is a comma-separated list of numbers
    of type ``kind`` in ``[lo, hi]`` (``what`` names them in the message)."""
    text = getattr(cfg, name)
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(not lo <= v <= hi for v in values):
        raise ValueError(f"{flag(name)} must be a comma-separated list of {what}, got {text!r}")


@dataclass
class BenchConfig(Config):
    """Settings of ``bench``: the model's settings (one value each) and the timing's."""

    bench_rounds: int = setting(3, "interleaved epochs per model", range=(1, 100_000))
    bench_hidden: str = setting("400,1200", "hidden sizes timed")
    bench_runs: int = setting(
        8, "models batched together in the batched timing", range=(1, 100_000))
    bench_batches: int = setting(
        0, "time this many minibatches per epoch, scaled to the epoch (0: all)",
        range=(0, MAX_INT))

    def validate(self) -> None:
        """:meth:`Config.validate`, and one value per grid setting and positive sizes."""
        for name in GRID_FIELDS:
            if len(grid_values(self, name)) > 1:
                raise ValueError(f"bench times one setting: give {flag(name)} one value")
        _check_list(self, "bench_hidden", int, 1, MAX_INT, "positive integers")
        super().validate()

    def bench_sizes(self) -> list[int]:
        """``--bench-hidden`` as a list of hidden sizes."""
        return [int(h) for h in self.bench_hidden.split(",") if h.strip()]


# The settings that may take several values in one run (BBB), in field order.
GRID_FIELDS = tuple(f.name for f in dataclasses.fields(Config) if "grid" in f.metadata)

# The settings each command other than ``train`` (which takes every field of Config)
# shows and takes; the others keep their defaults. ``bench`` times BBB (and the plain
# MLP) at each --bench-hidden, ``adam-probe`` trains BBB under Adam, one seed per setting.
_DATA_AND_RUN = ("train_size", "test_size", "seed", "device", "threads", "out", "overwrite",
                 "data_dir", "download", "progress")
_PRIOR = ("prior", "pi", "neg_log_sigma1", "neg_log_sigma2", "neg_log_prior_sigma")
BENCH_SETTINGS = (*_PRIOR, "init_rho", "complexity", "kl_weighting", "layers", "samples",
                  "lr", "batch_size", "compile", *_DATA_AND_RUN, "bench_rounds",
                  "bench_hidden", "bench_runs", "bench_batches")
PROBE_SETTINGS = (*_PRIOR, "init_rho", "complexity", "kl_weighting", "kl_factor", "hidden",
                  "layers", "epochs", "samples", "lr", "batch_size", *_DATA_AND_RUN)


# --------------------------------------------------------------------------- the models


def grid_values(cfg: Config, name: str) -> list[Any]:
    """The values of a grid setting as a list (one value or several)."""
    v = getattr(cfg, name)
    return list(v) if isinstance(v, list | tuple) else [v]


def one(value: T | list[T]) -> T:
    """A grid setting of one model's settings (:func:`expand` gives it one value)."""
    return cast(T, value)


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


def batches(models: Sequence[Config]) -> list[list[int]]:
    """The models trained together: one batch per setting (the indices into ``models`` of
    its seeds), in the order of ``models``. Which models share a batch decides the
    rounding of the batched kernels, so it never depends on the number of workers."""
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(models):
        groups.setdefault(tuple(getattr(m, f) for f in GRID_FIELDS), []).append(i)
    return list(groups.values())


def varying(models: Sequence[Config]) -> list[str]:
    """The grid settings that differ between ``models``, in :data:`GRID_FIELDS` order."""
    return [f for f in GRID_FIELDS if len({getattr(m, f) for m in models}) > 1]


def setting_name(cfg: Config, fields: Sequence[str]) -> str:
    """A model's setting as a name: ``prior=mixture__pi=0.25`` (``fields`` that matter)."""
    used = [f for f in fields if f in ("prior", "kl_weighting", "kl_factor")
            or f in PRIOR_FIELDS.get(one(cfg.prior), ())]
    return "__".join(f"{f}={getattr(cfg, f):g}" if isinstance(getattr(cfg, f), float)
                     else f"{f}={getattr(cfg, f)}" for f in used) or "base"


def run_label(cfg: Config) -> str:
    """A short name: ``bbb-mixture-2x400``, ``bbb-gaussian-lenet5-flipout``."""
    kind = f"bbb-{'+'.join(grid_values(cfg, 'prior'))}" if cfg.model == "bbb" else cfg.model
    if cfg.arch == "lenet5":
        return f"{kind}-lenet5" + (f"-{cfg.estimator}" if cfg.model == "bbb" else "")
    est = f"-{cfg.estimator}" if cfg.model == "bbb" and cfg.estimator != "reparam" else ""
    return f"{kind}-{cfg.layers}x{cfg.hidden}{est}"


QUICK = {"model": "bbb", "prior": "mixture", "hidden": 400, "layers": 2, "epochs": 10,
         "samples": 1, "lr": 1e-3, "batch_size": 128}


# --------------------------------------------------------------------------- checks


def _bytes_text(n: float) -> str:
    """``12.3 GiB`` and the like."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    raise AssertionError


def lenet5_parameters() -> int:
    """Weights and biases of LeNet-5 for 28 x 28 digits (counted on a plain one)."""
    return sum(p.numel() for p in make_lenet5(bayesian=False).parameters())


def memory_estimate(cfg: Config) -> tuple[int, int, int]:
    """Rough bytes the settings need, before anything is allocated: float32 parameters of
    one model x the models trained together x 4 (mu and rho, or weights and gradients, and
    Adam's two moments), plus the out-of-distribution noise images. Returns
    ``(bytes, models, largest hidden size)``."""
    if isinstance(cfg, BenchConfig):
        hidden = max(cfg.bench_sizes())
        models = cfg.bench_runs + 5
    else:
        hidden = cfg.hidden
        models = len(expand(dataclasses.replace(cfg, seeds=1))) * cfg.seeds
    n_params = (lenet5_parameters() if cfg.arch == "lenet5"
                else n_parameters([hidden] * cfg.layers))
    return n_params * 4 * models * 4 + cfg.ood_images * IN_FEATURES * 12, models, hidden


def check_memory(cfg: Config) -> None:
    """Raise ValueError when the settings would need more memory than the machine has."""
    need, models, hidden = memory_estimate(cfg)
    bench = isinstance(cfg, BenchConfig)
    have = machine_memory(cfg.device)
    images = cfg.ood_images * IN_FEATURES * 12
    if have and need > have and images > need / 2:  # the noise images are most of it
        raise ValueError(
            f"--ood-images {cfg.ood_images} needs about {_bytes_text(images)} for its noise "
            f"and shifted images, more than this machine's {_bytes_text(have)} of memory; "
            "use a smaller --ood-images")
    if have and need > have:
        what = "GPU" if cfg.device == "cuda" else "machine"
        raise ValueError(
            f"{flag('bench_hidden' if bench else 'hidden')} {hidden} with --layers "
            f"{cfg.layers} and {models} model(s) needs about {_bytes_text(need)} (parameters x "
            f"models x 4 for mu, rho and Adam's moments), more than this {what}'s "
            f"{_bytes_text(have)} of memory; use a smaller --hidden, --layers, --seeds or grid")
