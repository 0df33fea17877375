"""Bootstrapped neural networks (Osband et al. 2016; Riquelme et al. 2018).

Each run holds ``heads`` networks (the greedy agent's shape), each trained on its own
bootstrap resample of the buffer: every interaction gets an independent ``Poisson(1)``
weight per network when it arrives, and a network's squared error weighs each item by
its weight (the online bootstrap). To act the agent draws one network per run
uniformly and plays greedily on it: Thompson sampling over the bootstrap ensemble.

The ``runs x heads`` networks are one population of the flat network (row
``run * heads + head``), trained by the same fused step as every neural agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from agents.base import AgentSpec, CommonSettings
from agents.neural import NeuralAgent
from bandits.bayes import MLP, make_mlp
from bandits.core.buffer import ReplayBuffer
from bandits.core.config import setting


class BootstrapAgent(NeuralAgent):
    """Thompson sampling over an online-bootstrap ensemble of reward networks."""

    name = "bootstrap"
    config: Config

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # NeuralAgent's arguments
        super().__init__(*args, **kwargs)
        k = self.config.heads
        self._u = torch.empty(self.runs, k * self.config.batch_size, device=self.device)
        self.weights: Tensor | None = None  # (runs, heads, capacity): bootstrap weights
        self._seen = 0

    def build_model(self, in_features: int) -> MLP:
        if self.config.heads < 1:
            raise ValueError(f"heads must be >= 1, got {self.config.heads!r}")
        return make_mlp(in_features, self.config.hidden, self.n_outputs,
                        runs=self.runs * self.config.heads, bayesian=False)

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        k = self.config.heads
        x = self.all_action_inputs(contexts)  # (runs, n_actions, in)
        x = x.repeat_interleave(k, dim=0)  # (runs * heads, n_actions, in)
        scores = self.means(self.model(x)).view(self.runs, k, self.n_actions)
        u = self.fill_random_(torch.empty(self.runs, device=self.device), "uniform")
        head = (u * k).to(torch.int64).clamp_(max=k - 1)  # one network per run
        return scores[torch.arange(self.runs, device=self.device), head].argmax(dim=1)

    @torch.no_grad()
    def _add_weights(self, buffer: ReplayBuffer) -> None:
        if self.weights is None:
            self.weights = torch.zeros(self.runs, self.config.heads, buffer.capacity,
                                       device=self.device)
        ones = torch.ones(self.runs, self.config.heads, device=self.device)
        for pos in buffer.positions_since(self._seen, self.name):
            self.weights[:, :, pos] = torch.poisson(ones, generator=self.generator)
        self._seen = buffer.added

    def update(self, buffer: ReplayBuffer, updates: int = 1) -> Tensor | None:
        self._add_weights(buffer)  # eagerly, before the (possibly captured) training step
        return super().update(buffer, updates)

    def minibatch_gradients(self, buffer: ReplayBuffer, want_loss: bool
                            ) -> tuple[list[Tensor], Tensor | None]:
        k, b = self.config.heads, self.config.batch_size
        idx = buffer.indices(self.fill_random_(self._u, "uniform"))  # (runs, heads * batch)
        batch = buffer.gather(idx)
        x = self.inputs(batch.contexts, batch.actions).view(self.runs * k, b, -1)
        # network k of a run trains on the k-th block of b items, weighted by its own weights
        assert self.weights is not None  # update() draws them before any minibatch
        w = self.weights.gather(2, idx.view(self.runs, k, b)).view(self.runs * k, b)
        grads, loss = self.squared_error_gradients(x, batch.rewards.view(self.runs * k, b),
                                                   want_loss, weights=w)
        return grads, None if loss is None else loss.view(self.runs, k).mean(dim=1)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "weights": self.weights, "seen": self._seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.weights = None if state["weights"] is None else state["weights"].to(self.device)
        self._seen = int(state["seen"])


@dataclass
class Settings:
    """The bootstrapped ensemble's own setting."""

    heads: int = setting(
        5, "bootstrap: networks per run, each on its own online "
        "bootstrap (Poisson(1) weights) of the buffer", range=(1, 10_000))


def refuse_whole_buffer_fits(config, context_dim: int, n_actions: int) -> str | None:
    """Each head trains on its own bootstrap of minibatches: one line, or None."""
    if config.fit != "steps":
        return (f"--fit {config.fit} trains on the whole buffer; the bootstrap's heads each "
                "train on their own weighted minibatches: leave --fit at steps")
    return None


@dataclass
class Config(Settings, CommonSettings):
    """What the bootstrap reads: the settings every network shares and its own, and nothing else."""


SPECS = (AgentSpec("bootstrap", BootstrapAgent, "Bootstrapped NN", "#999933", cost=5.0,
                   linestyle=":", networks=lambda config: config.heads, settings=(Settings,),
                   config=Config,
                   check=refuse_whole_buffer_fits),)
