"""Training-speed benchmark of the bandit agents.

    python -m bandits.bench [--runs 5] [--updates 300] [--device cpu|cuda] [--out results/bench]

Times ``agent.update`` (one minibatch gradient step for every run) on the
Mushroom reward network (117 context features + 2 one-hot actions, 2 x 100
ReLU, minibatch 64, a full buffer of 4096):

* the runs dimension: one population of R runs against R separate
  single-run agents updated one after another (the baseline a Python loop gives);
* BBB against the epsilon-greedy network of the same size.

Both are measured in the same process, interleaved in rounds, so machine noise
hits both sides alike; the ratios are the result. It also projects the wall
time of the paper protocol (50,000 steps x 64 updates, 4 agents) from the
measured rates. Writes ``bench.csv`` and ``bench.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from agents import AgentConfig, make_agent
from bandits.buffer import ReplayBuffer
from bandits.results import package_versions, write_csv, write_json

CONTEXT_DIM, N_ACTIONS, BUFFER = 117, 2, 4096


def _full_buffer(runs: int, device: str) -> ReplayBuffer:
    rng = np.random.default_rng(0)
    buf = ReplayBuffer(BUFFER, runs, CONTEXT_DIM, device=device)
    buf.contexts.copy_(torch.as_tensor(rng.integers(0, 2, (runs, BUFFER, CONTEXT_DIM))))
    buf.actions.copy_(torch.as_tensor(rng.integers(0, N_ACTIONS, (runs, BUFFER))))
    buf.rewards.copy_(torch.as_tensor(rng.choice([0.0, 5.0, -35.0], (runs, BUFFER))))
    buf.pos, buf.full = 0, True
    return buf


def _updater(agent_name: str, runs: int, separate: bool, device: str) -> Callable[[], None]:
    """A function doing one update of ``runs`` runs, batched or as separate agents."""
    cfg = AgentConfig()
    if not separate:
        agent, buf = make_agent(agent_name, CONTEXT_DIM, N_ACTIONS, runs, 0, cfg, device), \
            _full_buffer(runs, device)
        return lambda: agent.update(buf)
    pairs = [(make_agent(agent_name, CONTEXT_DIM, N_ACTIONS, 1, r, cfg, device),
              _full_buffer(1, device)) for r in range(runs)]

    def step() -> None:
        for agent, buf in pairs:
            agent.update(buf)
    return step


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure(runs: int, updates: int, rounds: int, device: str) -> pd.DataFrame:
    """Seconds per update of every variant, interleaved over ``rounds`` rounds (median)."""
    variants = {
        ("bbb", "batched"): _updater("bbb", runs, False, device),
        ("bbb", "separate"): _updater("bbb", runs, True, device),
        ("greedy", "batched"): _updater("greedy", runs, False, device),
        ("greedy", "separate"): _updater("greedy", runs, True, device),
    }
    times: dict[tuple[str, str], list[float]] = {k: [] for k in variants}
    for fn in variants.values():  # warm-up
        for _ in range(10):
            fn()
    for _ in range(rounds):
        for key, fn in variants.items():
            _sync(device)
            tic = time.perf_counter()
            for _ in range(updates):
                fn()
            _sync(device)
            times[key].append((time.perf_counter() - tic) / updates)
    return pd.DataFrame([
        {"agent": a, "mode": m, "runs": runs, "seconds_per_update": float(np.median(t)),
         "updates_per_second": 1.0 / float(np.median(t))}
        for (a, m), t in times.items()
    ])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bandits.bench", description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--runs", type=int, default=5, help="runs (seeds) per population")
    p.add_argument("--updates", type=int, default=200, help="updates timed per round")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median taken)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="torch device")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--out", type=Path, default=Path("results/bench"), help="output directory")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bandits.bench: error: --device cuda but torch has no CUDA device", file=sys.stderr)
        return 2
    start = time.perf_counter()
    df = measure(args.runs, args.updates, args.rounds, args.device)
    t = {(r.agent, r.mode): r.seconds_per_update for r in df.itertuples()}
    paper_updates = 50_000 * 64
    # paper protocol: bbb + 3 epsilon-greedy populations, all seeds batched
    paper_hours = paper_updates * (t["bbb", "batched"] + 3 * t["greedy", "batched"]) / 3600
    ratios = {
        "runs_speedup_bbb": t["bbb", "separate"] / t["bbb", "batched"],
        "runs_speedup_greedy": t["greedy", "separate"] / t["greedy", "batched"],
        "bbb_over_greedy_batched": t["bbb", "batched"] / t["greedy", "batched"],
        "paper_protocol_hours_projected": paper_hours,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(df, args.out / "bench.csv")
    write_json({"command": "python -m bandits.bench " + " ".join(sys.argv[1:] if argv is None
                                                                 else argv),
                "device": args.device, "threads": torch.get_num_threads(),
                "wall_seconds": round(time.perf_counter() - start, 1), **ratios,
                "versions": package_versions()}, args.out / "bench.json")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
