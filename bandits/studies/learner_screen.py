"""``python -m bandits.studies.learner_screen``: do the agents' reward networks average
noisy outcomes, or memorise them? A screen that takes minutes instead of bandit runs that
take hours.

Each *buffer* holds ``--buffer-size`` interactions of a fixed policy on Mushroom: a
mushroom drawn uniformly, every edible one eaten (+5), a poisonous one eaten with
probability ``--eat-rate`` (+5 or -35 at even odds) and else left (0). Each *learner*
(:data:`LEARNERS`: an agent of :mod:`agents` with its settings, and its own buffer size
where it names one) is built with one run per buffer and network seed, and trained
through the agent's own ``update`` for ``--draws-per-item`` draws of every item of its
buffer (``draws x size / 64`` minibatch updates of 64, so every buffer size trains
equally; ``--updates`` fixes the count instead), exactly as in the bandit; then it is
asked about all 8124 mushrooms. What it would do is scored against what its buffer
showed it:

* ``never_eaten``: the share of the poisonous mushrooms never eaten in the buffer that it
  would eat; the memorisation of near-duplicates that paid +5;
* ``last_paid_5`` and ``last_paid_35``: of the poisonous mushrooms whose last eating in the
  buffer paid +5 (-35), the share it would eat;
* ``edible_uneaten``: the share of the edible mushrooms it would not eat.

A point-estimate network is scored by its greedy decision; BBB by its posterior mean and
by Thompson samples (the share of ``--samples`` weight samples whose greedy decision eats:
what Thompson sampling does). Every buffer size screened gets four *reference rows*, on
the same buffers: ``oracle``, the greedy network trained on the mean reward (-15 for an
eaten poisonous mushroom) instead of the outcomes, the floor of what averaging can reach;
``oracle-half``, the same on buffers with half the poisonous bites (``--eat-rate`` / 2):
what half the information allows; ``ridge`` and ``ridge-means``, ridge regression
(lambda 1) of the reward of each action on the one-hot features, from the outcomes and
from their means.

**The rule to pass** (fixed before the runs): at the learner's buffer size, the decisions
it acts on (BBB: its Thompson samples) eat a smaller share of the never-eaten poisonous
mushrooms than ridge regression on the same outcomes (paired by buffer), at most
``--pass-factor`` times the half-information oracle's share, and leave at most
``--max-edible-uneaten`` of the edible mushrooms uneaten. The screen ranks; the bandit
decides.

Writes ``runs.csv`` (one row per learner, buffer and seed), ``summary.csv`` and
``table.md`` (mean +- standard error over the runs) and ``screen.json`` (the command,
machine and wall time).
"""

from __future__ import annotations

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.studies.learner_screen")

import argparse
import dataclasses
import math
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

import envs
from agents import AgentConfig, make_agent
from agents.neural import NeuralAgent
from bandits.core import kernels
from bandits.core.buffer import ReplayBuffer
from bandits.core.command import parsed, refused
from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.command_line import first_paragraph
from bandits.core.conditions import refuse_settings_without_effect
from bandits.core.config import OPEN, UsageError, setting
from bandits.core.files import machine, machine_memory, write_atomic, write_csv, write_json
from bandits.core.outputs import OutputDirError, output_dir, release_dir, remove_if_unused
from bandits.core.processes import stop_on_ctrl_c
from bandits.core.startup import Command
from bandits.studies.learners import GRID, LEARNERS, MAIN, METRICS, REFERENCES, Learner
from bandits.studies.screen_tables import markdown, summarise
from envs.mushroom_data import load_mushroom

REWARD_EAT, REWARD_POISONED, POISON_PROB = 5.0, -35.0, 0.5
MEAN_POISONOUS = POISON_PROB * REWARD_POISONED + (1 - POISON_PROB) * REWARD_EAT  # -15
EAT = 1  # the Mushroom bandit's action "eat"


def _screens_bbb(settings: dict[str, Any]) -> bool:
    """Whether the learners asked for (``settings["learner"]``) hold a BBB one."""
    try:
        names = learner_names(settings["learner"])
    except UsageError:
        return True  # said by the names' own check
    return any(LEARNERS[n].agent.startswith("bbb") for n in names)


@dataclass
class Settings:
    """The settings of the screen; each field is a flag."""

    learner: list[str] = setting(
        list(MAIN), "learners to screen ('grid': the decay x buffer grid; the reference "
        "rows are always added at each buffer size): " + ", ".join(LEARNERS), nargs="+",
        type=str)
    eat_rate: float = setting(0.03, "the fixed policy's chance of eating a poisonous "
                              "mushroom", range=(0, 1))
    buffer_size: int = setting(4096, "interactions in each buffer (the paper's 4096; a "
                               "learner may name its own)", range=(1, 10**7))
    buffers: int = setting(6, "buffers, each of its own draws (comparisons are paired by "
                           "buffer)", range=(1, 1000))
    seeds: int = setting(1, "network seeds per buffer", range=(1, 1000))
    draws_per_item: float = setting(300.0, "training: minibatch draws of every item of a "
                                    "learner's buffer (updates = draws x size / 64)",
                                    range=(OPEN(0), 1e5),
                                    acts_when=(lambda c: c["updates"] is None,
                                               "leave --updates out (it replaces it)"))
    updates: int | None = setting(None, "training: this many minibatch updates of 64 per "
                                  "run instead of --draws-per-item", range=(1, 10**8),
                                  type=int)
    samples: int = setting(32, "BBB: weight samples scored as Thompson sampling",
                           range=(1, 10**4), acts_when=(_screens_bbb, "add a BBB learner"))
    seed: int = setting(0, "the seed of the buffers and the networks", range=(0, 2**31 - 1))
    pass_factor: float = setting(3.0, "pass: at most this many times the oracle's "
                                 "never-eaten share", range=(1, math.inf))
    max_edible_uneaten: float = setting(0.01, "pass: at most this share of edible "
                                        "mushrooms left uneaten", range=(0, 1))
    data_dir: Path | None = setting(None, "directory holding mushroom/ (default: "
                                    "$BANDITS_DATA_DIR, the cache, or a download)", type=Path)
    out: Path | None = setting(None, "output directory (default: a new one under runs/)",
                               type=Path)
    overwrite: bool = setting(False, "replace this screen's earlier outputs in --out")
    threads: int = setting(1, "torch CPU threads", range=(1, 1024))
    exact: bool = setting(False, kernels.EXACT_HELP)


OUTPUTS = ("runs.csv", "summary.csv", "table.md", "screen.json")


def fill_buffer(rng: np.random.Generator, edible: np.ndarray, size: int, eat_rate: float
                ) -> dict[str, np.ndarray]:
    """The interactions of the fixed policy: ``row`` (the mushroom), ``eat``, ``reward``
    (the outcome) and ``mean`` (its expected value)."""
    rows = rng.integers(0, len(edible), size=size)
    good = edible[rows]
    eat = good | (rng.random(size) < eat_rate)
    harmed = ~good & (rng.random(size) < POISON_PROB)
    reward = np.where(eat, np.where(harmed, REWARD_POISONED, REWARD_EAT), 0.0)
    mean = np.where(eat, np.where(good, REWARD_EAT, MEAN_POISONOUS), 0.0)
    return {"row": rows, "eat": eat, "reward": reward, "mean": mean}


def groups(data: dict[str, np.ndarray], edible: np.ndarray) -> dict[str, np.ndarray]:
    """The mushrooms each measure is taken over (boolean masks over all mushrooms)."""
    n = len(edible)
    eaten = np.zeros(n, bool)
    eaten[data["row"][data["eat"]]] = True
    last = np.zeros(n)  # the last eating's outcome (later writes win)
    last[data["row"][data["eat"]]] = data["reward"][data["eat"]]
    poisonous = ~edible
    return {"never_eaten": poisonous & ~eaten,
            "last_paid_5": poisonous & eaten & (last == REWARD_EAT),
            "last_paid_35": poisonous & eaten & (last == REWARD_POISONED),
            "edible_uneaten": edible}


def _buffer(buffers: list[dict[str, np.ndarray]], seeds: int, features: np.ndarray,
            targets: str) -> ReplayBuffer:
    """One replay buffer of ``len(buffers) * seeds`` runs, run ``r`` holding buffer
    ``r // seeds``, with the outcomes or (``targets="means"``) their means as rewards."""
    size = len(buffers[0]["row"])
    buf = ReplayBuffer(size, len(buffers) * seeds, features.shape[1])
    rows = np.repeat(np.stack([b["row"] for b in buffers]), seeds, axis=0)  # (runs, size)
    key = "mean" if targets == "means" else "reward"
    rewards = np.repeat(np.stack([b[key] for b in buffers]), seeds, axis=0)
    actions = np.repeat(np.stack([b["eat"] for b in buffers]), seeds, axis=0).astype(np.int64)
    buf.contexts.copy_(torch.from_numpy(features[rows]))
    buf.actions.copy_(torch.from_numpy(actions))
    buf.rewards.copy_(torch.from_numpy(rewards.astype(np.float32)))
    buf.pos, buf.full, buf.added = 0, True, size
    buf.size.fill_(size)
    buf.seen.fill_(size)
    return buf


@torch.no_grad()
def eat_shares(agent: NeuralAgent, features: np.ndarray, samples: int, seed: int
               ) -> dict[str, torch.Tensor]:
    """For every run and mushroom whether the network eats, ``(runs, N)``: ``greedy`` (the
    network's mean, for BBB the posterior mean) and, for BBB, ``thompson``: the share of
    ``samples`` weight samples that eat."""
    contexts = torch.from_numpy(np.array(features, dtype=np.float32))
    x = agent.all_action_inputs(contexts)  # (N, actions, in)
    n = x.shape[0]
    x = x.reshape(1, -1, x.shape[-1]).expand(agent.runs, -1, -1)
    pred = agent.means(agent.model(x)).reshape(agent.runs, n, agent.n_actions)
    out = {"greedy": (pred.argmax(dim=-1) == EAT).float()}
    if agent.model.bayesian:
        g = torch.Generator().manual_seed(seed)
        s = agent.predict_samples(contexts, samples, g)  # (runs, samples, N, actions)
        assert s is not None  # a Bayesian network's samples
        out["thompson"] = (s.argmax(dim=-1) == EAT).float().mean(dim=1)
    return out


def ridge_eats(buffer: dict[str, np.ndarray], features: np.ndarray, targets: str,
               lam: float = 1.0) -> np.ndarray:
    """Ridge regression (``lam``) of each action's reward on the one-hot features and a
    constant, from the buffer's outcomes or their means: whether it eats each mushroom."""
    key = "mean" if targets == "means" else "reward"
    x_all = np.hstack([features.astype(np.float64), np.ones((len(features), 1))])
    pred = []
    for action in (0, EAT):
        chosen = buffer["eat"] == bool(action)
        x = x_all[buffer["row"][chosen]]
        w = np.linalg.solve(x.T @ x + lam * np.eye(x.shape[1]), x.T @ buffer[key][chosen])
        pred.append(x_all @ w)
    return (pred[1] > pred[0]).astype(np.float64)


def updates_for(cfg: Settings, size: int, batch_size: int) -> int:
    """The minibatch updates of a learner with ``size`` items: ``--updates``, else
    ``--draws-per-item`` draws of every item."""
    return cfg.updates or math.ceil(cfg.draws_per_item * size / batch_size)


def screen_learner(name: str, learner: Learner, cfg: Settings, features: np.ndarray,
                   edible: np.ndarray, size: int | None = None) -> list[dict[str, Any]]:
    """Train ``learner`` on ``cfg.buffers`` buffers x ``cfg.seeds`` seeds of ``size``
    items (default: its own, else ``--buffer-size``); one row per run. Every learner of
    one size sees the same buffers (the half-information oracle the same mushrooms and
    outcomes with half the poisonous bites) and is scored against the full buffers."""
    size = size or learner.buffer_size or cfg.buffer_size

    def draw(eat_rate: float) -> list[dict[str, np.ndarray]]:
        rng = np.random.default_rng([cfg.seed, size])  # the same buffers for every learner
        return [fill_buffer(rng, edible, size, eat_rate) for _ in range(cfg.buffers)]

    full = draw(cfg.eat_rate)
    buffers = full if learner.eat_rate_factor == 1 else draw(cfg.eat_rate *
                                                             learner.eat_rate_factor)
    masks = [groups(b, edible) for b in full]
    runs = cfg.buffers * cfg.seeds
    agent_cfg = dataclasses.replace(AgentConfig(), **learner.settings)
    start = time.perf_counter()
    updates = 0
    if learner.ridge:
        ridge = [ridge_eats(b, features, learner.targets) for b in buffers]
        shares = {"greedy": torch.from_numpy(np.repeat(np.stack(ridge), cfg.seeds, axis=0))}
    else:
        agent = make_agent(learner.agent, features.shape[1], 2, runs, cfg.seed, agent_cfg)
        if not isinstance(agent, NeuralAgent):
            raise ValueError(f"learner {name!r}: {learner.agent} has no reward network to "
                             "screen")
        buf = _buffer(buffers, cfg.seeds, features, learner.targets)
        updates = updates_for(cfg, size, agent_cfg.batch_size)
        agent.update(buf, updates)
        shares = eat_shares(agent, features, cfg.samples, cfg.seed)
    seconds = time.perf_counter() - start
    rows = []
    for r in range(runs):
        b = r // cfg.seeds
        row: dict[str, Any] = {"learner": name, "agent": "ridge" if learner.ridge else
                               learner.agent, "buffer": b, "seed": r % cfg.seeds,
                               "buffer_size": size, "updates": updates}
        for kind, eats in shares.items():
            e = eats[r].numpy()
            for metric in METRICS:
                m = masks[b][metric]
                share = e[m].mean() if m.any() else math.nan
                row[f"{kind}_{metric}"] = 1.0 - share if metric == "edible_uneaten" else share
        row["mushrooms_never_eaten"] = int(masks[b]["never_eaten"].sum())
        row["train_seconds"] = round(seconds / runs, 3)
        rows.append(row)
    return rows


def learner_names(asked: Sequence[str]) -> list[str]:
    """The learners asked for, ``grid`` expanded and each once (the reference rows are
    added by :func:`main`).

    Raises:
        UsageError: An unknown name.
    """
    names: list[str] = []
    for n in asked:
        if n == "grid":
            names += GRID
        elif n in LEARNERS:
            names.append(n)
        elif n not in REFERENCES:
            raise UsageError(f"unknown learner {n!r}; choose from grid, "
                             f"{', '.join(LEARNERS)}")
    return list(dict.fromkeys(names))


def build_parser() -> argparse.ArgumentParser:
    return build_settings_parser(Settings, "python -m bandits.studies.learner_screen",
                                 first_paragraph(__doc__))


def check_memory(cfg: Settings, sizes: Sequence[int]) -> None:
    """A UsageError, before anything is allocated, when the largest learner's buffers
    (``--buffers`` x ``--seeds`` runs of its size, each item its one-hot features as
    float32 and about 64 bytes besides) would not fit in this machine's memory."""
    runs, features = cfg.buffers * cfg.seeds, envs.SHAPES["mushroom"][0]
    need, have = runs * max(sizes) * (4 * features + 64), machine_memory()
    if have and need > have // 2:
        raise UsageError(f"{runs} buffers of {max(sizes):,} items need about "
                         f"{need / 2**30:.1f} GiB; this machine has {have / 2**30:.1f} GiB; "
                         "lower --buffers, --seeds or --buffer-size")


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.learner_screen", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        cfg = parsed(Settings, build_parser(), argv)
        if math.isnan(cfg.eat_rate):
            raise UsageError("--eat-rate nan is not a number; give a share in [0, 1]")
        names = learner_names(cfg.learner)
        refuse_settings_without_effect(Settings, dataclasses.asdict(cfg))
        sizes = list(dict.fromkeys(LEARNERS[n].buffer_size or cfg.buffer_size for n in names))
        if not names:  # the references alone, at --buffer-size
            sizes = [cfg.buffer_size]
        check_memory(cfg, sizes)
        try:
            cfg.exact = kernels.settle(cfg.exact)
        except ValueError as e:
            raise UsageError(str(e)) from None
        argv = kernels.recorded(argv, cfg.exact)
        # a missing, malformed or changed file: one line, as every command says it
        features, edible = load_mushroom(cfg.data_dir)  # (bandits.core.startup.Command)
        out = output_dir(cfg.out, "learner-screen", cfg.overwrite, OUTPUTS,
                         kind="bandits.studies.learner_screen")
    except (UsageError, OutputDirError) as e:
        return refused("bandits.learner_screen", e)
    torch.set_num_threads(cfg.threads)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    try:
        jobs: list[tuple[str, Learner, int | None]] = [
            (ref, REFERENCES[ref], size) for size in sizes for ref in REFERENCES]
        jobs += [(name, LEARNERS[name], None) for name in names]
        for name, learner, size in jobs:
            t = time.perf_counter()
            rows += screen_learner(name, learner, cfg, features, edible, size)
            print(f"{name:24s} {rows[-1]['buffer_size']:6d} items: never eaten "
                  f"{100 * rows[-1]['greedy_never_eaten']:5.1f} % "
                  f"(last run; {time.perf_counter() - t:.0f} s)", flush=True)
        runs = pd.DataFrame(rows)
        table = summarise(runs, cfg)
        write_csv(runs, out / "runs.csv")
        write_csv(table, out / "summary.csv")
        write_atomic(out / "table.md", markdown(table, cfg))
        write_json({"command": "python -m bandits.studies.learner_screen " + shlex.join(argv),
                    "settings": {k: (str(v) if isinstance(v, Path) else v)
                                 for k, v in dataclasses.asdict(cfg).items()},
                    "machine": machine("cpu"), "kernels": kernels.record(),
                    "wall_seconds": round(time.perf_counter() - start, 1)},
                   out / "screen.json")
    finally:
        remove_if_unused(out)
        release_dir(out)
    print(markdown(table, cfg))
    print(f"outputs in {out}")
    return 0


if __name__ == "__main__":  # this module's main through the command's entry, as
    sys.exit(Command("bandits.learner_screen", __name__).main())  # python -m bandits.learner_screen
