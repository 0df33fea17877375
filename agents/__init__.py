"""Bandit agents and the registry from a name to a factory.

``bbb``: Thompson sampling with Bayes by Backprop (``bbb-lrt``: trained with the local
reparameterisation trick, the same as ``bbb --lrt``); ``greedy``, ``eps1``,
``eps5``: epsilon-greedy with epsilon 0, 1 %, 5 %; ``linfullpost``: Thompson sampling
from the exact posterior of a linear model (Riquelme et al. 2018); ``linucb``: LinUCB on
the raw context (Li et al. 2010); ``neuralucb``, ``neuralts``: NeuralUCB (Zhou et al.
2020) and NeuralTS (Zhang et al. 2021), exploring along the network's gradient;
``dropout``: Thompson sampling with MC dropout; ``bootstrap``: Thompson sampling over an
online-bootstrap ensemble; ``neurallinear``: a linear posterior on the greedy
network's last hidden layer; ``uniform``: random actions.

:func:`make_agents` builds the agents a run trains, each on its own, so that an
agent's numbers never depend on the agents beside it (alone, beside any others, in any
order, with any number of workers: the same bytes; ``tests/test_neighbours.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from agents import (
    bbb,
    bootstrap,
    dropout,
    greedy,
    linear,
    neural_linear,
    neural_ucb,
    uniform,
)
from agents.base import Agent, AgentSpec, CommonSettings
from agents.graph_capture import capture_updates
from agents.neural import NeuralAgent

# The registry: every agent's spec, declared in its own module (a new agent: its module,
# with its SPECS, here, and its settings class named by Agents), in the order --help
# lists them.
SPECS: dict[str, AgentSpec] = {
    spec.name: spec
    for module in (bbb, greedy, linear, neural_ucb, dropout, bootstrap, neural_linear, uniform)
    for spec in module.SPECS
}


@dataclass
class Agents(neural_linear.Settings, bootstrap.Settings, dropout.Settings, neural_ucb.Settings,
             linear.UCBSettings, linear.PosteriorSettings, bbb.Settings):
    """Every registered agent's own settings that a flag gives (each declared once, in its
    agent's module): the agents' part of a run's record. A new agent's settings class is
    named here, first (a dataclass takes its bases' fields last base first, so the
    fields stay in the registry's order)."""


@dataclass
class AgentConfig(Agents, greedy.Settings, CommonSettings):
    """Every agent's settings: :class:`CommonSettings`, every agent's own and those its
    name sets (epsilon-greedy's ``epsilon``), one dataclass: ``AgentConfig(hidden=(16,),
    heads=3)``. Each agent receives only its own part of it (its spec's ``config``:
    :meth:`AgentSpec.own`)."""


for _spec_ in SPECS.values():  # every agent's own settings are named above
    for _part in _spec_.settings:
        if _part not in AgentConfig.__mro__:
            raise TypeError(f"agent {_spec_.name!r}: its settings {_part.__qualname__} are "
                            "not named by agents.Agents (list the class among its bases)")


def _spec(name: str) -> AgentSpec:
    if name not in SPECS:
        raise ValueError(f"unknown agent {name!r}; choose from {', '.join(SPECS)}")
    return SPECS[name]


def make_agent(
    name: str,
    context_dim: int,
    n_actions: int,
    runs: int,
    seed,
    config: AgentConfig | None = None,
    device: torch.device | str = "cpu",
    cuda_graph: bool = True,
    compile: bool = False,
) -> Agent:
    """Build the agent registered as ``name`` (see :data:`SPECS`) with ``runs`` runs.

    ``seed`` is an int or a sequence of ints (the entropy of its generators). On CUDA the
    training step is replayed as a CUDA graph unless ``cuda_graph`` is false; ``compile``
    fuses the BBB step's per-weight work with ``torch.compile``.
    """
    spec = _spec(name)
    kwargs = {"compile": compile} if issubclass(spec.cls, NeuralAgent) else {}
    agent = spec.cls(context_dim, n_actions, runs, name, seed,
                     spec.own(config or AgentConfig()), device, **kwargs)
    if cuda_graph:
        capture_updates(agent)  # on CUDA, where its fit allows: agents.graph_capture
    return agent


def make_agents(
    names: Sequence[str],
    context_dim: int,
    n_actions: int,
    runs: int,
    seed: Callable[[str], object],
    config: AgentConfig | None = None,
    device: torch.device | str = "cpu",
    cuda_graph: bool = True,
    compile: bool = False,
) -> list[Agent]:
    """The agents ``names``, one each (in the order given), each with ``runs`` runs;
    ``seed(name)`` is each agent's entropy. Each acts and learns exactly, to the byte, as
    :func:`make_agent` alone would make it: agents are independent of each other, so they
    may run in different processes, and none changes another's numbers."""
    for name in names:  # an unknown name is refused before any agent is built
        _spec(name)
    return [make_agent(name, context_dim, n_actions, runs, seed(name), config, device,
                       cuda_graph, compile)
            for name in names]


__all__ = ["SPECS", "Agent", "AgentConfig", "AgentSpec", "Agents", "CommonSettings",
           "make_agent", "make_agents"]
