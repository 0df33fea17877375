"""``python -m bandits.studies.learner_screen``: do the agents' reward networks average
noisy outcomes, or memorise them? A screen that takes minutes instead of bandit runs that
take hours.

Each *buffer* holds ``--buffer-size`` interactions of a fixed policy on Mushroom: a
mushroom drawn uniformly, every edible one eaten (+5), a poisonous one eaten with
probability ``--eat-rate`` (+5 or -35 at even odds) and else left (0). Each *learner*
(:data:`LEARNERS`: an agent of :mod:`agents` with its settings) is built with one run per
buffer and network seed, and trained through the agent's own ``update`` for ``--updates``
minibatch updates, exactly as in the bandit; then it is asked about all 8124 mushrooms.
What it would do is scored against what its buffer showed it:

* ``never_eaten``: the share of the poisonous mushrooms never eaten in the buffer that it
  would eat; the memorisation of near-duplicates that paid +5;
* ``last_paid_5`` and ``last_paid_35``: of the poisonous mushrooms whose last eating in the
  buffer paid +5 (-35), the share it would eat;
* ``edible_uneaten``: the share of the edible mushrooms it would not eat.

A point-estimate network is scored by its greedy decision; BBB by its posterior mean and
by Thompson samples (the share of ``--samples`` weight samples whose greedy decision eats:
what Thompson sampling does). ``oracle`` is the greedy network trained on the mean
reward (-15 for an eaten poisonous mushroom) instead of the outcomes: the floor of what
averaging can reach. A learner *passes* when the decisions it acts on (BBB: its Thompson
samples) eat at most ``--pass-factor`` times the oracle's share of never-eaten poisonous
mushrooms and leave at most ``--max-edible-uneaten`` of the edible ones uneaten.

Writes ``runs.csv`` (one row per learner, buffer and seed), ``summary.csv`` and
``table.md`` (mean +- standard error over the runs) and ``screen.json`` (the command,
machine and wall time).
"""

from __future__ import annotations

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.startup import start

    start("bandits.studies.learner_screen")

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from agents import AgentConfig, make_agent
from agents.neural import NeuralAgent
from bandits.buffer import ReplayBuffer
from bandits.config import build_parser as build_settings_parser
from bandits.config import first_paragraph, setting
from bandits.files import machine, write_atomic, write_csv, write_json
from bandits.outputs import OutputDirError, output_dir, release_dir, remove_if_unused
from envs.mushroom_data import load_mushroom

REWARD_EAT, REWARD_POISONED, POISON_PROB = 5.0, -35.0, 0.5
MEAN_POISONOUS = POISON_PROB * REWARD_POISONED + (1 - POISON_PROB) * REWARD_EAT  # -15
EAT = 1  # the Mushroom bandit's action "eat"


@dataclass(frozen=True)
class Learner:
    """An agent of :mod:`agents` with its settings, as the screen trains it."""

    agent: str
    settings: dict[str, Any] = field(default_factory=dict)  # AgentConfig overrides
    note: str = ""
    targets: str = "outcomes"  # or "means": the oracle, trained on the mean reward
    buffer_size: int | None = None  # None: --buffer-size


LEARNERS: dict[str, Learner] = {
    "oracle": Learner("greedy", {}, "squared error on the mean reward, not the outcome "
                      "(the floor)", targets="means"),
    "greedy": Learner("greedy", {}, "squared error (every point-estimate agent's default)"),
    "greedy-learned": Learner("greedy", {"likelihood": "learned"},
                              "learned noise per context, Gaussian NLL, floor 0.1"),
    "greedy-learned-floor-1": Learner("greedy", {"likelihood": "learned", "noise_sigma": 1.0},
                                      "learned noise, floor 1"),
    "greedy-beta-0.5": Learner("greedy", {"likelihood": "learned", "nll_beta": 0.5},
                               "beta-NLL, beta 0.5, floor 0.1"),
    "greedy-beta-1": Learner("greedy", {"likelihood": "learned", "nll_beta": 1.0},
                             "beta-NLL, beta 1, floor 0.1"),
    "greedy-wd-0.1": Learner("greedy", {"weight_decay": 0.1}, "AdamW weight decay 0.1"),
    "greedy-wd-1": Learner("greedy", {"weight_decay": 1.0}, "AdamW weight decay 1"),
    "greedy-wd-3": Learner("greedy", {"weight_decay": 3.0}, "AdamW weight decay 3"),
    "greedy-wd-10": Learner("greedy", {"weight_decay": 10.0}, "AdamW weight decay 10"),
    "greedy-last-10": Learner("greedy", {"hidden": (100, 10)}, "a smaller last layer, 100 x 10"),
    "greedy-buffer-50k": Learner("greedy", {}, "squared error, a buffer of 50,000",
                                 buffer_size=50_000),
    "dropout": Learner("dropout", {}, "MC dropout 0.2, squared error (mean network)"),
    "bbb": Learner("bbb", {}, "fixed noise 0.1 (the default)"),
    "bbb-noise-1": Learner("bbb", {"noise_sigma": 1.0}, "fixed noise 1"),
    "bbb-noise-5": Learner("bbb", {"noise_sigma": 5.0}, "fixed noise 5"),
    "bbb-noise-10": Learner("bbb", {"noise_sigma": 10.0}, "fixed noise 10"),
    "bbb-noise-20": Learner("bbb", {"noise_sigma": 20.0},
                            "fixed noise 20 (the eaten poisonous reward's own std)"),
    "bbb-learned": Learner("bbb", {"likelihood": "learned"},
                           "learned noise per context, floor 0.1"),
    "bbb-beta-0.5": Learner("bbb", {"likelihood": "learned", "nll_beta": 0.5},
                            "beta-NLL, beta 0.5, floor 0.1"),
    "bbb-beta-1": Learner("bbb", {"likelihood": "learned", "nll_beta": 1.0},
                          "beta-NLL, beta 1, floor 0.1"),
    "bbb-prior-0.1": Learner("bbb", {"prior_sigma": 0.1},
                             "Gaussian prior sigma 0.1 (the Bayesian weight decay)"),
    "bbb-prior-0.03": Learner("bbb", {"prior_sigma": 0.03}, "Gaussian prior sigma 0.03"),
    "bbb-buffer-50k": Learner("bbb", {}, "fixed noise 0.1, a buffer of 50,000",
                              buffer_size=50_000),
}

METRICS = ("never_eaten", "last_paid_5", "last_paid_35", "edible_uneaten")


@dataclass
class Settings:
    """The settings of the screen; each field is a flag."""

    learner: list[str] = setting(
        list(LEARNERS), "learners to screen (the oracle is always added): "
        + ", ".join(LEARNERS), nargs="+", type=str)
    eat_rate: float = setting(0.03, "the fixed policy's chance of eating a poisonous "
                              "mushroom", range=(0, 1))
    buffer_size: int = setting(4096, "interactions in each buffer (the paper's 4096; a "
                               "learner may name its own)", range=(1, 10**7))
    buffers: int = setting(3, "buffers, each of its own draws", range=(1, 1000))
    seeds: int = setting(2, "network seeds per buffer", range=(1, 1000))
    updates: int = setting(20_000, "minibatch updates of 64 per run (enough for the oracle "
                           "to eat every edible mushroom)", range=(1, 10**8))
    samples: int = setting(32, "BBB: weight samples scored as Thompson sampling",
                           range=(1, 10**4))
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
        out["thompson"] = (s.argmax(dim=-1) == EAT).float().mean(dim=1)
    return out


def screen_learner(name: str, learner: Learner, cfg: Settings, features: np.ndarray,
                   edible: np.ndarray) -> list[dict[str, Any]]:
    """Train ``learner`` on ``cfg.buffers`` buffers x ``cfg.seeds`` seeds; one row per run."""
    size = learner.buffer_size or cfg.buffer_size
    rng = np.random.default_rng([cfg.seed, size])  # the same buffers for every learner
    buffers = [fill_buffer(rng, edible, size, cfg.eat_rate) for _ in range(cfg.buffers)]
    masks = [groups(b, edible) for b in buffers]
    runs = cfg.buffers * cfg.seeds
    agent_cfg = dataclasses.replace(AgentConfig(), **learner.settings)
    agent = make_agent(learner.agent, features.shape[1], 2, runs, cfg.seed, agent_cfg)
    if not isinstance(agent, NeuralAgent):
        raise ValueError(f"learner {name!r}: {learner.agent} has no reward network to screen")
    buf = _buffer(buffers, cfg.seeds, features, learner.targets)
    start = time.perf_counter()
    agent.update(buf, cfg.updates)
    seconds = time.perf_counter() - start
    shares = eat_shares(agent, features, cfg.samples, cfg.seed)
    rows = []
    for r in range(runs):
        b = r // cfg.seeds
        row: dict[str, Any] = {"learner": name, "agent": learner.agent, "buffer": b,
                               "seed": r % cfg.seeds, "buffer_size": size}
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


def summarise(runs: pd.DataFrame, cfg: Settings) -> pd.DataFrame:
    """Mean and standard error over the runs of every learner, the acting rule's shares
    (BBB: Thompson samples), and whether it passes."""
    out = []
    for name, g in runs.groupby("learner", sort=False):
        has_samples = "thompson_never_eaten" in g and g["thompson_never_eaten"].notna().all()
        acting = "thompson" if has_samples else "greedy"
        row: dict[str, Any] = {"learner": name, "agent": g["agent"].iloc[0],
                               "buffer_size": int(g["buffer_size"].iloc[0]), "runs": len(g),
                               "acting": acting}
        for kind in ("greedy", "thompson"):
            for metric in METRICS:
                v = g.get(f"{kind}_{metric}", pd.Series(math.nan, index=g.index))
                row[f"{kind}_{metric}"] = v.mean()
                row[f"{kind}_{metric}_se"] = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 \
                    else math.nan
        row["train_seconds"] = g["train_seconds"].sum()
        out.append(row)
    table = pd.DataFrame(out)
    floor = table.loc[table.learner == "oracle", "greedy_never_eaten"].iloc[0]
    acting_never = [r[f"{r['acting']}_never_eaten"] for _, r in table.iterrows()]
    acting_edible = [r[f"{r['acting']}_edible_uneaten"] for _, r in table.iterrows()]
    table["times_oracle"] = [v / floor if floor > 0 else math.inf for v in acting_never]
    table["passes"] = [bool(v <= cfg.pass_factor * floor and u <= cfg.max_edible_uneaten)
                       for v, u in zip(acting_never, acting_edible)]
    return table


def _pct(v: float, se: float) -> str:
    if math.isnan(v):
        return ""
    return f"{100 * v:.1f} +- {100 * se:.1f}" if not math.isnan(se) else f"{100 * v:.1f}"


def markdown(table: pd.DataFrame, cfg: Settings) -> str:
    """The summary as a Markdown table: shares in %, mean +- s.e. over the runs."""
    head = ("| learner | settings | acts on | never eaten, poisonous: eats | last paid +5: "
            "eats | last paid -35: eats | edible left uneaten | x oracle | passes |\n"
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | :---: |\n")
    lines = []
    for _, r in table.iterrows():
        learner = LEARNERS.get(r.learner)
        note = learner.note if learner else ""
        kinds = [("greedy", "greedy" if r.acting == "greedy" else "posterior mean")]
        if r.acting == "thompson":
            kinds.append(("thompson", f"Thompson ({cfg.samples} samples)"))
        for kind, label in kinds:
            cells = [_pct(r[f"{kind}_{m}"], r[f"{kind}_{m}_se"]) for m in METRICS]
            acting = kind == r.acting
            ratio = f"{r.times_oracle:.1f}" if acting else ""
            passes = ("yes" if r.passes else "no") if acting else ""
            lines.append(f"| {r.learner if kind == 'greedy' else ''} | "
                         f"{note if kind == 'greedy' else ''} | {label} | "
                         + " | ".join(cells) + f" | {ratio} | {passes} |")
    return head + "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    return build_settings_parser(Settings, "python -m bandits.studies.learner_screen",
                                 first_paragraph(__doc__), parser_class=argparse.ArgumentParser)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = build_parser()
    cfg = Settings(**vars(p.parse_args(argv)))
    unknown = [n for n in cfg.learner if n not in LEARNERS]
    if unknown:
        p.error(f"unknown learner {unknown[0]!r}; choose from {', '.join(LEARNERS)}")
    names = ["oracle"] + [n for n in dict.fromkeys(cfg.learner) if n != "oracle"]
    features, edible = load_mushroom(cfg.data_dir)
    try:
        out = output_dir(cfg.out, "learner-screen", cfg.overwrite, OUTPUTS,
                         kind="bandits.studies.learner_screen")
    except OutputDirError as e:
        p.exit(2, f"learner_screen: error: {e}\n")
    torch.set_num_threads(cfg.threads)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    try:
        for name in names:
            t = time.perf_counter()
            rows += screen_learner(name, LEARNERS[name], cfg, features, edible)
            print(f"{name:24s} never eaten {100 * rows[-1]['greedy_never_eaten']:5.1f} % "
                  f"(last run; {time.perf_counter() - t:.0f} s)", flush=True)
        runs = pd.DataFrame(rows)
        table = summarise(runs, cfg)
        write_csv(runs, out / "runs.csv")
        write_csv(table, out / "summary.csv")
        write_atomic(out / "table.md", markdown(table, cfg))
        write_json({"command": "python -m bandits.studies.learner_screen " + " ".join(argv),
                    "settings": {k: (str(v) if isinstance(v, Path) else v)
                                 for k, v in dataclasses.asdict(cfg).items()},
                    "machine": machine("cpu"),
                    "wall_seconds": round(time.perf_counter() - start, 1)},
                   out / "screen.json")
    finally:
        remove_if_unused(out)
        release_dir(out)
    print(markdown(table, cfg))
    print(f"outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
