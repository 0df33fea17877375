"""One population of a bandit run: one :class:`agents.Agent` (its runs batched), with
its environment copies, its replay buffer and where it stands. The loop
(:mod:`bandits.simulator.loop`) steps it; the hooks (:mod:`bandits.simulator.hooks`) look
at it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agents import Agent
from bandits.core.buffer import ReplayBuffer


@dataclass
class Population:
    """One agent (its runs batched) with its environment copies, its replay buffer and
    where it stands."""

    agent: Agent
    env: Any  # a vector env of agent.runs copies
    buffer: ReplayBuffer
    context: np.ndarray  # (runs, d): the contexts the population acts on next
    loss: torch.Tensor | None = None  # (runs,) on the device: the last update's loss
    diverged_at: torch.Tensor | None = None  # (runs,) first step with a non-finite loss, or -1
    item_key: str | None = None  # the info key naming the data item shown (its env's spec)
    env_columns: tuple[str, ...] = ()  # info keys recorded every step (its env's spec)
    agent_columns: tuple[str, ...] = ()  # per-step quantities of the agent (its spec's)
