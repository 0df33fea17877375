"""Bandit agents and the registry from a name to a factory.

``bbb``: Thompson sampling with Bayes by Backprop; ``greedy``, ``eps1``,
``eps5``: epsilon-greedy with epsilon 0, 1 %, 5 %; ``uniform``: random actions.
"""

from __future__ import annotations

import dataclasses

import torch

from agents.base import Agent, AgentConfig
from agents.bbb import BBBAgent
from agents.greedy import EpsilonGreedyAgent
from agents.uniform import UniformAgent

# name -> (class, settings that override the common AgentConfig)
AGENTS: dict[str, tuple[type[Agent], dict]] = {
    "bbb": (BBBAgent, {}),
    "greedy": (EpsilonGreedyAgent, {"epsilon": 0.0}),
    "eps1": (EpsilonGreedyAgent, {"epsilon": 0.01}),
    "eps5": (EpsilonGreedyAgent, {"epsilon": 0.05}),
    "uniform": (UniformAgent, {}),
}


def make_agent(
    name: str,
    context_dim: int,
    n_actions: int,
    runs: int,
    seed: int,
    config: AgentConfig | None = None,
    device: torch.device | str = "cpu",
) -> Agent:
    """Build the agent registered as ``name`` (see :data:`AGENTS`)."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENTS)}")
    cls, overrides = AGENTS[name]
    config = dataclasses.replace(config or AgentConfig(), **overrides)
    agent = cls(context_dim, n_actions, runs, seed, config, device)
    agent.name = name
    return agent


__all__ = ["AGENTS", "Agent", "AgentConfig", "make_agent"]
