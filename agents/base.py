"""The agent contract and the settings shared by every agent.

An agent is a population of ``runs`` independent learners (one per seed) that
advance in lockstep. It has two methods (as in bsuite's baselines):

* ``act(contexts)`` chooses one action per run. It may draw randomness but never
  learns.
* ``update(buffer)`` takes one gradient step on one minibatch per run. It is the
  only place learning happens; the runner decides how often to call it.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass

import numpy as np
import torch

from bandits.buffer import ReplayBuffer


@dataclass
class AgentConfig:
    """Hyper-parameters of the agents (the runner's CLI states their defaults)."""

    hidden: tuple[int, ...] = (100, 100)
    lr: float = 1e-3
    batch_size: int = 64
    prior: str = "mixture"
    prior_pi: float = 0.5
    prior_sigma1: float = 1.0
    prior_sigma2: float = math.exp(-6)
    prior_sigma: float = 1.0
    noise_sigma: float = 0.1
    init_sigma: float = 0.02
    act_samples: int = 1
    epsilon: float = 0.0


class Agent(abc.ABC):
    """A population of ``runs`` learners choosing among ``n_actions`` actions.

    Args:
        context_dim: Size of a context vector.
        n_actions: Number of actions.
        runs: Number of independent learners (seeds) held at once.
        seed: Seed from which the agent derives its own numpy and torch generators.
        config: Hyper-parameters.
        device: Torch device of the model.
    """

    name = "agent"
    learns = True

    def __init__(
        self,
        context_dim: int,
        n_actions: int,
        runs: int,
        seed: int,
        config: AgentConfig | None = None,
        device: torch.device | str = "cpu",
    ) -> None:
        self.context_dim, self.n_actions, self.runs = context_dim, n_actions, runs
        self.config = config or AgentConfig()
        self.device = torch.device(device)
        np_seed, torch_seed, init_seed = np.random.SeedSequence(seed).generate_state(3)
        self.rng = np.random.default_rng(int(np_seed))
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(torch_seed))
        self._init_seed = int(init_seed)

    @abc.abstractmethod
    def act(self, contexts: np.ndarray) -> np.ndarray:
        """One action per run: ``contexts (runs, context_dim) -> actions (runs,) int64``."""

    def update(self, buffer: ReplayBuffer) -> float:
        """One gradient step on one minibatch per run; returns the loss (0 if nothing learns)."""
        return 0.0
