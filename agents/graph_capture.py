"""A network agent's training step replayed as a CUDA graph.

:func:`capture_updates` wraps an agent's sequence of updates (its ``_updates(buffer,
updates)``) so that, on CUDA, the whole sequence is captured once as a CUDA graph and
replayed on every later call: a step of 64 updates is one launch from Python. The first
call with a buffer and a count runs eagerly on a side stream (it creates the optimiser's
lazy state and warms the kernels up, off the capture), the second captures and replays,
every later one replays. The agents' own generators are registered with the graph, so
their draws advance on every replay as they would eagerly (a test on CUDA checks that
the replayed step equals the eager one). :func:`agents.make_agents` applies it where it
can (:func:`can_capture`); the agents themselves have no CUDA branch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

Updates = Callable[[Any, int], "Tensor | None"]  # (buffer, updates) -> loss per run


def can_capture(agent: Any) -> bool:
    """Whether ``agent``'s updates can be captured: a network on CUDA whose fit reads
    neither the loss nor the buffer's length on the host (minibatch steps, no per-datum
    weight decay)."""
    config = agent.config
    return (getattr(agent, "device", torch.device("cpu")).type == "cuda"
            and hasattr(agent, "_updates") and config.fit == "steps"
            and not config.weight_decay_per_datum)


class CapturedUpdates:
    """``updates(buffer, count)``, replayed from a CUDA graph after one eager call and one
    capture per (buffer, count); :meth:`reset` captures again (after loading a state)."""

    def __init__(self, updates: Updates, generators: Sequence[torch.Generator],
                 device: torch.device) -> None:
        self.updates, self.generators, self.device = updates, list(generators), device
        self.eager = False  # set when this torch cannot capture the generators' draws
        self.reset()

    def reset(self) -> None:
        self.graph: torch.cuda.CUDAGraph | None = None
        self.key: tuple | None = None
        self.loss: Tensor | None = None

    def __call__(self, buffer: Any, count: int) -> Tensor | None:
        if self.eager:
            return self.updates(buffer, count)
        key = (id(buffer), count)
        if self.graph is not None and self.key == key:
            self.graph.replay()
            return self.loss
        if self.key != key:  # first call with this buffer and count: run eagerly
            self.graph, self.key = None, key
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):  # warm-up (lazy state, kernels) off the capture
                loss = self.updates(buffer, count)
            torch.cuda.current_stream(self.device).wait_stream(side)
            return loss
        # second call: capture the whole sequence of updates once, then replay it
        graph = torch.cuda.CUDAGraph()
        if not hasattr(graph, "register_generator_state"):  # torch without graph-safe RNG
            warnings.warn("this torch cannot capture draws from the agents' own generators "
                          "in a CUDA graph; the training step runs eagerly", stacklevel=2)
            self.eager = True
            return self.updates(buffer, count)
        for g in self.generators:  # their draws advance on every replay
            graph.register_generator_state(g)
        with torch.cuda.graph(graph):
            loss = self.updates(buffer, count)
        self.graph, self.loss = graph, loss
        graph.replay()
        return loss


def capture_updates(agent: Any) -> None:
    """Replay ``agent``'s updates from a CUDA graph from now on, if it can be
    (:func:`can_capture`); else leave it as it is."""
    if can_capture(agent):
        agent.captured = CapturedUpdates(agent._updates, [agent.generator], agent.device)
