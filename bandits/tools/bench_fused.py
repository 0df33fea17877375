"""The default timing of ``python -m bandits.bench`` (:mod:`bandits.tools.bench`): the
fused population step of the paper's four agents against the per-agent loop it replaced,
on the Mushroom reward network, interleaved in rounds."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pandas as pd
import torch

from agents import SPECS, AgentConfig, make_agents
from bandits.bayes import ScaleMixturePrior, make_mlp
from bandits.core.buffer import ReplayBuffer
from bandits.tools.bench_agents import sync

CONTEXT_DIM, N_ACTIONS, BUFFER = 117, 2, 4096
PAPER_AGENTS = ["bbb", "greedy", "eps1", "eps5"]
PAPER_UPDATES = 64  # the paper's updates per step


def full_buffer(runs: int, device: str) -> ReplayBuffer:
    """A full buffer of Mushroom-like items (binary contexts, rewards 0 / 5 / -35)."""
    rng = np.random.default_rng(0)
    buf = ReplayBuffer(BUFFER, runs, CONTEXT_DIM, device=device)
    for _ in range(BUFFER):
        buf.add(rng.integers(0, 2, (runs, CONTEXT_DIM)), rng.integers(0, N_ACTIONS, runs),
                rng.choice([0.0, 5.0, -35.0], runs))
    return buf


def per_agent_loop(runs: int, device: str, names: Sequence[str]) -> Callable[[], None]:
    """One update of each agent in ``names``, the way the simulator trained before the
    fused step."""
    cfg = AgentConfig()
    eye = torch.eye(N_ACTIONS, device=device)
    lanes = []
    for name in names:
        bayesian = SPECS[name].cls.name == "bbb"
        prior = ScaleMixturePrior(cfg.prior_pi, cfg.prior_sigma1, cfg.prior_sigma2)
        gen = torch.Generator(device=device).manual_seed(0)
        model = make_mlp(CONTEXT_DIM + N_ACTIONS, cfg.hidden, 1, runs=runs, bayesian=bayesian,
                         prior=prior, init_sigma=cfg.init_sigma, generator=gen, device=device)
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, fused=True)
        lanes.append((bayesian, model, opt, gen, full_buffer(runs, device)))

    def step() -> None:
        for bayesian, model, opt, gen, buf in lanes:
            batch = buf.sample(cfg.batch_size, gen)
            x = torch.cat([batch.contexts, eye[batch.actions]], dim=-1)
            pred = model(x).squeeze(-1)
            if bayesian:
                nll = 0.5 * ((batch.rewards - pred) / cfg.noise_sigma) ** 2
                loss = (model.complexity_cost("mc") / len(buf) + nll.mean(dim=1)).sum()
            else:
                loss = ((batch.rewards - pred) ** 2).mean(dim=1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            float(loss.detach())  # the loss went back to the host after every update
    return step


def fused_step(runs: int, updates: int, device: str, cuda_graph: bool = True
               ) -> dict[str, Callable[[], object]]:
    """``updates`` updates of each of the four agents, as ``bandits.run`` does."""
    pops = make_agents(PAPER_AGENTS, CONTEXT_DIM, N_ACTIONS, runs, lambda n: [0, len(n)],
                       AgentConfig(), device, cuda_graph=cuda_graph)
    steps: dict[str, Callable[[], object]] = {}
    for pop in pops:
        buf = full_buffer(pop.runs, device)
        steps[pop.name] = partial(pop.update, buf, updates)
    return steps


def measure(runs: int, updates: int, rounds: int, device: str) -> pd.DataFrame:
    """Seconds per update of every agent's runs, each variant timed over ``updates``
    updates per round, interleaved over ``rounds`` rounds (median)."""
    variants: dict[str, tuple[Callable[[], object], int]] = {}
    for key, fn in fused_step(runs, updates, device).items():
        variants[f"per-agent loop {key}"] = (per_agent_loop(runs, device, key.split("+")), updates)
        variants[f"fused {key}"] = (fn, 1)
    loops = [fn for k, (fn, _) in variants.items() if k.startswith("per-agent")]
    fused = [fn for k, (fn, _) in variants.items() if k.startswith("fused")]
    variants["per-agent loop (all agents)"] = (lambda: [fn() for fn in loops], updates)
    variants["fused (all agents)"] = (lambda: [fn() for fn in fused], 1)
    for fn, calls in variants.values():  # warm-up (and CUDA graph capture)
        for _ in range(3 * calls):
            fn()
    sync(device)
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for key, (fn, calls) in variants.items():
            sync(device)
            tic = time.perf_counter()
            for _ in range(calls):
                fn()
            sync(device)
            times[key].append((time.perf_counter() - tic) / updates)
    return pd.DataFrame([
        {"variant": k, "runs_per_agent": runs, "seconds_per_update": float(np.median(t)),
         "updates_per_second": 1.0 / float(np.median(t))}
        for k, t in times.items()
    ])
