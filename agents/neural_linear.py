"""NeuralLinear (Riquelme et al. 2018, section 3): exact Bayesian linear regression on the
last hidden layer of a point-estimate network.

The network is the greedy agent's (same shape, loss and training step). Its last hidden
layer, with an intercept, is the feature vector ``phi(context, action)``; for each action
the reward is regressed on it with the normal-inverse-gamma posterior of
:mod:`agents.linear`, and the agent acts by Thompson sampling from those posteriors.
New interactions enter the posterior at once with the current features; every
``refresh_every`` training steps the posterior is refitted from the whole buffer with
the network's new features.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from agents.base import AgentSpec
from agents.greedy import Config as GreedyConfig
from agents.greedy import EpsilonGreedyAgent
from agents.greedy import Settings as GreedySettings
from agents.linear import BayesLinearRegression, PosteriorSettings, thompson_draw
from bandits.core.buffer import ReplayBuffer
from bandits.core.config import COUNT, setting


class NeuralLinearAgent(EpsilonGreedyAgent):
    """Thompson sampling from a linear posterior on learnt features."""

    name = "neurallinear"
    config: Config

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # NeuralAgent's arguments
        super().__init__(*args, **kwargs)
        c = self.config
        if c.refresh_every < 1:
            raise ValueError(f"refresh_every must be >= 1, got {c.refresh_every!r}")
        self.posterior = BayesLinearRegression(self.runs, self.n_actions, c.hidden[-1] + 1,
                                               c.lin_a0, c.lin_b0, c.lin_lambda, self.device)
        self._seen = 0
        self._trained = 0  # training steps since the last refit

    @torch.no_grad()
    def features(self, x: Tensor) -> Tensor:
        """``phi``: the last hidden layer of network inputs ``x (runs, n, in)``, with an
        intercept -> ``(runs, n, hidden + 1)``."""
        m = self.model
        h = m.apply_layers(x, m.split(m.mu)[:-1])  # stops before the output layer
        h = torch.relu(h)
        return torch.cat([h, torch.ones_like(h[..., :1])], dim=-1)

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        beta = thompson_draw(self, self.posterior)  # (runs, actions, dim)
        phi = self.features(self.all_action_inputs(contexts))  # (runs, actions, dim)
        return (beta * phi.to(beta.dtype)).sum(-1).argmax(dim=1)

    @torch.no_grad()
    def update(self, buffer: ReplayBuffer, updates: int = 1) -> Tensor | None:
        for pos in buffer.positions_since(self._seen, self.name):  # current features
            contexts, a, rewards = buffer.slot(pos)
            x = self.inputs(contexts, a).unsqueeze(1)  # (runs, 1, in)
            self.posterior.add(self.features(x)[:, 0], a, rewards)
        self._seen = buffer.added
        loss = super().update(buffer, updates)
        self._trained += 1
        if self._trained >= self.config.refresh_every:  # refit with the new features
            n = len(buffer)
            batch = buffer.gather(torch.arange(n, device=self.device).expand(self.runs, n))
            phi = self.features(self.inputs(batch.contexts, batch.actions))
            self.posterior.refit(phi, batch.actions, batch.rewards)
            self._trained = 0
        return loss

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "posterior": self.posterior.state_dict(),
                "seen": self._seen, "trained": self._trained}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.posterior.load_state_dict(state["posterior"])
        self._seen, self._trained = int(state["seen"]), int(state["trained"])


@dataclass
class Settings:
    """NeuralLinear's own setting (its posterior's prior: :class:`PosteriorSettings`)."""

    refresh_every: int = setting(50, "neurallinear: training steps between "
                                 "refits of its posterior to new features", range=COUNT)


@dataclass
class Config(Settings, PosteriorSettings, GreedyConfig):
    """What NeuralLinear reads: the settings every network shares, greedy's epsilon
    (its network is greedy's), its posterior's prior and its own, and nothing else."""


SPECS = (AgentSpec("neurallinear", NeuralLinearAgent, "NeuralLinear", "#332288", linestyle="-.",
                   settings=(GreedySettings, PosteriorSettings, Settings),
                   config=Config),)
