"""The cost per step of every agent alone for ``python -m bandits.bench
--agents-per-step``: act, store the interaction, then the minibatch updates, on
MNIST-shaped random contexts (784 features, 10 actions)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from agents import AGENTS, AgentConfig, make_agent
from bandits.buffer import ReplayBuffer


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


MNIST_DIM, MNIST_ACTIONS, MNIST_BUFFER = 784, 10, 4096


def agents_per_step(runs: int, updates: int, rounds: int, device: str,
                    names: Sequence[str] = tuple(AGENTS), context_dim: int = MNIST_DIM,
                    n_actions: int = MNIST_ACTIONS) -> pd.DataFrame:
    """Seconds per step of each agent in ``names`` alone, ``runs`` seeds, on random
    MNIST-like contexts (a fifth of the pixels lit, pixels / 126 as the environment scales
    them) with a reward of 1 for a random label: ``act``, the interaction stored, then
    ``update`` with ``updates`` minibatch updates (learning agents). Each agent plays two
    steps first (warm-up), then one step per round, interleaved over ``rounds``; the
    medians of the act, update and step times. The buffer starts empty, like a run's;
    ``neurallinear``'s refit from the whole buffer (every ``refresh_every`` updates) falls
    outside these few steps."""
    rng = np.random.default_rng(0)
    cfg = AgentConfig()
    lanes = []
    for name in names:
        agent = make_agent(name, context_dim, n_actions, runs, 0, cfg, device)
        lanes.append((name, agent, ReplayBuffer(MNIST_BUFFER, runs, context_dim, device=device)))

    def step(agent, buf) -> tuple[float, float]:
        lit = rng.random((runs, context_dim)) < 0.2
        contexts = (lit * rng.integers(1, 256, (runs, context_dim)) / 126).astype(np.float32)
        sync(device)
        tic = time.perf_counter()
        actions = agent.act(contexts)
        actions_np = actions.cpu().numpy()
        sync(device)
        act = time.perf_counter() - tic
        buf.add(contexts, actions, (actions_np == rng.integers(0, n_actions, runs)) * 1.0)
        tic = time.perf_counter()
        if agent.learns:
            agent.update(buf, updates)
        sync(device)
        return act, time.perf_counter() - tic

    for _, agent, buf in lanes:
        for _ in range(2):
            step(agent, buf)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in lanes}
    for _ in range(rounds):
        for name, agent, buf in lanes:
            times[name].append(step(agent, buf))
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
    return pd.DataFrame(rows)
