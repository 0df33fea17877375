"""Epsilon-greedy agents with an ordinary (point-estimate) reward network.

The same network shape, buffer and training schedule as the Bayes-by-Backprop
agent, trained on squared error. With probability ``epsilon`` the agent acts
uniformly at random, else greedily on its reward estimates. ``greedy``,
``eps1`` and ``eps5`` are epsilon = 0, 0.01, 0.05 (Blundell et al. 2015, Fig. 6).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from agents.neural import NeuralAgent
from bandits.bayes import MLP, make_mlp


class EpsilonGreedyAgent(NeuralAgent):
    """Acts greedily on a point-estimate network, at random with probability epsilon."""

    name = "eps-greedy"

    def build_model(self, in_features: int) -> MLP:
        if not 0.0 <= self.config.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {self.config.epsilon!r}")
        return make_mlp(in_features, self.config.hidden, 1, runs=self.runs, bayesian=False)

    @torch.no_grad()
    def act(self, contexts: np.ndarray) -> np.ndarray:
        scores = self.model(self.all_action_inputs(contexts)).squeeze(-1)  # (runs, n_actions)
        actions = scores.argmax(dim=1).cpu().numpy()
        explore = self.rng.random(self.runs) < self.config.epsilon
        random_actions = self.rng.integers(self.n_actions, size=self.runs)
        return np.where(explore, random_actions, actions)

    def loss(self, inputs: Tensor, rewards: Tensor, n_data: int) -> Tensor:
        pred = self.model(inputs).squeeze(-1)  # (runs, batch)
        return ((rewards - pred) ** 2).mean(dim=1).sum()
