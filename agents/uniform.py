"""Uniformly random actions: the reference line that knows nothing."""

from __future__ import annotations

import numpy as np

from agents.base import Agent


class UniformAgent(Agent):
    """Picks every action with equal probability; never learns."""

    name = "uniform"
    learns = False

    def act(self, contexts: np.ndarray) -> np.ndarray:
        return self.rng.integers(self.n_actions, size=self.runs)
