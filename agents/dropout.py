"""Dropout Thompson sampling (Gal and Ghahramani 2016; Riquelme et al. 2018).

The greedy agent's network trained with dropout on its hidden layers; dropout is read
as an approximate posterior, so to act the agent draws one dropout mask per run (one
network from the approximate posterior), scores every action with it and takes the
argmax, as BBB does with one weight sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from agents.base import AgentSpec, CommonSettings
from agents.neural import NeuralAgent
from bandits.bayes import MLP, make_mlp
from bandits.core.config import OPEN, setting


class DropoutAgent(NeuralAgent):
    """Thompson sampling with MC dropout on a point-estimate reward network."""

    name = "dropout"
    config: Config

    def build_model(self, in_features: int) -> MLP:
        if not 0.0 < self.config.dropout < 1.0:
            raise ValueError(f"dropout must be in (0, 1), got {self.config.dropout!r}")
        return make_mlp(in_features, self.config.hidden, self.n_outputs, runs=self.runs,
                        bayesian=False)

    def masks(self, rows: int) -> list[Tensor]:
        """Dropout masks ``(runs, rows, hidden)`` for every hidden layer: 0 with probability
        p, else 1 / (1 - p)."""
        p = self.config.dropout
        out = []
        for h in self.config.hidden:
            u = self.fill_random_(torch.empty(self.runs, rows, h, device=self.device), "uniform")
            out.append((u >= p).to(u.dtype).div_(1.0 - p))
        return out

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        x = self.all_action_inputs(contexts)  # (runs, n_actions, in)
        m = self.model
        # one mask per run, shared by every action: one sampled network
        scores = m.apply_layers(x, m.split(m.mu), masks=self.masks(1))
        return self.means(scores).argmax(dim=1)

    def gradients(self, x: Tensor, rewards: Tensor, n_data: Tensor, want_loss: bool
                  ) -> tuple[list[Tensor], Tensor | None]:
        # a mask per example, as in ordinary dropout training
        return self.squared_error_gradients(x, rewards, want_loss, masks=self.masks(x.shape[1]))


@dataclass
class Settings:
    """MC dropout's own setting."""

    dropout: float = setting(
        0.2, "dropout: the dropout rate of the hidden layers "
        "(training, and the one mask drawn to act)", range=(OPEN(0), OPEN(1)))


@dataclass
class Config(Settings, CommonSettings):
    """What the dropout agent reads: the settings every network shares and its own,
    and nothing else."""


SPECS = (AgentSpec("dropout", DropoutAgent, "Dropout TS", "#CC79A7", linestyle="--",
                 settings=(Settings,), config=Config),)
