"""Uniformly random actions: the reference line that knows nothing."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from agents.base import Agent, AgentSpec


class UniformAgent(Agent):
    """Picks every action with equal probability; never learns."""

    name = "uniform"
    learns = False

    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        return torch.as_tensor(self.rng.integers(self.n_actions, size=self.runs),
                               device=self.device)


SPECS = (AgentSpec("uniform", UniformAgent, "uniform", "#888888", linestyle=":", neural=False),)
