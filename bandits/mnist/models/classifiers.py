"""``R`` MNIST classifiers trained at once through the runs dimension.

Every run is a whole model of its own: its own seed (initial weights, weight noise,
minibatch order, dropout masks) and, for Bayes by Backprop, its own prior and its own
KL weighting across the minibatches. They share the architecture, the learning rate and
its schedule, and one loop over the minibatches: each step gathers every run's minibatch
from the data held on the device (``(R, B, 784)``), draws every run's weights, and does
one batched forward and backward pass and one optimiser step for all of them. Runs do not
interact (each run's loss has only its own parameters; Adam and SGD are elementwise), so run
``r`` of a batch trains exactly as it would alone, up to the rounding of batched kernels.

The training step has no autograd and no host synchronisation: the network's backward
pass is written by hand (:meth:`bandits.bayes.flat.FlatMLP.backward`), the per-weight work of
BBB (sampling, softplus, the complexity cost's gradient) is a few whole-tensor passes
over the flat ``(R, P)`` parameters (:func:`bandits.bayes.cost.posterior_grads`), Adam is
torch's fused one, and the epoch's statistics stay on the device until the epoch ends.

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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm import tqdm

from bandits.bayes import (
    MLP,
    FlatMLP,
    Prior,
    closed_form_cost,
    closed_form_cost_grads,
    kl_weights,
    log_p_minus_log_q,
    make_mlp,
    mu_rho_grads,
    posterior_grads,
    sample_weights,
)

MODEL_KINDS = ("bbb", "sgd", "dropout")
IN_FEATURES, CLASSES = 784, 10  # pixels of an MNIST image, digits


def n_parameters(hidden: Sequence[int]) -> int:
    """Weights and biases of one network ``784 -> hidden -> 10``."""
    sizes = [IN_FEATURES, *hidden, CLASSES]
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))


@dataclass(frozen=True)
class RunSpec:
    """What one run of a batch has of its own."""

    seed: int
    prior: Prior | None = None  # BBB only
    kl_weighting: str = "uniform"  # BBB only: see bandits.bayes.kl_weights


# The random streams of one model, each seeded from its own child of
# numpy.random.SeedSequence(seed): neighbouring seeds share no stream.
STREAMS = ("init", "noise", "shuffle", "dropout", "evaluation", "ood")


def seed_streams(seed: int) -> dict[str, int]:
    """The seed of each of a model's random streams (:data:`STREAMS`), all derived from
    one ``numpy.random.SeedSequence(seed)`` by ``spawn``."""
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: int(c.generate_state(1, np.uint64)[0])
            for name, c in zip(STREAMS, children, strict=True)}


def seeded_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A torch generator on ``device`` seeded with ``seed``."""
    return torch.Generator(device=device).manual_seed(seed)


OPTIMIZERS = ("adam", "sgd")


def make_optimizer(name: str, params: Any, lr: float, fused: bool = False
                   ) -> torch.optim.Optimizer:
    """Adam, or plain minibatch gradient descent (``"sgd"``: no momentum, no decay)."""
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, fused=fused or None)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


class EpochTrainer:
    """The epoch loop shared by the batched trainers: each run draws its own order of
    the images (``shuffle_gens``), and every minibatch goes to the trainer's ``step``
    with each run's KL weight ``pi_i``."""

    runs: int
    device: torch.device
    bayesian: bool
    shuffle_gens: list[torch.Generator]

    def step(self, x: Tensor, y: Tensor, kl_weight: Tensor | None, want_kl: bool = False
             ) -> tuple[Tensor, Tensor | None]:
        raise NotImplementedError

    def train_epoch(self, x: Tensor, y: Tensor, batch_size: int, kl_schemes: Sequence[str],
                    kl_every: int = 10, desc: str = "", progress: bool = False,
                    max_batches: int = 0, kl_factor: float | Sequence[float] = 1.0
                    ) -> dict[str, Tensor]:
        """One epoch of every run over the training images ``x (n, 784)``, ``y (n,)``.

        Each run draws its own order of the images. ``kl_schemes[r]`` is run ``r``'s KL
        weighting, its weights multiplied by ``kl_factor`` (1: the ELBO; one number for
        every run, or one per run); the complexity
        cost is recorded every ``kl_every`` minibatches (its value is not needed to train).
        ``max_batches`` > 0 stops early (benchmarks). Returns per-run ``(R,)`` CPU
        tensors: ``nll`` (mean per image), ``kl`` (mean over the recorded minibatches) and
        ``train_loss`` (``nll + kl / n``, the negative ELBO per image).
        """
        n = len(y)
        n_batches = math.ceil(n / batch_size)
        perms = torch.stack([torch.randperm(n, generator=g) for g in self.shuffle_gens])
        perms = perms.to(self.device)  # (R, n): one host-to-device copy per epoch
        weights = None
        if self.bayesian:
            factors = torch.as_tensor(kl_factor, dtype=x.dtype, device=self.device)
            if len(kl_schemes) != self.runs or factors.numel() != self.runs and factors.dim():
                raise ValueError(f"train_epoch: {self.runs} runs need as many KL schemes and "
                                 f"factors, got {len(kl_schemes)} and {factors.numel()}")
            factors = factors.reshape(-1, 1)  # (1, 1): every run, or (R, 1): one per run
            weights = torch.tensor([kl_weights(n_batches, s) for s in kl_schemes],
                                   dtype=x.dtype, device=self.device).mul_(factors)  # (R, M)
        tot_nll = torch.zeros(self.runs, device=self.device)
        tot_kl = torch.zeros(self.runs, device=self.device)
        n_kl, seen = 0, 0
        stop = n_batches if max_batches <= 0 else min(n_batches, max_batches)
        for i in tqdm(range(stop), desc=desc, disable=not progress, leave=False,
                      mininterval=1.0):
            idx = perms[:, i * batch_size:(i + 1) * batch_size]  # (R, B)
            want_kl = self.bayesian and i % kl_every == 0
            kl_w = None if weights is None else weights[:, i:i + 1]
            nll, kl = self.step(x[idx], y[idx], kl_w, want_kl)
            tot_nll += nll
            seen += idx.shape[1]
            if kl is not None:
                tot_kl += kl
                n_kl += 1
        nll = (tot_nll / seen).cpu()
        kl = (tot_kl / max(n_kl, 1)).cpu()
        return {"nll": nll, "kl": kl, "train_loss": nll + kl / n}


class BatchedClassifiers(EpochTrainer):
    """``R`` classifiers ``784 -> hidden -> 10`` (ReLU) of one kind, trained together.

    Args:
        kind: ``"bbb"`` (Bayes by Backprop), ``"sgd"`` (a plain MLP) or ``"dropout"``.
        hidden: The hidden layers' sizes.
        specs: One :class:`RunSpec` per run.
        init_sigma: BBB's initial posterior standard deviation.
        dropout: The dropout probability (``"dropout"`` only).
        samples: BBB weight samples per training step (their gradients are averaged).
        complexity: ``"mc"`` (the paper's Monte Carlo estimate) or ``"kl"`` (the closed
            form, :func:`bandits.bayes.closed_form_cost`: the KL for a Gaussian prior, the
            KL of the hierarchical form for a scale mixture).
        lr: The learning rate (shared by the runs).
        optimizer: ``"adam"`` steps on each run's loss per image, ``F_i / B``; ``"sgd"``
            (plain gradient descent, the paper's) on the minibatch's summed loss ``F_i``
            (eq. 8), so ``lr`` has the paper's meaning.
        device: Where the parameters and the data live.
        compile: Fuse the per-weight work of BBB (sampling, softplus, the complexity cost's
            gradient) with ``torch.compile`` into a few kernels (compiled on first use).

    Run ``r``'s randomness comes from its seed ``s`` alone, one stream per use
    (:func:`seed_streams`): the initial weights are those of
    ``torch.manual_seed(streams["init"])`` then :func:`bandits.bayes.make_mlp`; the
    weight noise, the minibatch order and the dropout masks each have a generator of
    their own stream.
    """

    def __init__(self, kind: str, hidden: Sequence[int], specs: Sequence[RunSpec], *,
                 init_sigma: float = 0.0067, dropout: float = 0.5, samples: int = 1,
                 complexity: str = "mc", lr: float = 1e-3, optimizer: str = "adam",
                 device: torch.device | str = "cpu", compile: bool = False) -> None:
        if kind not in MODEL_KINDS:
            raise ValueError(f"kind must be one of {MODEL_KINDS}, got {kind!r}")
        if not specs:
            raise ValueError("BatchedClassifiers needs at least one run")
        if complexity not in ("mc", "kl"):
            raise ValueError(f"complexity must be 'mc' or 'kl', got {complexity!r}")
        self.kind, self.hidden, self.specs = kind, list(hidden), list(specs)
        self.bayesian = kind == "bbb"
        self.init_sigma, self.dropout = init_sigma, dropout
        self.samples = samples if self.bayesian else 1
        self.complexity, self.device = complexity, torch.device(device)
        models = []
        streams = [seed_streams(s.seed) for s in self.specs]
        for spec, st in zip(self.specs, streams, strict=True):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(st["init"])
                models.append(self._make_mlp(spec, runs=1, dropout=0.0))  # masks: step()
        self.net = FlatMLP(models).to(self.device)
        self.runs = self.net.runs
        self.noise_gens = [seeded_generator(st["noise"], self.device) for st in streams]
        self.shuffle_gens = [seeded_generator(st["shuffle"]) for st in streams]
        self.dropout_gens = [seeded_generator(st["dropout"], self.device) for st in streams]
        # Adam's step does not depend on the loss's scale; SGD's does: it steps on F_i
        self.sum_loss = optimizer == "sgd"
        self.optimizer = make_optimizer(optimizer, self.net.parameters(), lr, fused=True)
        self._eps = torch.empty_like(self.net.mu) if self.bayesian else None
        self._sample, self._grads = sample_weights, posterior_grads
        if compile:
            self._sample = torch.compile(sample_weights, dynamic=False, fullgraph=True)
            self._grads = torch.compile(posterior_grads, dynamic=False, fullgraph=True)

    def _make_mlp(self, spec: RunSpec, runs: int | None, dropout: float | None = None) -> MLP:
        if self.bayesian:
            return make_mlp(IN_FEATURES, self.hidden, CLASSES, runs=runs, prior=spec.prior,
                            init_sigma=self.init_sigma)
        if dropout is None:
            dropout = self.dropout if self.kind == "dropout" else 0.0
        return make_mlp(IN_FEATURES, self.hidden, CLASSES, runs=runs, bayesian=False,
                        dropout=dropout)

    # -- state ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        gens = [[g.get_state() for g in gs]
                for gs in (self.noise_gens, self.shuffle_gens, self.dropout_gens)]
        return {"net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(),
                "generators": gens}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        for gs, states in zip((self.noise_gens, self.shuffle_gens, self.dropout_gens),
                              state["generators"], strict=True):
            for g, s in zip(gs, states, strict=True):
                g.set_state(s)

    def params(self) -> dict[str, Tensor]:
        """The flat parameters, ``{"mu": (R, P)}`` and for BBB ``"rho"``."""
        out = {"mu": self.net.mu.detach()}
        if self.bayesian:
            assert self.net.rho is not None  # a Bayesian network's
            out["rho"] = self.net.rho.detach()
        return out

    def to_mlp(self, r: int, params: dict[str, Tensor] | None = None,
               generator: torch.Generator | None = None) -> MLP:
        """Run ``r`` as an ordinary :class:`bandits.bayes.MLP` without a runs dimension
        (for evaluation, pruning, saving), from ``params`` (default: the current ones)."""
        params = self.params() if params is None else params
        mlp = self._make_mlp(self.specs[r], runs=None).to(self.device)
        names = ("weight_mu", "bias_mu") if self.bayesian else ("weight", "bias")
        with torch.no_grad():
            for key, (wname, bname) in (("mu", names), ("rho", ("weight_rho", "bias_rho"))):
                if key not in params:
                    continue
                for layer, (w, b) in zip(mlp.layers, self.net.split(params[key][r:r + 1]),
                                         strict=True):
                    getattr(layer, wname).copy_(w[0])
                    getattr(layer, bname).copy_(b[0])
        if self.bayesian:
            for layer in mlp.bayes_layers():
                layer.generator = generator
        return mlp

    # -- training -------------------------------------------------------------------
    def _fill_normal(self) -> Tensor:
        assert self._eps is not None  # a Bayesian trainer's noise
        for row, g in zip(self._eps, self.noise_gens, strict=True):
            row.normal_(generator=g)
        return self._eps

    def _dropout_masks(self, batch: int) -> list[Tensor] | None:
        if self.kind != "dropout" or self.dropout == 0.0:
            return None
        keep = 1.0 - self.dropout
        masks = []
        for h in self.hidden:
            m = torch.empty(self.runs, batch, h, device=self.device)
            for row, g in zip(m, self.dropout_gens, strict=True):
                row.bernoulli_(keep, generator=g)
            masks.append(m.mul_(1.0 / keep))
        return masks

    @torch.no_grad()
    def step(self, x: Tensor, y: Tensor, kl_weight: Tensor | None, want_kl: bool = False
             ) -> tuple[Tensor, Tensor | None]:
        """One optimiser step of every run on its minibatch ``x (R, B, 784)``, ``y (R, B)``.

        ``kl_weight (R, 1)`` is each run's ``pi_i`` (BBB). Returns the summed NLL per run
        ``(R,)`` (averaged over the weight samples) and, with ``want_kl``, the complexity
        cost per run at the last weight sample (device tensors; nothing is read back).
        """
        net, batch = self.net, y.shape[1]
        onehot = F.one_hot(y, CLASSES).to(x.dtype)  # (R, B, 10)
        nll = torch.zeros(self.runs, device=x.device)
        div = self.samples if self.sum_loss else batch * self.samples
        grads: list[Tensor] | None = None
        kl = None
        for _ in range(self.samples):
            if self.bayesian:
                assert net.rho is not None  # a Bayesian network's
                eps = self._fill_normal()
                sigma, w = self._sample(net.mu, net.rho, eps)
            else:
                w = net.mu
            inputs: list[Tensor] = []
            masks = self._dropout_masks(batch)
            logits = net.apply_layers(x, net.split(w), inputs, masks)  # (R, B, 10)
            logp = torch.log_softmax(logits, dim=-1)
            nll.sub_((logp * onehot).sum(dim=(1, 2)))
            # d/dlogits of sum_b -log p(y_b) / (B K): (softmax - onehot) / (B K)
            # (without B for SGD, which steps on the summed loss)
            d_out = logp.exp_().sub_(onehot).div_(div)
            g_w = net.backward(inputs, w, d_out, torch.empty_like(w), masks)
            if self.bayesian:
                assert kl_weight is not None  # given for a Bayesian step
                scale = kl_weight / div
                g = self._posterior_grads(g_w, w, sigma, eps, scale)
                if want_kl:
                    kl = self.complexity_cost(w, sigma, eps)
            else:
                g = [g_w]
            grads = g if grads is None else [a.add_(b) for a, b in zip(grads, g, strict=True)]
        assert grads is not None  # samples >= 1
        for p, grad in zip(self.net.parameters(), grads, strict=True):
            p.grad = grad
        self.optimizer.step()
        return nll.div_(self.samples), kl

    def _posterior_grads(self, g_w: Tensor, w: Tensor, sigma: Tensor, eps: Tensor,
                         scale: Tensor) -> list[Tensor]:
        net = self.net
        assert net.rho is not None  # a Bayesian network's
        if self.complexity == "mc":
            return list(self._grads(g_w, w, sigma, eps, net.rho, scale, net.prior_consts))
        g_mu, g_sigma = closed_form_cost_grads(net.mu, sigma, net.prior_consts, scale)
        return list(mu_rho_grads(g_mu, g_sigma, net.rho, g_w, eps))

    def complexity_cost(self, w: Tensor, sigma: Tensor, eps: Tensor) -> Tensor:
        """The complexity cost per run ``(R,)``: MC ``log q(w) - log p(w)`` at ``w``, or the
        closed form (:func:`bandits.bayes.closed_form_cost`)."""
        consts = self.net.prior_consts
        if self.complexity == "kl":
            return closed_form_cost(self.net.mu, sigma, consts).sum(dim=1)
        log_ratio, _ = log_p_minus_log_q(w, sigma, eps, consts)
        return log_ratio.sum(dim=1).neg_()

    # -- evaluation -----------------------------------------------------------------
    @torch.no_grad()
    def errors(self, x: Tensor, y: Tensor, params: dict[str, Tensor] | None = None,
               chunk: int = 2000) -> Tensor:
        """Test error (%) per run ``(R,)`` of the posterior-mean (or point) networks."""
        mu = (self.params() if params is None else params)["mu"]
        layers = self.net.split(mu)
        wrong = torch.zeros(self.runs, device=self.device)
        for xc, yc in zip(x.split(chunk), y.split(chunk), strict=True):
            logits = self.net.apply_layers(xc.expand(self.runs, *xc.shape), layers)
            wrong += (logits.argmax(-1) != yc).sum(dim=1)
        return (100.0 * wrong / len(y)).cpu()
