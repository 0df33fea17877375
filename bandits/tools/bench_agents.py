"""The cost per step of every agent alone for ``python -m bandits.bench
--agents-per-step``: act, store the interaction, then the minibatch updates, on
MNIST-shaped random contexts (784 features, 10 actions), with this project's settings or
(``--papers-setup``) the NeuralUCB and NeuralTS papers'."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from agents import SPECS, AgentConfig, make_agent
from bandits.core import denormals
from bandits.core.buffer import ReplayBuffer


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


MNIST_DIM, MNIST_ACTIONS, MNIST_BUFFER = 784, 10, 4096

PAPERS_SETUP: dict[str, Any] = {"encoding": "disjoint", "hidden": (100,), "nu": 1e-5,
                                "ucb_lambda": 1e-5, "weight_decay": 1e-5}
"""The agents' settings of the NeuralUCB and NeuralTS papers' MNIST set-up (as in
``results/neural-bandits``): disjoint inputs, one hidden layer of 100, nu = lambda = 1e-5,
with contexts of unit L2 norm and a buffer of 10,000 (:func:`agents_per_step`,
``papers_setup``)."""
PAPERS_BUFFER, PAPERS_HELD = 10_000, 2_000
TRAIN_ALWAYS_UNTIL, TRAIN_EVERY, HORIZON = 2_000, 100, 10_000
"""The papers' schedule that the projection counts: training after every round to round
2,000, then after every 100th, over 10,000 rounds (2,080 training calls)."""


def settings(papers_setup: bool) -> AgentConfig:
    """The agents' settings of the timing: this project's defaults or the papers'."""
    return AgentConfig(**PAPERS_SETUP) if papers_setup else AgentConfig()


def refused(names: Sequence[str], papers_setup: bool, context_dim: int = MNIST_DIM,
            n_actions: int = MNIST_ACTIONS) -> dict[str, str]:
    """The agents of ``names`` that cannot run with these settings, each with the reason
    (``bbb-lrt`` under the papers' disjoint inputs); :func:`agents_per_step` leaves them out."""
    cfg = settings(papers_setup)
    reasons = {name: SPECS[name].check(SPECS[name].own(cfg), context_dim, n_actions)
               for name in names}
    return {name: why for name, why in reasons.items() if why}


def agents_per_step(runs: int, updates: int, rounds: int, device: str,
                    names: Sequence[str] = tuple(SPECS), context_dim: int = MNIST_DIM,
                    n_actions: int = MNIST_ACTIONS, papers_setup: bool = False
                    ) -> pd.DataFrame:
    """Seconds per step of each agent in ``names`` alone, ``runs`` seeds, on random
    MNIST-like contexts (a fifth of the pixels lit, pixels / 126 as the environment scales
    them) with a reward of 1 for a random label: ``act``, the interaction stored, then
    ``update`` with ``updates`` minibatch updates (learning agents). Each agent plays two
    steps first (warm-up), then one step per round, interleaved over ``rounds``; the
    medians of the act, update and step times. The buffer starts empty, like a run's;
    ``neurallinear``'s refit from the whole buffer (every ``refresh_every`` updates) falls
    outside these few steps. Agents that cannot run with the settings (:func:`refused`) are
    left out.

    With ``papers_setup`` the agents take :data:`PAPERS_SETUP`, each context is scaled to
    unit L2 norm, and the buffer of 10,000 already holds 2,000 rounds (the size it has
    when the every-round training ends); ``minutes_per_papers_run`` projects a 10,000-round
    run of the papers' schedule (10,000 acts, 2,080 training calls) from the medians."""
    with denormals.flushed():  # as the simulator runs
        return _agents_per_step(runs, updates, rounds, device, names, context_dim, n_actions,
                                papers_setup)


def _agents_per_step(runs: int, updates: int, rounds: int, device: str, names: Sequence[str],
                     context_dim: int, n_actions: int, papers_setup: bool) -> pd.DataFrame:
    steps = _Steps(runs, context_dim, n_actions, papers_setup, device)
    cfg = settings(papers_setup)
    left_out = refused(names, papers_setup, context_dim, n_actions)
    lanes = [(name, make_agent(name, context_dim, n_actions, runs, 0, cfg, device),
              steps.buffer()) for name in names if name not in left_out]
    for _, agent, buf in lanes:  # the warm-up
        for _ in range(2):
            steps.step(agent, buf, updates)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in lanes}
    for _ in range(rounds):
        for name, agent, buf in lanes:
            times[name].append(steps.step(agent, buf, updates))
    return _table(times, runs, context_dim, n_actions, updates, papers_setup)


class _Steps:
    """The steps timed: random contexts and rewards (from one generator, in the order the
    timing draws them), the buffer each agent starts with and one step of an agent."""

    def __init__(self, runs: int, context_dim: int, n_actions: int, papers_setup: bool,
                 device: str) -> None:
        self.rng = np.random.default_rng(0)
        self.runs, self.context_dim, self.n_actions = runs, context_dim, n_actions
        self.papers_setup, self.device = papers_setup, device

    def contexts(self) -> np.ndarray:
        rng, shape = self.rng, (self.runs, self.context_dim)
        lit = rng.random(shape) < 0.2
        c = lit * rng.integers(1, 256, shape) / 126
        if self.papers_setup:
            c = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
        return c.astype(np.float32)

    def buffer(self) -> ReplayBuffer:
        """Empty, like a run's; under the papers' set-up holding their first rounds."""
        capacity = PAPERS_BUFFER if self.papers_setup else MNIST_BUFFER
        buf = ReplayBuffer(capacity, self.runs, self.context_dim, device=self.device)
        for _ in range(PAPERS_HELD if self.papers_setup else 0):
            buf.add(self.contexts(),
                    torch.as_tensor(self.rng.integers(0, self.n_actions, self.runs)),
                    (self.rng.random(self.runs) < 0.1) * 1.0)
        return buf

    def step(self, agent, buf: ReplayBuffer, updates: int) -> tuple[float, float]:
        """The seconds of one ``act`` and of the ``updates`` that follow it."""
        contexts = self.contexts()
        sync(self.device)
        tic = time.perf_counter()
        actions = agent.act(contexts)
        actions_np = actions.cpu().numpy()
        sync(self.device)
        act = time.perf_counter() - tic
        buf.add(contexts, actions,
                (actions_np == self.rng.integers(0, self.n_actions, self.runs)) * 1.0)
        tic = time.perf_counter()
        if agent.learns:
            agent.update(buf, updates)
        sync(self.device)
        return act, time.perf_counter() - tic


def _table(times: dict[str, list[tuple[float, float]]], runs: int, context_dim: int,
           n_actions: int, updates: int, papers_setup: bool) -> pd.DataFrame:
    """A row per agent: the medians of its act, update and step times, and the minutes
    they project."""
    rows = []
    for name, t in times.items():
        act, update = np.array(t).T
        per_step = float(np.median(act + update))
        rows.append({"agent": name, "runs": runs, "context_dim": context_dim,
                     "actions": n_actions, "updates_per_step": updates,
                     "seconds_act": float(np.median(act)),
                     "seconds_update": float(np.median(update)),
                     "seconds_per_step": per_step,
                     "minutes_per_10000_steps": per_step * 10_000 / 60})
        if papers_setup:
            calls = TRAIN_ALWAYS_UNTIL + (HORIZON - TRAIN_ALWAYS_UNTIL) // TRAIN_EVERY
            rows[-1]["minutes_per_papers_run"] = (
                float(np.median(act)) * HORIZON + float(np.median(update)) * calls) / 60
    return pd.DataFrame(rows)
