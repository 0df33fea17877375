"""The MNIST classification benchmark of Blundell et al. (2015), section 5.1.

Trains a two-hidden-layer ReLU classifier on MNIST, either Bayes by Backprop
(``bbb``, Gaussian or scale-mixture prior) or a same-size baseline (``sgd``: a
plain MLP; ``dropout``: the MLP with dropout), and writes into ``--out``:

* ``config.json``: the settings; ``epochs.csv``: per epoch the training loss,
  the NLL and KL terms, validation and test error, seconds;
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
the sampled weights, averaged over ``--samples`` draws) and ``pi_i = 1/M``
(``--kl-weighting uniform``) or ``2^(M-i) / (2^M - 1)`` (``blundell``). The
optimiser minimises ``F_i / B`` (``B``: the batch size); this constant factor
leaves Adam's steps unchanged and keeps the printed loss per image. Summed over
an epoch, ``sum_i F_i`` is the negative ELBO of the whole training set.

**Optimiser.** Adam, learning rate ``--lr`` (1e-3) for every model, constant or
cosine-annealed to ``--lr-min`` (``--lr-schedule cosine``); plain SGD diverges
for many settings of the paper's grid.

**Baselines.** ``sgd``: the same MLP with point weights and the cross-entropy
only; ``dropout``: the same with dropout ``--dropout`` (0.5) after each hidden
layer, switched off at test time. Both are trained with Adam as well.

Run ``python -m bandits.mnist --help`` for the flags, ``--quick`` for a few-minute
check, ``--bench`` to time BBB against the plain MLP, and ``--report DIR`` to
build the tables and figures from the runs under ``DIR``.
"""

from __future__ import annotations

import argparse
import copy
import csv
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
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
from bandits.idx import load_mnist, preprocess
from bandits.results import output_dir

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
    prior: str = field(default="mixture", metadata={"help": f"BBB prior, one of {PRIORS}"})
    pi: float = field(default=0.5, metadata={"help": "scale mixture: weight of N(0, sigma1^2)"})
    neg_log_sigma1: float = field(default=0.0, metadata={
        "help": "scale mixture: -log sigma1 (paper's grid 0, 1, 2)"})
    neg_log_sigma2: float = field(default=6.0, metadata={
        "help": "scale mixture: -log sigma2 (paper's grid 6, 7, 8)"})
    neg_log_prior_sigma: float = field(default=0.0, metadata={
        "help": "Gaussian prior: -log sigma"})
    init_rho: float = field(default=-5.0, metadata={
        "help": "initial posterior rho, sigma = softplus(rho) (-5: sigma = 0.0067)"})
    complexity: str = field(default="mc", metadata={
        "help": "complexity cost: 'mc' (the paper's sampled estimate) or 'kl' (Gaussian prior)"})
    kl_weighting: str = field(default="uniform", metadata={
        "help": "KL weight per minibatch: 'uniform' (1/M, eq. 8) or 'blundell' (2^(M-i)/(2^M-1))"})
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
    seed: int = field(default=0, metadata={"help": "random seed"})
    device: str = field(default="cpu", metadata={"help": "cpu or cuda"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    out: str | None = field(default=None, metadata={
        "help": "output directory (training: a new directory under results/runs/ when unset; "
                "--bench: results/mnist)"})
    overwrite: bool = field(default=False, metadata={
        "help": "allow training into an existing non-empty output directory"})
    data_dir: str | None = field(default=None, metadata={
        "help": "directory holding mnist/*.gz (else $BANDITS_DATA_DIR, the cache, a download)"})
    download: bool = field(default=True, metadata={"help": "download missing data files"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar per epoch"})
    plots: bool = field(default=True, metadata={"help": "draw the PNG plots"})
    quick: bool = field(default=False, metadata={
        "help": "preset: BBB 2x400 scale mixture, Adam, 10 epochs (about 2 min on one CPU core)"})
    bench: bool = field(default=False, metadata={
        "help": "time epochs of BBB and the plain MLP, interleaved; writes speed.csv/json"})
    bench_rounds: int = field(default=3, metadata={
        "help": "interleaved epochs per model (--bench)"})
    report: str | None = field(default=None, metadata={
        "help": "build tables and figures from the runs under this directory, then exit"})
    redraw: str | None = field(default=None, metadata={
        "help": "rewrite a run directory's histograms and plots from its saved model, then exit"})
    resume: str | None = field(default=None, metadata={
        "help": "continue the training in this output directory from its checkpoint (written "
                "after every epoch) with its settings; --epochs may extend a constant-lr run"})

    def validate(self) -> None:
        """Raise ValueError on settings that cannot run."""
        checks = [
            (self.model in MODELS, f"--model must be one of {MODELS}"),
            (self.prior in PRIORS, f"--prior must be one of {PRIORS}"),
            (self.complexity in ("mc", "kl"), "--complexity must be 'mc' or 'kl'"),
            (self.complexity == "mc" or self.prior == "gaussian",
             "--complexity kl needs --prior gaussian"),
            (self.kl_weighting in ("uniform", "blundell"),
             "--kl-weighting must be 'uniform' or 'blundell'"),
            (self.hidden > 0 and self.layers > 0, "--hidden and --layers must be positive"),
            (self.epochs >= 0, "--epochs must be >= 0"),
            (self.samples >= 1 and self.eval_samples >= 1, "--samples, --eval-samples >= 1"),
            (self.lr > 0 and self.batch_size > 0, "--lr and --batch-size must be positive"),
            (self.lr_schedule in ("constant", "cosine"), "--lr-schedule: 'constant' or 'cosine'"),
            (0.0 <= self.dropout < 1.0, "--dropout must be in [0, 1)"),
            (self.device in ("cpu", "cuda"), "--device must be cpu or cuda"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)

    def prune_fractions(self) -> list[float]:
        """``--prune`` as fractions in [0, 1]."""
        return [float(p) / 100.0 for p in self.prune.split(",") if p.strip()]


QUICK = {"model": "bbb", "prior": "mixture", "hidden": 400, "layers": 2, "epochs": 10,
         "samples": 1, "lr": 1e-3, "batch_size": 128}


# --------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    """An argparse parser with one kebab-case flag per :class:`Config` field."""
    parser = argparse.ArgumentParser(
        prog="python -m bandits.mnist",
        description="MNIST benchmark of Bayes by Backprop (Blundell et al. 2015, Tables 1-2).",
        argument_default=argparse.SUPPRESS)
    for f in dataclasses.fields(Config):
        flag = "--" + f.name.replace("_", "-")
        help_ = f"{f.metadata['help']} (default: {f.default})"
        if f.type in ("bool", bool):
            if f.default:
                parser.add_argument("--no-" + f.name.replace("_", "-"), dest=f.name,
                                    action="store_false", help=help_)
            else:
                parser.add_argument(flag, dest=f.name, action="store_true", help=help_)
            continue
        typ = {"int": int, "float": float}.get(str(f.type), str)
        parser.add_argument(flag, dest=f.name, type=typ, metavar=f.name.upper(), help=help_)
    return parser


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse flags into a :class:`Config`; ``--quick`` fills in what was not given."""
    given = vars(build_parser().parse_args(argv))
    values: dict[str, Any] = dict(QUICK) if given.get("quick") else {}
    values.update(given)
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
                shuffle: torch.Generator, desc: str = "") -> dict[str, float]:
    """One epoch of minibatch training; returns the epoch means of loss, NLL and KL.

    Minimises ``(pi_i KL + sum NLL) / B`` per minibatch (see the module docstring).
    """
    model.train()
    n = len(data.y)
    perm = torch.randperm(n, generator=shuffle).to(data.x.device)
    n_batches = math.ceil(n / cfg.batch_size)
    bayes = is_bayesian(model)
    weights = kl_weights(n_batches, cfg.kl_weighting) if bayes else None
    tot_nll = tot_kl = tot_loss = 0.0
    bar = tqdm(range(n_batches), desc=desc, disable=not cfg.progress, leave=False,
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
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


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
    fig.savefig(out / "test_error.png", dpi=100)
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
    fig.savefig(path, dpi=100)
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
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_label(cfg: Config) -> str:
    """A short name: ``bbb-mixture-2x400``."""
    kind = f"bbb-{cfg.prior}" if cfg.model == "bbb" else cfg.model
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


CHECKPOINT_KIND = "bandits.mnist"
# flags that may be given beside --resume: they do not change the results
RESUME_FLAGS = {"resume", "epochs", "progress", "plots", "data_dir", "download"}


def resume_config(argv: Sequence[str]) -> tuple[Config, dict[str, Any]]:
    """The settings of the run to resume (from its checkpoint) and the checkpoint's state."""
    given = vars(build_parser().parse_args(argv))
    refused = sorted(set(given) - RESUME_FLAGS)
    if refused:
        raise ValueError(f"--{refused[0].replace('_', '-')} cannot be given with --resume: it "
                         "would change the results (only --epochs, --no-progress, --no-plots, "
                         "--data-dir, --no-download may be added)")
    out = Path(given["resume"])
    try:
        state = checkpoint.load(out / checkpoint.NAME, CHECKPOINT_KIND)
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


def run(cfg: Config, argv: Sequence[str] = (), resume: dict[str, Any] | None = None
        ) -> dict[str, Any]:
    """Train and evaluate one model; write every output file; return the summary.

    A checkpoint is written after every epoch; ``resume`` (a checkpoint's state, see
    :func:`resume_config`) continues from it to the same result as an uninterrupted run.
    """
    t_start = time.perf_counter()
    if resume is None:
        out = output_dir(cfg.out, f"mnist-{run_label(cfg)}", cfg.overwrite)
    else:
        out = Path(cfg.out)
    (out / "config.json").write_text(json.dumps(saved_config(cfg), indent=2) + "\n")
    noise_gen, shuffle_gen = seed_everything(cfg.seed)
    if cfg.device == "cuda":
        noise_gen = torch.Generator(device="cuda").manual_seed(cfg.seed + 1)
    splits = load_splits(cfg)
    model = build_model(cfg, noise_gen if cfg.model == "bbb" else None)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(cfg.epochs, 1), cfg.lr_min)
             if cfg.lr_schedule == "cosine" else None)
    label = run_label(cfg)
    has_val = "val" in splits
    rows: list[dict[str, float]] = []
    best = {"val_error": math.inf, "epoch": 0, "state": copy.deepcopy(model.state_dict())}
    first_epoch, wall_before = 1, 0.0
    command = command_line(argv)
    if resume is not None:
        command = f"{resume['command']} (resumed with: {command})"
        model.load_state_dict(resume["model"])
        opt.load_state_dict(resume["optimizer"])
        if sched is not None:
            sched.load_state_dict(resume["scheduler"])
        noise_gen.set_state(resume["generators"][0])
        shuffle_gen.set_state(resume["generators"][1])
        torch.set_rng_state(resume["torch_rng"])
        if cfg.device == "cuda" and resume["cuda_rng"] is not None:
            torch.cuda.set_rng_state(resume["cuda_rng"])
        rows, best = resume["rows"], resume["best"]
        first_epoch, wall_before = resume["epoch"] + 1, resume["wall_seconds"]
    for epoch in range(first_epoch, cfg.epochs + 1):
        try:
            t0 = time.perf_counter()
            lr = opt.param_groups[0]["lr"]
            stats = train_epoch(model, opt, splits["train"], cfg, shuffle_gen,
                                desc=f"{label} epoch {epoch}/{cfg.epochs}")
        except KeyboardInterrupt:
            kept = (f"resume after epoch {epoch - 1} with: python -m bandits.mnist --resume {out}"
                    if epoch > 1 else "no epoch was completed")
            raise Interrupted(f"interrupted in epoch {epoch}; {kept}") from None
        t_train = time.perf_counter() - t0
        if sched is not None:
            sched.step()
        val = evaluate(model, splits["val"], cfg, sampled=False)["mean"] if has_val else math.nan
        test = evaluate(model, splits["test"], cfg, sampled=False)["mean"]
        rows.append({"epoch": epoch, "lr": lr, **stats, "val_error": val, "test_error": test,
                     "seconds": t_train, "eval_seconds": time.perf_counter() - t0 - t_train})
        write_csv(out / "epochs.csv", rows)
        print(f"{label} epoch {epoch:4d}  loss {stats['train_loss']:.4f}  nll {stats['nll']:.4f}  "
              f"kl {stats['kl']:.4g}  val {val:.2f}%  test {test:.2f}%  {t_train:.1f}s",
              flush=True)
        if has_val and val < best["val_error"]:
            best = {"val_error": val, "epoch": epoch, "state": copy.deepcopy(model.state_dict())}
        checkpoint.save(out / checkpoint.NAME, CHECKPOINT_KIND, {
            "epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": None if sched is None else sched.state_dict(),
            "generators": [noise_gen.get_state(), shuffle_gen.get_state()],
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state() if cfg.device == "cuda" else None,
            "rows": rows, "best": best, "config": saved_config(cfg), "command": command,
            "wall_seconds": wall_before + time.perf_counter() - t_start})
    raw = out / "raw"  # ignored by git: the trained weights
    raw.mkdir(exist_ok=True)
    torch.save(model.state_dict(), raw / "model.pt")
    final = {f"test_error_{k}": v for k, v in evaluate(model, splits["test"], cfg, True).items()}
    if has_val:
        final.update({f"val_error_{k}": v
                      for k, v in evaluate(model, splits["val"], cfg, True).items()})
    summary: dict[str, Any] = {"label": label, "final": final}
    if has_val and cfg.epochs > 0:
        final_state = copy.deepcopy(model.state_dict())
        model.load_state_dict(best["state"])
        summary["best_validation"] = {
            "epoch": best["epoch"], "val_error_mean": best["val_error"],
            **{f"test_error_{k}": v for k, v in evaluate(model, splits["test"], cfg, True).items()}}
        model.load_state_dict(final_state)
    summary["ood"] = ood_check(model, splits["test"], cfg)
    if is_bayesian(model):
        prune_rows = prune_table(model, splits["test"], cfg)
        summary["pruning"] = prune_rows
        write_csv(out / "pruning.csv", prune_rows)
        (out / "pruning.md").write_text(pruning_markdown(prune_rows) + "\n")
    write_histograms(model, out)
    secs = [r["seconds"] for r in rows]
    summary.update({
        "epochs": cfg.epochs,
        "seconds_per_epoch": float(np.median(secs)) if secs else math.nan,
        "wall_seconds": wall_before + time.perf_counter() - t_start,
        "device": cfg.device, "machine": machine(cfg.device),
        "command": command, "n_weights": sum(p.numel() for p in model.parameters()),
        "settings": saved_config(cfg),
    })
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if cfg.plots and rows:
        plot_run(out, label)
    return summary


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
    """Seconds per training epoch of BBB and of the plain MLP of the same size.

    The two are timed in one process on the same data, alternating epoch by
    epoch (``--bench-rounds`` each) so that both see the same machine load;
    the ratio of the medians is reported. Writes ``speed.csv`` and ``speed.json``.
    """
    out = Path(cfg.out or "results/mnist")
    out.mkdir(parents=True, exist_ok=True)
    noise_gen, shuffle_gen = seed_everything(cfg.seed)
    splits = load_splits(cfg)
    models = {}
    for kind in ("sgd", "bbb"):
        c = dataclasses.replace(cfg, model=kind)
        m = build_model(c, noise_gen if kind == "bbb" else None)
        models[kind] = (c, m, torch.optim.Adam(m.parameters(), lr=cfg.lr))
    rows = []
    for r in range(cfg.bench_rounds):
        for kind, (c, m, opt) in models.items():
            t0 = time.perf_counter()
            train_epoch(m, opt, splits["train"], c, shuffle_gen, desc=f"bench {kind} {r + 1}")
            rows.append({"round": r + 1, "model": kind, "seconds": time.perf_counter() - t0})
            print(rows[-1], flush=True)
    write_csv(out / "speed.csv", rows)
    med = {k: float(np.median([r["seconds"] for r in rows if r["model"] == k])) for k in models}
    res = {"seconds_per_epoch_bbb": med["bbb"], "seconds_per_epoch_mlp": med["sgd"],
           "ratio_bbb_over_mlp": med["bbb"] / med["sgd"], "rounds": cfg.bench_rounds,
           "architecture": f"784-{'-'.join([str(cfg.hidden)] * cfg.layers)}-10",
           "prior": str(make_prior(cfg)), "samples": cfg.samples,
           "batch_size": cfg.batch_size, "train_images": len(splits["train"].y),
           "optimiser": f"Adam lr={cfg.lr}", "device": cfg.device,
           "machine": machine(cfg.device), "command": command_line(argv)}
    (out / "speed.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    return res


# --------------------------------------------------------------------------- report


def report(root: Path) -> str:
    """Tables 1 and 2 and Figures 2-4 from the runs under ``root``; returns the markdown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = {"sgd": 0, "dropout": 1, "bbb-gaussian": 2, "bbb-mixture": 3}

    def kind(s: dict[str, Any]) -> str:
        st = s["settings"]
        return f"bbb-{st['prior']}" if st["model"] == "bbb" else st["model"]

    found = [(p.parent, json.loads(p.read_text())) for p in root.glob("*/summary.json")]
    found.sort(key=lambda t: (t[1]["settings"]["hidden"], order.get(kind(t[1]), 9), t[0].name))
    runs = dict(found)
    lines = ["## Table 1: MNIST test error (%)", "",
             "Ours: the test error at the epoch of lowest validation error (BBB: posterior-mean "
             "network, and the average of the sampled networks), and at the last epoch.", "",
             "| Method | Run | Units/layer | # weights | Epochs (best val.) | Test error | "
             "BBB sampled avg | Last epoch | Paper |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for d, s in runs.items():
        st = s["settings"]
        sizes = [784] + [st["hidden"]] * st["layers"] + [10]
        n_w = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        bv = s.get("best_validation", s["final"])
        paper = PAPER_TABLE1.get((kind(s), st["hidden"]))
        sampled = bv.get("test_error_sampled")
        lines.append(
            f"| {kind(s)} | {d.name} | {st['hidden']} | {n_w / 1000:.0f}k | {s['epochs']} "
            f"({bv.get('epoch', s['epochs'])}) | **{bv['test_error_mean']:.2f}** | "
            f"{'-' if sampled is None else f'{sampled:.2f}'} | "
            f"{s['final']['test_error_mean']:.2f} | {paper if paper else '-'} |")
    lines += ["", "Commands, machine and wall time (training + evaluation):", ""]
    lines += [f"- {d.name}: `{s['command']}`; {s['machine']}; wall time "
              f"{s['wall_seconds'] / 60:.1f} min ({s['seconds_per_epoch']:.1f} s per training "
              "epoch)" for d, s in runs.items()]
    lines += ["", "## Out-of-distribution check", "",
              f"Mean predictive entropy (nats; the maximum is log 10 = {math.log(10):.3f}) and "
              "mean top-class probability on uniform-noise images, against real test images. "
              "BBB: the average of the sampled networks.", "",
              "| Run | Entropy, noise | Top prob., noise | Entropy, test images |",
              "|---|---:|---:|---:|"]
    lines += [f"| {d.name} | {s['ood']['entropy_noise']:.3f} | {s['ood']['max_prob_noise']:.3f} "
              f"| {s['ood']['entropy_test']:.3f} |" for d, s in runs.items()]
    bbb = {d: s for d, s in runs.items() if "pruning" in s and not d.name.startswith("quick")}
    if bbb:
        # The best run of each prior (lowest final test error); the paper prunes its 2 x 1200
        # scale-mixture model.
        best: dict[str, Path] = {}
        for d, s in sorted(bbb.items(), key=lambda t: t[1]["final"]["test_error_mean"]):
            best.setdefault(kind(s), d)
        for dbest in best.values():
            lines += ["", f"## Table 2: pruning by signal-to-noise ratio ({dbest.name}, "
                      "last epoch)", "",
                      "| Proportion removed | # weights (ours) | Test error, mean net | "
                      "Sampled avg | Paper (2x1200): # weights | Paper test error |",
                      "|---:|---:|---:|---:|---:|---:|"]
            for r in bbb[dbest]["pruning"]:
                pw, pe = PAPER_TABLE2.get(r["removed_pct"] / 100, ("-", "-"))
                lines.append(f"| {r['removed_pct']:g}% | {int(r['weights_left']):,} | "
                             f"{r['test_error_mean']:.2f}% | {r['test_error_sampled']:.2f}% | "
                             f"{pw} | {pe}% |")
        dfig = min(best.values(), key=lambda d: bbb[d]["final"]["test_error_mean"])
        _plot_snr(dfig / "snr_hist.csv", root / "fig4_snr.png", dfig.name)
    if runs:
        fig, ax = plt.subplots(figsize=(6, 4))
        for d in runs:
            ep = read_csv(d / "epochs.csv")
            ax.plot([r["epoch"] for r in ep], [r["test_error"] for r in ep], label=d.name)
        ax.set(xlabel="epoch", ylabel="test error (%)", yscale="log",
               title="Test error against epoch (Figure 2)")
        _plain_log_ticks(ax)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(root / "fig2_test_error.png", dpi=100)
        plt.close(fig)
        _plot_weight_hists({d.name: d for d in runs if not d.name.startswith("quick")},
                           root / "fig3_weights.png")
    speed = root / "speed.json"
    if speed.exists():
        sp = json.loads(speed.read_text())
        lines += ["", "## Speed", "",
                  f"BBB {sp['seconds_per_epoch_bbb']:.2f} s/epoch, plain MLP "
                  f"{sp['seconds_per_epoch_mlp']:.2f} s/epoch: ratio "
                  f"**{sp['ratio_bbb_over_mlp']:.2f}** ({sp['architecture']}, "
                  f"{sp['rounds']} interleaved epochs each; `{sp['command']}`; {sp['machine']})."]
    lines += ["", "## Notes", "",
              "- Paper: Blundell et al. (2015), Table 1 (2 x 400: SGD 1.83, dropout 1.51, BBB "
              "Gaussian 1.82, BBB scale mixture 1.36) and Table 2 (pruning of the 2 x 1200 "
              "scale-mixture model: 1.24, 1.24, 1.24, 1.29, 1.39; the paper's own Table 1 gives "
              "1.32 for that model). Check these against the paper before quoting them.",
              "- Ours: one seed each, trained for far fewer epochs than the paper (which trained "
              "for hundreds), with Adam; 0.1 % is 10 of the 10,000 test images, and the "
              "error moves by about that much from epoch to epoch.",
              "- Figures: fig2_test_error.png (Figure 2), fig3_weights.png (Figure 3; BBB: one "
              "sample of the weights), fig4_snr.png (Figure 4, the SNR 10 log10(|mu|/sigma) in "
              "dB of the best BBB run)."]
    text = "\n".join(lines) + "\n"
    (root / "tables.md").write_text(text)
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
    except (ValueError, FileNotFoundError, checkpoint.CheckpointError) as e:
        # bad settings, missing or damaged data, a checkpoint that cannot be written
        print(f"bandits.mnist: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"bandits.mnist: {e}", file=sys.stderr)
        return 130


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
        return 0
    if cfg.report is not None:
        print(report(Path(cfg.report)))
        return 0
    if cfg.bench:
        bench(cfg, argv)
        return 0
    summary = run(cfg, argv, resume)
    print(json.dumps({k: summary[k] for k in ("label", "final", "ood", "wall_seconds")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
