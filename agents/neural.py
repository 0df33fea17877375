"""What the neural agents share: a reward model ``f(context, action)`` trained from the buffer.

The network's input is the context concatenated with a one-hot action and its
output is the expected reward (Blundell et al. 2015, section 5.3), so scoring
all actions of a context is one forward call over ``n_actions`` rows.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
import torch
from torch import Tensor

from agents.base import Agent
from bandits.bayes import MLP
from bandits.buffer import ReplayBuffer


class NeuralAgent(Agent):
    """An agent with a reward model trained by Adam on minibatches from the buffer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # Agent's arguments
        super().__init__(*args, **kwargs)
        # Initial weights come from the agent's own seed, not torch's global state.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._init_seed)
            self.model = self.build_model(self.context_dim + self.n_actions).to(self.device)
        # fused: one kernel for all parameters (CPU and CUDA), the same Adam update
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.config.lr, fused=True)
        self._eye = torch.eye(self.n_actions, device=self.device)  # one-hot rows

    @abc.abstractmethod
    def build_model(self, in_features: int) -> MLP:
        """The reward network with ``runs`` independent copies."""

    @abc.abstractmethod
    def loss(self, inputs: Tensor, rewards: Tensor, n_data: int) -> Tensor:
        """Loss summed over runs: ``inputs (runs, batch, in)``, ``rewards (runs, batch)``."""

    def inputs(self, contexts: Tensor, actions: Tensor) -> Tensor:
        """``contexts (..., d)``, ``actions (...)`` -> network inputs ``(..., d + n_actions)``."""
        return torch.cat([contexts, self._eye[actions]], dim=-1)

    def all_action_inputs(self, contexts: np.ndarray) -> Tensor:
        """All actions of each run's context: ``(runs, d) -> (runs, n_actions, d + n_actions)``."""
        c = torch.as_tensor(contexts, dtype=torch.float32, device=self.device)
        c = c.unsqueeze(1).expand(-1, self.n_actions, -1)  # (runs, n_actions, d)
        eye = self._eye.expand(c.shape[0], -1, -1)  # (runs, n_actions, n_actions)
        return torch.cat([c, eye], dim=-1)

    def update(self, buffer: ReplayBuffer) -> float:
        batch = buffer.sample(self.config.batch_size, self.generator)
        x = self.inputs(batch.contexts, batch.actions)  # (runs, batch, in)
        loss = self.loss(x, batch.rewards, len(buffer))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach()) / self.runs
