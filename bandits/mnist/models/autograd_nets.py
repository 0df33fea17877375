"""``R`` classifiers trained together by autograd: LeNet-5 (``--arch lenet5``), or the
MLP when its Bayesian layers draw noise per example (``--estimator lrt`` or ``flipout``).

:class:`AutogradNets` has the interface of
:class:`bandits.mnist.models.classifiers.BatchedClassifiers` (``train_epoch``, ``errors``,
``params``, ``to_mlp``, state), so the trainer, the checkpoints, the evaluation and
the report treat both alike. The network is :func:`bandits.bayes.make_lenet5` or
:func:`bandits.bayes.make_mlp` with the runs dimension: Bayes by Backprop (``bbb``) with
each run's prior and KL weighting and the layers' ``estimator`` (``reparam``, ``lrt`` or
``flipout``), or ordinary weights (``sgd``). The MLP starts from the weights
:class:`~bandits.mnist.models.classifiers.BatchedClassifiers` starts from, whose hand-written
backward pass covers one weight sample per minibatch (``reparam``) only.
The loss of run ``r`` on minibatch ``i`` is ``(pi_i KL_r + NLL_r) / B`` (eq. 8)
for Adam and ``pi_i KL_r + NLL_r`` for plain SGD, averaged over ``samples`` forward
passes; one optimiser step updates every run at once.

Run ``r``'s initial weights are those of ``torch.manual_seed`` of its seed's ``init``
stream (:func:`bandits.mnist.models.classifiers.seed_streams`) then a network of its own, its
minibatch order comes from its ``shuffle`` stream; the weight noise of all runs comes
from one generator of the first run's ``noise`` stream, so a run
trained beside others is a different (equally valid) draw from the run trained alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from bandits.bayes import MLP, make_lenet5, make_mlp
from bandits.mnist.models.classifiers import (
    CLASSES,
    IN_FEATURES,
    BatchedClassifiers,
    EpochTrainer,
    RunSpec,
    make_optimizer,
    seed_streams,
    seeded_generator,
)


class AutogradNets(EpochTrainer):
    """``R`` classifiers of one kind (``"bbb"`` or ``"sgd"``), trained together.

    Args:
        kind: ``"bbb"`` or ``"sgd"``.
        hidden: The MLP's hidden sizes (``784 -> hidden -> 10``), or ``None`` for LeNet-5.
        specs: One :class:`~bandits.mnist.models.classifiers.RunSpec` per run (BBB: its prior
            and KL weighting).
        init_sigma: BBB's initial posterior standard deviation.
        estimator: BBB's estimator (:data:`bandits.bayes.ESTIMATORS`).
        samples: Forward passes per step (their gradients are averaged).
        complexity: ``"mc"`` or ``"kl"`` (closed form: :func:`bandits.bayes.closed_form_cost`).
        lr: The learning rate.
        optimizer: ``"adam"`` or ``"sgd"`` (on the summed loss, see
            :class:`~bandits.mnist.models.classifiers.BatchedClassifiers`).
        device: Where the parameters and the data live.
    """

    def __init__(self, kind: str, specs: Sequence[RunSpec], *,
                 hidden: Sequence[int] | None = None, init_sigma: float = 0.0067,
                 estimator: str = "reparam", samples: int = 1, complexity: str = "mc",
                 lr: float = 1e-3, optimizer: str = "adam",
                 device: torch.device | str = "cpu") -> None:
        if kind not in ("bbb", "sgd"):
            raise ValueError(f"the autograd trainer trains 'bbb' or 'sgd', got {kind!r}")
        self.hidden = None if hidden is None else list(hidden)
        self.kind, self.specs, self.bayesian = kind, list(specs), kind == "bbb"
        self.runs, self.device = len(self.specs), torch.device(device)
        self.init_sigma, self.estimator = init_sigma, estimator
        self.samples = samples if self.bayesian else 1
        self.complexity = complexity
        streams = [seed_streams(s.seed) for s in self.specs]
        self.noise_gen = seeded_generator(streams[0]["noise"], self.device)
        self.shuffle_gens = [seeded_generator(st["shuffle"]) for st in streams]
        self.net = self._make(self.runs, self.specs[0], self.noise_gen).to(self.device)
        with torch.no_grad():
            for r, (spec, st) in enumerate(zip(self.specs, streams, strict=True)):
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(st["init"])
                    alone = self._make(None, spec)
                for mine, own in zip(self.net.parameters(), alone.parameters(), strict=True):
                    mine[r].copy_(own)
        self._priors = [s.prior for s in self.specs]
        self.sum_loss = optimizer == "sgd"  # SGD steps on the summed loss F_i
        self.optimizer = make_optimizer(optimizer, self.net.parameters(), lr)

    def _make(self, runs: int | None, spec: RunSpec,
              generator: torch.Generator | None = None) -> MLP:
        if self.hidden is not None:
            return make_mlp(IN_FEATURES, self.hidden, CLASSES, bayesian=self.bayesian,
                            runs=runs, prior=spec.prior, init_sigma=self.init_sigma,
                            estimator=self.estimator, generator=generator)
        return make_lenet5(bayesian=self.bayesian, runs=runs, prior=spec.prior,
                           init_sigma=self.init_sigma, estimator=self.estimator,
                           generator=generator)

    # -- state ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(),
                "generators": [self.noise_gen.get_state(),
                               [g.get_state() for g in self.shuffle_gens]]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        noise, shuffles = state["generators"]
        self.noise_gen.set_state(noise)
        for g, s in zip(self.shuffle_gens, shuffles, strict=True):
            g.set_state(s)

    def params(self) -> dict[str, Tensor]:
        """Every parameter by name, each with the runs as its first dimension."""
        return {k: v.detach() for k, v in self.net.named_parameters()}

    def to_mlp(self, r: int, params: dict[str, Tensor] | None = None,
               generator: torch.Generator | None = None) -> MLP:
        """Run ``r`` as one network (an :class:`bandits.bayes.MLP` or
        :class:`bandits.bayes.LeNet5`) without a runs dimension."""
        params = self.params() if params is None else params
        model = self._make(None, self.specs[r], generator).to(self.device)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(params[name][r])
        return model

    # -- training -------------------------------------------------------------------
    def _costs(self) -> Tensor:
        """The complexity cost per run ``(R,)``, each under its own prior: one evaluation
        per distinct prior, each run taking the one of its prior."""
        groups: dict[str, tuple] = {}
        for r, prior in enumerate(self._priors):
            groups.setdefault(repr(prior), (prior, []))[1].append(r)
        if len(groups) == 1:
            return self.net.complexity_cost(self.complexity)
        total = torch.zeros(self.runs, device=self.device)
        for prior, runs in groups.values():
            for layer in self.net.bayes_layers():
                layer.prior = prior
            mask = torch.zeros(self.runs, device=self.device)
            mask[runs] = 1.0
            total = total + mask * self.net.complexity_cost(self.complexity)
        return total

    def step(self, x: Tensor, y: Tensor, kl_weight: Tensor | None, want_kl: bool = False
             ) -> tuple[Tensor, Tensor | None]:
        """One optimiser step of every run on its minibatch ``x (R, B, 784)``, ``y (R, B)``;
        returns the summed NLL per run (averaged over the samples) and, with ``want_kl``,
        the complexity cost per run."""
        b = y.shape[1]
        self.net.set_mode("sample")
        self.optimizer.zero_grad(set_to_none=True)
        nll = torch.zeros(self.runs, device=self.device)
        kl = torch.zeros(self.runs, device=self.device) if want_kl else None
        for _ in range(self.samples):
            logits = self.net(x)  # (R, B, 10)
            loss = F.cross_entropy(logits.reshape(-1, 10), y.reshape(-1),
                                   reduction="none").reshape(self.runs, b).sum(1)
            nll += loss.detach() / self.samples
            if self.bayesian:
                cost = self._costs()
                assert kl_weight is not None  # a Bayesian net is given its KL weights
                loss = loss + kl_weight[:, 0] * cost
                if want_kl:
                    assert kl is not None
                    kl += cost.detach() / self.samples
            div = self.samples if self.sum_loss else b * self.samples
            (loss.sum() / div).backward()
        self.optimizer.step()
        return nll, kl

    # -- evaluation -----------------------------------------------------------------
    @torch.no_grad()
    def errors(self, x: Tensor, y: Tensor, params: dict[str, Tensor] | None = None,
               chunk: int = 2000) -> Tensor:
        """Test error (%) per run ``(R,)`` of the posterior-mean (or point) networks."""
        net = self.net
        if params is not None:
            net = self._make(self.runs, self.specs[0]).to(self.device)
            for name, p in net.named_parameters():
                p.copy_(params[name])
        wrong = torch.zeros(self.runs, device=self.device)
        with net.sampling("mean"):
            for xc, yc in zip(x.split(chunk), y.split(chunk), strict=True):
                wrong += (net(xc).argmax(-1) != yc).sum(dim=1)
        return (100.0 * wrong / len(y)).cpu()


Trainer = BatchedClassifiers | AutogradNets
"""Either batched trainer (what :func:`bandits.mnist.training.train.build_classifiers` makes)."""
