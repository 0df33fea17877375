"""Which agents' training steps are captured as CUDA graphs (agents.graph_capture); the
capture itself against the eager step is tested on a GPU (tests/test_cuda.py)."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from agents import AgentConfig, make_agent, make_agents
from agents.graph_capture import can_capture


def _agent(device: str, **config) -> SimpleNamespace:
    return SimpleNamespace(device=torch.device(device), _updates=lambda buffer, n: None,
                           config=AgentConfig(**config))


def test_only_a_network_on_cuda_whose_fit_stays_on_the_device_is_captured():
    assert can_capture(_agent("cuda"))
    assert not can_capture(_agent("cpu"))
    # fits that read the loss or the buffer's length on the host run eagerly
    assert not can_capture(_agent("cuda", fit="epochs", optimizer="sgd"))
    assert not can_capture(_agent("cuda", weight_decay_per_datum=True))
    linear = SimpleNamespace(device=torch.device("cuda"), config=AgentConfig())
    assert not can_capture(linear)  # no sequence of updates to capture


def test_nothing_is_captured_on_the_cpu():
    for agent in make_agents(["greedy", "bbb", "linucb"], 4, 2, 2, lambda name: 0,
                             AgentConfig(hidden=(8,))):
        assert getattr(agent, "captured", None) is None
    assert make_agent("greedy", 4, 2, 2, 0, cuda_graph=False).captured is None
