"""The parts a bandit run's settings are made of besides the agents' and the
environments' own: what a run compares (:class:`RunSettings`), how its agents train
(:class:`TrainingSettings`), what it records and how it is run
(:class:`OutputSettings`), and the presets that fill what a command line leaves unset.
Declarations only: :mod:`bandits.simulator.settings` puts them together into a run's
record."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import envs
from agents import SPECS
from bandits.core import kernels
from bandits.core.config import BIG, COUNT, setting

# Preset values fill every setting the command line leaves unset, before the record is made
# (an agent's own setting only in a run of an agent that reads it); the run's and the
# training's settings that every preset gives default to the default preset's values.
# The learner with a memory (results/mushroom/memory-20k, memory-decay-0.3): every neural
# agent with decoupled weight decay 0.3 (BBB's on its posterior means) and a buffer of
# 50,000 items; the paper's protocol (Blundell et al. 2015, section 5.3): no decay and a
# buffer of 4,096.
MEMORY = {"buffer_size": 50_000, "weight_decay": 0.3, "mean_decay": 0.3}
PAPER_LEARNER = {"buffer_size": 4096, "weight_decay": 0.0, "mean_decay": 0.0}
FIGURE6 = {"agent": ["bbb", "greedy", "eps1", "eps5"], "batch_size": 64}  # its agents
PRESETS: dict[str, dict] = {
    # A CPU-sized run of the learner with a memory, BBB acting on one weight sample
    # (plain Thompson sampling).
    "quick": {**FIGURE6, "seeds": 3, "steps": 2000, "updates_per_step": 16,
              "act_samples": 1, **MEMORY},
    # The learner with a memory at the paper's horizon: results/mushroom/memory-decay-0.3.
    "memory": {**FIGURE6, "seeds": 10, "steps": 50_000, "updates_per_step": 8,
               "act_samples": 1, **MEMORY},
    "paper": {**FIGURE6, "seeds": 5, "steps": 50_000, "updates_per_step": 64,
              "act_samples": 2, **PAPER_LEARNER},
    # The paper's horizon, agents, network and buffer on a 2-core CPU in under an hour:
    # 10 seeds, 8 updates of 64 per step (each item is still drawn about 500 times in
    # its 4096 steps in the buffer).
    "long": {**FIGURE6, "seeds": 10, "steps": 50_000, "updates_per_step": 8,
             "act_samples": 2, **PAPER_LEARNER},
}
DEFAULT = "quick"  # the preset of a command line that names none


@dataclass
class RunSettings:
    """What a run compares, on what, and where: a run record's ``run`` part
    (:class:`bandits.simulator.settings.Config`)."""

    agent: list[str] = setting(
        list(PRESETS[DEFAULT]["agent"]), "agents to compare, from: " + ", ".join(SPECS), nargs="+",
        type=str, per_process=True)
    env: str = setting(
        "mushroom", "bandit environment",
        choices=envs.ENV_IDS)  # the registry itself: data sets registered later count too
    preset: str = setting(
        DEFAULT, "defaults for every unset setting", choices=sorted(PRESETS))
    seeds: int = setting(
        PRESETS[DEFAULT]["seeds"], "number of seeds (runs) per agent", range=COUNT, type=int)
    seed: int = setting(
        0, "first seed; the runs use seed, seed+1, ...", range=(0, 2**63 - 1))
    steps: int = setting(
        PRESETS[DEFAULT]["steps"], "interactions per run", range=COUNT, type=int, resume=True)
    device: str = setting(
        "cpu", "torch device of the models", choices=["cpu", "cuda"])
    no_cuda_graph: bool = setting(
        False, "with --device cuda, run each training step eagerly instead "
        "of replaying it as a captured CUDA graph",
        acts_when=(lambda c: c["device"] == "cuda", "add --device cuda"))
    compile: bool = setting(
        False, "fuse the BBB training step's per-weight work with torch.compile "
        "(fewer kernels on a GPU; on a CPU it gains little and takes "
        "about 30 s to compile)",
        acts_when=(lambda c: any(a in ("bbb", "bbb-lrt") for a in c["agent"]),
                   "add --agent bbb (it fuses BBB's training step)"))
    exact: bool = setting(False, kernels.EXACT_HELP,  # beside --resume only as the run was
                          resume=True)  # made: the process's mode, checked against the run's
    out: Path | None = setting(
        None, "output directory (default: a new directory under runs/)",
        type=Path, per_process=True)
    overwrite: bool = setting(
        False, "allow writing into an existing non-empty output directory", per_process=True)
    data_dir: Path | None = setting(
        None, "data directory (else $BANDITS_DATA_DIR; then Mushroom's packaged copy, "
        "MNIST's cache or a download)",
        type=Path, resume=True)


@dataclass
class TrainingSettings:
    """How often the agents train, and on what."""

    buffer_size: int = setting(
        PRESETS[DEFAULT]["buffer_size"], "replay buffer capacity (last N interactions)",
        range=COUNT, type=int)
    updates_per_step: int = setting(
        PRESETS[DEFAULT]["updates_per_step"], "minibatch updates after each interaction",
        range=COUNT, type=int)
    train_every: int = setting(
        1, "train after every k-th interaction (k=1: every step)",
        range=COUNT)
    train_always_until: int = setting(
        0, "train after every step up to this one, then every --train-every steps "
        "(NeuralUCB's reference: 2000, then every 100)", range=(0, BIG))


@dataclass
class OutputSettings:
    """What a run records and shows, and how it is run and continued (none of these
    changes the results but ``log_points``)."""

    log_points: int = setting(
        2000, "max metrics.csv rows per run (every step if steps <= this)",
        range=COUNT)
    log_y: bool = setting(
        False, "logarithmic y axis in regret.png", resume=True)
    threads: int = setting(
        1, "torch CPU threads; 1 is fastest for these small networks "
        "(0: torch's default)", range=(0, 1024))
    no_progress: bool = setting(
        False, "hide the progress bar", resume=True, per_process=True)
    skip_diverged: bool = setting(
        False, "when a run's training loss becomes NaN or infinite, warn and "
        "let the other runs go on instead of stopping (runs are "
        "independent; the diverged one keeps acting on its NaN model)")
    checkpoint_every: float = setting(
        300.0, "seconds of work between checkpoints in the output "
        "directory (0: after every step); one is also written "
        "at the end and on Ctrl-C",
        range=(0, math.inf), allow_inf=True, resume=True)
    workers: int | None = setting(
        None, "processes that run the populations side by side, one "
        "torch thread each unless --threads says otherwise; the "
        "results are the same bytes for every value (default: "
        "$BANDITS_WORKERS, else the cores this process may use, at "
        "most one per population, and one for a run too short to pay a "
        "worker's start)", range=(1, 1024), type=int, resume=True, per_process=True)
    hook: list[str] | None = setting(
        None, "objects that look on after every step, each as MODULE:CALLABLE: called "
        "with the run's settings and output directory, it returns an object with "
        "after_step(populations, log, stopping); it changes no result (with workers, "
        "each worker calls it for its own agents, with its part's directory)",
        nargs="+", type=str, metavar="MODULE:CALLABLE", resume=True)
    progress_file: Path | None = setting(
        None, argparse.SUPPRESS, type=Path, resume=True, per_process=True)  # for the workers
    settings_file: Path | None = setting(
        None, argparse.SUPPRESS, type=Path,  # for the workers: the run's settings as JSON
        per_process=True)
    resume: Path | None = setting(
        None, "continue the run in this output directory from its "
        "checkpoint, with its config.json (--steps may extend it)",
        type=Path, resume=True, per_process=True)
