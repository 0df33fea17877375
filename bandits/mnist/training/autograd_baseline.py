"""One model trained with autograd through :mod:`bandits.bayes`'s layers: the baseline
that ``python -m bandits.mnist bench`` times the batched trainer
(:class:`bandits.mnist.models.classifiers.BatchedClassifiers`) against. Training runs do not
use it."""

from __future__ import annotations

import math
import sys

import torch
import torch.nn.functional as F
from tqdm import tqdm

from bandits.bayes import MLP, kl_weights
from bandits.mnist.data.splits import Split
from bandits.mnist.evaluation.evaluate import is_bayesian
from bandits.mnist.models.config import Config, one


def train_epoch(model: MLP, opt: torch.optim.Optimizer, data: Split, cfg: Config,
                shuffle: torch.Generator, desc: str = "", max_batches: int = 0
                ) -> dict[str, float]:
    """One epoch of one model with autograd; returns the epoch means of loss, NLL, KL.

    One model through :mod:`bandits.bayes`'s layers, its gradients from autograd.
    Minimises ``(pi_i KL + sum NLL) / B`` per minibatch (see
    :mod:`bandits.mnist.training.train`).
    """
    model.train()
    n = len(data.y)
    perm = torch.randperm(n, generator=shuffle).to(data.x.device)
    n_batches = math.ceil(n / cfg.batch_size)
    bayes = is_bayesian(model)
    weights = kl_weights(n_batches, one(cfg.kl_weighting)) if bayes else None
    tot_nll = tot_kl = tot_loss = 0.0
    stop = n_batches if max_batches <= 0 else min(max_batches, n_batches)
    bar = tqdm(range(stop), desc=desc, disable=not cfg.progress, leave=False,
               mininterval=1.0, file=sys.stderr)
    for i in bar:
        idx = perm[i * cfg.batch_size:(i + 1) * cfg.batch_size]
        x, y = data.x[idx], data.y[idx]  # (B, 784), (B,)
        b = len(y)
        if bayes:
            nll_sum: torch.Tensor | float = 0.0
            kl_sum: torch.Tensor | float = 0.0
            for _ in range(cfg.samples):  # each forward call draws one network
                nll_sum = nll_sum + F.cross_entropy(model(x), y, reduction="sum")
                kl_sum = kl_sum + model.complexity_cost(cfg.complexity)
            assert isinstance(nll_sum, torch.Tensor) and isinstance(kl_sum, torch.Tensor)  # >= 1
            assert weights is not None  # a Bayesian model's
            nll, kl = nll_sum / cfg.samples, kl_sum / cfg.samples
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
