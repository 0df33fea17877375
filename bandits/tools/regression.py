"""Toy 1-D regression with uncertainty bands: ``python -m bandits.regression``.

The usual first demonstration of Bayes by Backprop (Hernandez-Lobato and Adams 2015's
cubic): ``y = x^3 + e``, ``e ~ N(0, 3^2)``, 20 training points drawn uniformly from
``[-4, 4]``; held-out points inside that range and outside it (``4 < |x| <= 6``).
Models, each a 1 -> 50 -> 50 -> 1 ReLU network trained full-batch with Adam:

* ``mlp``: ordinary weights, squared error: a point prediction, no band;
* ``bbb``: Bayes by Backprop (Gaussian prior, the closed-form KL), Gaussian likelihood
  with the true noise (``fixed``) or a noise scale learned with the weights
  (``learned``: it starts at the true value and moves in the second half of the
  steps, once the mean has fitted; learned from the start, it grows until it explains
  every point and the weights fall back to the prior); predictions average weight
  samples;
* ``dropout``: MC dropout (Gal and Ghahramani 2016) with a learned noise scale;
  predictions average dropout masks.

The predictive distribution of a probabilistic model at ``x`` is the mixture of its
samples' Gaussians: mean ``m(x)``, variance = the spread of the sampled means
(epistemic) + the noise variance (aleatoric). Outputs in ``--out DIR`` (default
``runs/<timestamp>-regression``): ``regression.csv`` (per model: held-out RMSE and
log-likelihood, the share of held-out points inside the 95 % band, the predictive and
the epistemic standard deviation, each inside and outside the training range),
``regression.png``/``.pdf`` (data, truth, predictive mean and +-2 std band per model)
and ``config.json`` (settings, command, machine, wall time). The same seed gives the
same bytes.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from bandits.bayes import GaussianPrior, make_mlp
from bandits.core import kernels
from bandits.core.command import parsed, refused, writing
from bandits.core.command_line import build_parser, first_paragraph
from bandits.core.config import COUNT, OPEN, UsageError, setting
from bandits.core.files import machine, package_versions, save_figure, write_csv, write_json
from bandits.core.outputs import OutputDirError, output_dir
from bandits.core.processes import stop_on_ctrl_c
from bandits.core.style import DPI, styled

MODELS = ("mlp", "bbb-fixed", "bbb-learned", "dropout")
X_TRAIN, X_TEST = 4.0, 6.0  # training inputs in [-4, 4]; held-out ones in [-6, 6]


@dataclass
class Config:
    """Settings of the toy regression; each field is a CLI flag (``--kebab-case``)."""

    points: int = setting(20, "training points", range=COUNT)
    noise: float = setting(3.0, "standard deviation of the noise of y = x^3 + noise",
                           range=(OPEN(0), 1e4))
    hidden: int = setting(50, "units in each of the two hidden layers", range=(1, 10_000))
    steps: int = setting(2000, "full-batch Adam steps per model", range=COUNT)
    lr: float = setting(0.01, "Adam learning rate", range=(OPEN(0), 10.0))
    prior_sigma: float = setting(1.0, "BBB: Gaussian prior sigma", range=(1e-4, 1e4))
    init_sigma: float = setting(0.01, "BBB: initial posterior sigma", range=(1e-6, 10.0))
    dropout: float = setting(0.1, "MC dropout rate", range=(OPEN(0), OPEN(1)))
    samples: int = setting(100, "weight samples (or dropout masks) per prediction",
                           range=(1, 100_000))
    heldout: int = setting(500, "held-out points inside and again outside the training range",
                           range=COUNT)
    seed: int = setting(0, "seed of the data and of every model", range=(0, 2**31 - 1))
    out: Path | None = setting(None, "output directory (default: a new directory under "
                                     "runs/)", type=Path)
    overwrite: bool = setting(False, "allow writing into an existing non-empty directory")
    no_plot: bool = setting(False, "write the CSV and config.json only")
    exact: bool = setting(False, kernels.EXACT_HELP)


def truth(x: np.ndarray) -> np.ndarray:
    return x**3


def make_data(cfg: Config) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Training points and held-out points inside and outside the training range,
    all from one generator seeded with ``cfg.seed``."""
    rng = np.random.default_rng(cfg.seed)
    x = rng.uniform(-X_TRAIN, X_TRAIN, cfg.points)
    inside = rng.uniform(-X_TRAIN, X_TRAIN, cfg.heldout)
    outside = rng.uniform(X_TRAIN, X_TEST, cfg.heldout) * rng.choice([-1.0, 1.0], cfg.heldout)
    return {name: (v, truth(v) + cfg.noise * rng.standard_normal(v.shape))
            for name, v in (("train", x), ("inside", inside), ("outside", outside))}


class Scale:
    """Inputs and targets in units the networks train well in: ``x / 4``, ``y / s``
    with ``s`` the training targets' standard deviation."""

    def __init__(self, y_train: np.ndarray) -> None:
        self.y = float(np.std(y_train)) or 1.0

    def x(self, x: np.ndarray) -> Tensor:
        return torch.as_tensor(x / X_TRAIN, dtype=torch.float32).unsqueeze(-1)


def _gaussian_nll(pred: Tensor, y: Tensor, log_sigma: Tensor) -> Tensor:
    return (0.5 * ((y - pred) / log_sigma.exp()) ** 2 + log_sigma
            + 0.5 * math.log(2 * math.pi)).sum()


def fit(model_name: str, cfg: Config, x: Tensor, y: Tensor, noise: float
        ) -> tuple[nn.Module, Tensor | None]:
    """Train one model on ``(x, y)`` (scaled units); returns it and its log noise scale
    (``None`` for the MLP)."""
    torch.manual_seed(cfg.seed)
    hidden = [cfg.hidden, cfg.hidden]
    if model_name == "mlp":
        net = make_mlp(1, hidden, 1, bayesian=False)
    elif model_name == "dropout":
        net = make_mlp(1, hidden, 1, bayesian=False, dropout=cfg.dropout)
    else:
        net = make_mlp(1, hidden, 1, prior=GaussianPrior(cfg.prior_sigma),
                       init_sigma=cfg.init_sigma)
    log_sigma = torch.tensor(math.log(noise), requires_grad=model_name != "bbb-fixed")
    params = list(net.parameters()) + ([log_sigma] if log_sigma.requires_grad else [])
    opt = torch.optim.Adam(params, lr=cfg.lr, fused=True)  # its sqrt is correctly rounded
    net.train()
    for step in range(cfg.steps):
        opt.zero_grad()
        pred = net(x)
        if model_name == "mlp":
            loss = ((pred - y) ** 2).mean()
        elif model_name == "dropout":  # weight decay stands for the prior (Gal 2016)
            loss = _gaussian_nll(pred, y, log_sigma) / len(x)
        else:  # the ELBO: NLL + KL (one weight sample, every point in one batch)
            loss = (_gaussian_nll(pred, y, log_sigma) + net.complexity_cost("kl")) / len(x)
        loss.backward()
        if step < cfg.steps // 2 and log_sigma.grad is not None:
            log_sigma.grad = None  # a learned noise starts to move once the mean has fitted
        opt.step()
    return net, None if model_name == "mlp" else log_sigma.detach()


@torch.no_grad()
def predict(model_name: str, net: nn.Module, x: Tensor, samples: int
            ) -> tuple[Tensor, Tensor]:
    """The mean prediction and the spread of the sampled means (epistemic std), each
    ``(n,)``, in scaled units; the MLP's spread is zero."""
    if model_name == "mlp":
        net.eval()
        return net(x).squeeze(-1), torch.zeros(len(x))
    net.train()  # dropout masks on; Bayesian layers sample on every call
    draws = torch.stack([net(x).squeeze(-1) for _ in range(samples)])  # (S, n)
    return draws.mean(0), draws.std(0)


def score(mean: np.ndarray, epistemic: np.ndarray, noise: float | None, y: np.ndarray
          ) -> dict[str, float]:
    """Held-out RMSE; for a probabilistic model also the log-likelihood per point under
    the Gaussian of the predictive mean and variance, the share of points inside the
    95 % band (mean +- 1.96 std) and the mean predictive std."""
    out = {"rmse": float(np.sqrt(np.mean((mean - y) ** 2)))}
    if noise is None:
        return {**out, "log_likelihood": math.nan, "coverage_95": math.nan,
                "predictive_std": math.nan, "epistemic_std": math.nan}
    std = np.sqrt(epistemic**2 + noise**2)
    ll = -0.5 * ((y - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi)
    return {**out, "log_likelihood": float(ll.mean()),
            "coverage_95": float(np.mean(np.abs(y - mean) <= 1.96 * std)),
            "predictive_std": float(std.mean()), "epistemic_std": float(epistemic.mean())}


def run(cfg: Config) -> tuple[pd.DataFrame, dict]:
    """Fit every model and score it; returns the table and the curves to plot."""
    data = make_data(cfg)
    scale = Scale(data["train"][1])
    x = scale.x(data["train"][0])
    y = torch.as_tensor(data["train"][1] / scale.y, dtype=torch.float32).unsqueeze(-1)
    grid = np.linspace(-X_TEST, X_TEST, 241)
    rows, curves = [], {}
    for name in MODELS:
        net, log_sigma = fit(name, cfg, x, y, cfg.noise / scale.y)
        noise = None if log_sigma is None else float(log_sigma.exp()) * scale.y
        row: dict[str, Any] = {"model": name,
                               "learned_noise": noise if name != "bbb-fixed" else math.nan}
        for where in ("inside", "outside"):
            xs, ys = data[where]
            torch.manual_seed(cfg.seed + 1)
            m, e = predict(name, net, scale.x(xs), cfg.samples)
            s = score(m.numpy() * scale.y, e.numpy() * scale.y, noise, ys)
            row.update({f"{k}_{where}": v for k, v in s.items()})
        torch.manual_seed(cfg.seed + 1)
        m, e = predict(name, net, scale.x(grid), cfg.samples)
        mean, epistemic = m.numpy() * scale.y, e.numpy() * scale.y
        band = None if noise is None else 2 * np.sqrt(epistemic**2 + noise**2)
        curves[name] = (mean, band)
        row["std_ratio_outside_to_inside"] = (row["predictive_std_outside"]
                                              / row["predictive_std_inside"])
        rows.append(row)
    return pd.DataFrame(rows), {"grid": grid, "data": data, "models": curves}


LABELS = {"mlp": "MLP (point estimate)", "bbb-fixed": "BBB, noise fixed",
          "bbb-learned": "BBB, noise learned", "dropout": "MC dropout, noise learned"}


@styled
def plot(curves: dict, cfg: Config, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid, data = curves["grid"], curves["data"]
    fig, axes = plt.subplots(1, len(MODELS), figsize=(4 * len(MODELS), 3.6), sharey=True)
    for ax, name in zip(axes, MODELS):
        mean, band = curves["models"][name]
        ax.axvspan(-X_TEST, -X_TRAIN, color="0.93")
        ax.axvspan(X_TRAIN, X_TEST, color="0.93")
        if band is not None:
            ax.fill_between(grid, mean - band, mean + band, color="C0", alpha=0.25,
                            label="mean ±2 predictive std")
        ax.plot(grid, truth(grid), "k--", lw=1, label="truth x^3")
        ax.plot(grid, mean, "C0", lw=1.5, label="predictive mean")
        if band is None:
            ax.text(0.97, 0.03, "a point estimate: no band", transform=ax.transAxes,
                    ha="right", va="bottom", fontsize=7, color="0.4")
        ax.plot(*data["train"], "o", color="C3", ms=3.5, label="training data")
        ax.set_title(LABELS[name], fontsize=10)
        ax.set_xlabel("x")
        ax.set_ylim(-300, 300)
    axes[0].set_ylabel("y")
    banded = [ax for ax, name in zip(axes, MODELS) if curves["models"][name][1] is not None]
    (banded or list(axes))[0].legend(fontsize=7, loc="upper left")  # the band's name too
    fig.suptitle(f"y = x^3 + N(0, {cfg.noise:g}^2), {cfg.points} points in [-4, 4] "
                 "(grey: outside the training range); band: the predictive mean ±2 "
                 "predictive standard deviations", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    save_figure(fig, path.with_suffix(".pdf"))
    plt.close(fig)


def parser() -> argparse.ArgumentParser:
    return build_parser(Config, "python -m bandits.regression", first_paragraph(__doc__))


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.regression", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        cfg = parsed(Config, parser(), argv)
        try:
            cfg.exact = kernels.settle(cfg.exact)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if kernels.FLAG in argv:
            kernels.warn_other_torch("bandits.regression")  # not the shipped result's torch
        argv = kernels.recorded(argv, cfg.exact)
        out = output_dir(cfg.out, "regression", cfg.overwrite,
                         ("regression.csv", "regression.png", "regression.pdf", "config.json"),
                         kind="bandits.regression")
    except (UsageError, OutputDirError) as e:
        return refused("bandits.regression", e)
    with writing(out):
        start = time.perf_counter()
        torch.set_num_threads(1)  # these networks are tiny: one thread is fastest
        table, curves = run(cfg)
        write_csv(table, out / "regression.csv")
        if not cfg.no_plot:
            plot(curves, cfg, out / "regression.png")
        write_json({**dataclasses.asdict(cfg),
                    "command": "python -m bandits.regression " + shlex.join(argv),
                    "machine": machine(), "versions": package_versions(),
                    "wall_seconds": round(time.perf_counter() - start, 1)},
                   out / "config.json")
    cols = ["model", "rmse_inside", "log_likelihood_inside", "coverage_95_inside",
            "coverage_95_outside", "predictive_std_inside", "predictive_std_outside"]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"outputs in {out}")
    return 0

