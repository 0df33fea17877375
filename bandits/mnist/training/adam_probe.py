"""``python -m bandits.mnist adam-probe``: what Adam's per-weight step size does to each
prior's weights.

Adam divides each parameter's step by ``sqrt(v)``, the running root mean square of its
gradient (``v`` decays with ``beta2 = 0.999``, a memory of about 1,000 steps). The
complexity cost's gradient enters ``v`` like the data's, so a cost gradient much larger
than the data's shrinks the steps the data can take on that weight for the next
thousand steps: with the scale mixture's narrow component (curvature ``1 / sigma2^2 =
e^12`` for the paper's prior) that happens both when Blundell's KL weights put half of
the cost on one minibatch and, under uniform weights, when the Monte Carlo estimate of
the cost is noisy (the sampled weight ``w = mu + sigma eps`` moves the gradient
``w / sigma2^2`` by ``sigma eps / sigma2^2`` from draw to draw).

This trains every setting of the command (one model per setting, all in one batch, the
command's seed) and after each epoch records, per setting: validation error, training
NLL, the complexity cost, for a scale mixture the share of posterior means inside its
narrow component (where it holds more prior density than the wide one), and quantiles
over the posterior means of Adam's ``sqrt(v_hat)`` (bias-corrected) next to the data
term's own root-mean-square gradient over 8 fixed minibatches (its median over the
means). Writes ``adam_probe.csv``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import torch

from bandits.bayes import ScaleMixturePrior
from bandits.core import kernels
from bandits.core.files import machine, write_csv, write_json
from bandits.core.outputs import output_dir, release_dir
from bandits.mnist.data.splits import load_splits
from bandits.mnist.evaluation.model_files import command_line
from bandits.mnist.models.classifiers import BatchedClassifiers
from bandits.mnist.models.config import Config, expand, one, setting_name, varying
from bandits.mnist.models.priors import make_prior
from bandits.mnist.training.train import build_classifiers

QUANTILES = (0.1, 0.5, 0.9)
PROBE_BATCHES = 8  # minibatches over which the data term's gradient is measured


def narrow_radius(cfg: Config) -> float:
    """For a scale mixture, ``|w|`` below which its narrow component has the higher prior
    density (``nan`` for a Gaussian prior, or when the narrow one never does)."""
    if cfg.prior != "mixture":
        return math.nan
    prior = make_prior(cfg)
    assert isinstance(prior, ScaleMixturePrior)  # what a mixture setting makes
    (pw, sw), (pn, sn) = sorted([(prior.pi, prior.sigma1), (1 - prior.pi, prior.sigma2)],
                                key=lambda t: -t[1])
    e0 = math.log(pn / pw) + math.log(sw / sn)  # log density ratio at w = 0
    e1 = 0.5 * (1 / sn**2 - 1 / sw**2)
    return math.sqrt(e0 / e1) if e0 > 0 and e1 > 0 else math.nan


def data_gradient_scale(clf: BatchedClassifiers, x: torch.Tensor, y: torch.Tensor
                        ) -> torch.Tensor:
    """Per run, the median over the posterior means of the data term's root-mean-square
    gradient (the mean NLL of a minibatch) over the minibatches ``x (K, R, B, 784)``,
    ``y (K, R, B)``: what ``sqrt(v)`` would be if the data alone made the gradient. Nothing
    is changed (the optimiser's steps are skipped, the noise generators restored)."""
    states = [g.get_state() for g in clf.noise_gens]
    squares = torch.zeros_like(clf.net.mu)
    step = clf.optimizer.step

    def add_square() -> None:  # in place of the step: the data term's squared gradient
        grad = clf.net.mu.grad
        assert grad is not None  # the step follows a backward pass
        squares.add_(grad.square())

    clf.optimizer.step = add_square  # type: ignore[method-assign,assignment]
    try:
        for xb, yb in zip(x, y, strict=True):
            clf.step(xb, yb, torch.zeros(clf.runs, 1, device=clf.device))
    finally:
        clf.optimizer.step = step  # type: ignore[method-assign]
        for g, s in zip(clf.noise_gens, states, strict=True):
            g.set_state(s)
    return squares.div_(len(x)).sqrt_().median(dim=1).values


def adam_scales(clf: BatchedClassifiers) -> torch.Tensor:
    """Adam's bias-corrected ``sqrt(v_hat)`` of every posterior mean, ``(R, P)``."""
    state = clf.optimizer.state[clf.net.mu]
    beta2 = clf.optimizer.param_groups[0]["betas"][1]
    steps = float(state["step"])
    return (state["exp_avg_sq"] / (1 - beta2**steps)).sqrt()


def probe(cfg: Config, argv: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Train the command's settings for ``--epochs`` and record the table described in the
    module docstring; write it to ``--out`` (default: a new directory under ``runs/``)."""
    # an unwritable or occupied --out fails before the training
    out = output_dir(cfg.out, "mnist-adam-probe", cfg.overwrite,
                     ("adam_probe.csv", "adam_probe.json"))
    models = expand(dataclasses.replace(cfg, seeds=1))
    fields = varying(models)
    names = [setting_name(m, fields) if fields else "base" for m in models]
    splits = load_splits(cfg)
    clf = build_classifiers(cfg, models)
    assert isinstance(clf, BatchedClassifiers)  # the probe's settings: an MLP, no autograd
    train, val = splits["train"], splits["val"]
    radii = torch.tensor([narrow_radius(m) for m in models]).unsqueeze(1)
    picks = torch.randint(len(train.y), (PROBE_BATCHES, 1, cfg.batch_size),
                          generator=torch.Generator().manual_seed(cfg.seed))
    probe_idx = picks.expand(-1, clf.runs, -1).to(train.x.device)  # (K, R, B)
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        stats = clf.train_epoch(train.x, train.y, cfg.batch_size,
                                [one(m.kl_weighting) for m in models], desc=f"epoch {epoch}",
                                progress=cfg.progress,
                                kl_factor=[one(m.kl_factor) for m in models])
        errors = clf.errors(val.x, val.y)
        scales = adam_scales(clf).cpu()
        data = data_gradient_scale(clf, train.x[probe_idx], train.y[probe_idx]).cpu()
        mu = clf.params()["mu"].abs().cpu()
        inside = (mu < radii).float().mean(dim=1)
        q = torch.quantile(scales, torch.tensor(QUANTILES), dim=1)  # (3, R)
        for r, (m, name) in enumerate(zip(models, names, strict=True)):
            rows.append({
                "setting": name, "kl_weighting": m.kl_weighting, "complexity": cfg.complexity,
                "epoch": epoch, "val_error": round(errors[r].item(), 4),
                "nll": stats["nll"][r].item(), "cost": stats["kl"][r].item(),
                "share_in_narrow": inside[r].item() if m.prior == "mixture" else math.nan,
                **{f"adam_scale_q{int(100 * p)}": q[i, r].item()
                   for i, p in enumerate(QUANTILES)},
                "data_grad_rms": data[r].item(),
            })
            row = rows[-1]
            print(f"epoch {epoch:3d} {name:40s} val {row['val_error']:5.2f}%  cost "
                  f"{row['cost']:.3g}  narrow {row['share_in_narrow']:.2f}  sqrt(v) median "
                  f"{row['adam_scale_q50']:.2e} (q90 {row['adam_scale_q90']:.2e})  data "
                  f"{row['data_grad_rms']:.2e}", flush=True)
    write_csv(rows, out / "adam_probe.csv")
    write_json({"command": command_line(argv), "machine": machine(cfg.device),
                "kernels": kernels.record(),
                "wall_seconds": round(time.perf_counter() - start, 1)}, out / "adam_probe.json")
    release_dir(out)
    cfg.out = str(out)
    return rows
