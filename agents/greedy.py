"""Epsilon-greedy agents with an ordinary (point-estimate) reward network.

The same network shape, buffer and training schedule as the Bayes-by-Backprop
agent, trained on squared error. With probability ``epsilon`` the agent acts
uniformly at random, else greedily on its reward estimates. ``greedy``,
``eps1`` and ``eps5`` are epsilon = 0, 0.01, 0.05 (Blundell et al. 2015, Fig. 6).
They differ in nothing else; each is an agent of its own.
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
from bandits.core.config import setting


class EpsilonGreedyAgent(NeuralAgent):
    """Acts greedily on a point-estimate network, at random with probability epsilon."""

    name = "eps-greedy"
    config: Config

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # NeuralAgent's arguments
        super().__init__(*args, **kwargs)
        self._epsilon = torch.full((self.runs,), self.config.epsilon, device=self.device)

    def build_model(self, in_features: int) -> MLP:
        if not 0.0 <= self.config.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {self.config.epsilon!r}")
        return make_mlp(in_features, self.config.hidden, self.n_outputs, runs=self.runs,
                        bayesian=False)

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        scores = self.means(self.model(self.all_action_inputs(contexts)))  # (runs, n_actions)
        u = self.fill_random_(torch.empty(self.runs, 2, device=self.device), "uniform")
        explore = u[:, 0] < self._epsilon
        random_actions = (u[:, 1] * self.n_actions).to(torch.int64).clamp_(max=self.n_actions - 1)
        return torch.where(explore, random_actions, scores.argmax(dim=1))

    def predict_samples(self, contexts: Tensor, samples: int, generator: torch.Generator
                        ) -> Tensor:
        return self.point_predictions(contexts, samples)


@dataclass
class Settings:
    """Epsilon-greedy's own setting, which its name sets (``eps1``: 1 %), not a flag."""

    epsilon: float = setting(0.0, "the probability of a uniformly random action",
                             range=(0, 1), cli=False)


@dataclass
class Config(Settings, CommonSettings):
    """What an epsilon-greedy agent reads: the settings every network shares and its
    epsilon, and nothing else."""


SPECS = (
    AgentSpec("greedy", EpsilonGreedyAgent, "greedy", "#D55E00", {"epsilon": 0.0},
              settings=(Settings,), config=Config),
    AgentSpec("eps1", EpsilonGreedyAgent, "1% greedy", "#E69F00", {"epsilon": 0.01},
              linestyle="--", settings=(Settings,), config=Config),
    AgentSpec("eps5", EpsilonGreedyAgent, "5% greedy", "#009E73", {"epsilon": 0.05},
              linestyle=":", settings=(Settings,), config=Config),
)
