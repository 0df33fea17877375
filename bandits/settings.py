"""The settings of a bandit run: the presets, :class:`Config` (one field per flag of
``python -m bandits.run``) and their checks. A run's identity and what a resumed run may
change: :mod:`bandits.resume`. Nothing here runs anything."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import envs
from agents import AGENTS, SPECS, AgentConfig
from agents.neural_ucb import UCB_LAMBDA_RANGE
from bandits.config import (
    COUNT,
    OPEN,
    POSITIVE,
    SIGMA,
    UsageError,
    check_ranges,
    convert,
    setting,
)
from bandits.config import build_parser as build_settings_parser
from bandits.files import machine_memory

DESCRIPTION = ("The bandit simulator: agents act, learn from a replay buffer, and are scored "
               "by regret.")
"""The first paragraph of ``python -m bandits.run --help``."""

# The paper's protocol (Blundell et al. 2015, section 5.3) and a CPU-sized one.
# Preset values fill every setting the command line leaves unset. The agents' own
# defaults (network, prior, likelihood, optimiser) come from AgentConfig.
PRESETS: dict[str, dict] = {
    "quick": {
        "agent": ["bbb", "greedy", "eps1", "eps5"], "seeds": 3, "steps": 2000,
        "buffer_size": 4096, "batch_size": 64, "updates_per_step": 16, "act_samples": 1,
    },
    "paper": {
        "agent": ["bbb", "greedy", "eps1", "eps5"], "seeds": 5, "steps": 50_000,
        "buffer_size": 4096, "batch_size": 64, "updates_per_step": 64, "act_samples": 2,
    },
    # The paper's horizon, agents, network and buffer on a 2-core CPU in under an hour:
    # 10 seeds, 8 updates of 64 per step (each item is still drawn about 500 times in
    # its 4096 steps in the buffer).
    "long": {
        "agent": ["bbb", "greedy", "eps1", "eps5"], "seeds": 10, "steps": 50_000,
        "buffer_size": 4096, "batch_size": 64, "updates_per_step": 8, "act_samples": 2,
    },
}


@dataclass
class Config:
    """Settings of one invocation; each field is a CLI flag (``--kebab-case``)."""

    agent: list[str] | None = setting(
        None, "agents to compare, from: " + ", ".join(AGENTS), nargs="+",
        type=str)
    env: str = setting(
        "mushroom", "bandit environment",
        choices=envs.ENV_IDS)  # the registry itself: data sets registered later count too
    wheel_delta: float = setting(
        0.95, "wheel: radius delta beyond which the high-reward arms pay "
        "(Riquelme et al.: 0.5 ... 0.99; harder as it grows)",
        range=(OPEN(0), OPEN(1)))
    normalize: str = setting(
        "none", "classification bandits (mushroom-classes, mnist, a registered data set): "
        "'l2' scales each context to unit L2 norm, as the NeuralUCB and NeuralTS papers "
        "do; 'none' keeps the data set's own features", choices=["none", "l2"])
    order: str = setting(
        "random", "classification bandits: 'random' draws each round's example uniformly "
        "with replacement; 'pass' goes through the data set in shuffled passes without "
        "replacement (the NeuralUCB and NeuralTS papers' one pass)", choices=["random", "pass"])
    preset: str = setting(
        "quick", "defaults for every unset setting", choices=sorted(PRESETS))
    seeds: int | None = setting(
        None, "number of seeds (runs) per agent", range=COUNT, type=int)
    seed: int = setting(
        0, "first seed; the runs use seed, seed+1, ...", range=(0, 2**63 - 1))
    steps: int | None = setting(
        None, "interactions per run", range=COUNT, type=int)
    device: str = setting(
        "cpu", "torch device of the models", choices=["cpu", "cuda"])
    no_cuda_graph: bool = setting(
        False, "with --device cuda, run each training step eagerly instead "
        "of replaying it as a captured CUDA graph")
    compile: bool = setting(
        False, "fuse the BBB training step's per-weight work with torch.compile "
        "(fewer kernels on a GPU; on a CPU it gains little and takes "
        "about 30 s to compile)")
    out: Path | None = setting(
        None, "output directory (default: a new directory under runs/)",
        type=Path)
    overwrite: bool = setting(
        False, "allow writing into an existing non-empty output directory")
    data_dir: Path | None = setting(
        None, "data directory (else $BANDITS_DATA_DIR, the cache, download)",
        type=Path)
    hidden: tuple[int, ...] = setting(
        AgentConfig.hidden, "hidden layer sizes of the reward network",
        range=(1, 100_000), nargs="+")
    buffer_size: int | None = setting(
        None, "replay buffer capacity (last N interactions)",
        range=COUNT, type=int)
    batch_size: int | None = setting(
        None, "minibatch size of each update", range=COUNT, type=int)
    updates_per_step: int | None = setting(
        None, "minibatch updates after each interaction",
        range=COUNT, type=int)
    train_every: int = setting(
        1, "train after every k-th interaction (k=1: every step)",
        range=COUNT)
    lr: float = setting(
        AgentConfig.lr, "Adam learning rate of every neural agent",
        range=(OPEN(0), math.inf))
    prior: str = setting(
        AgentConfig.prior, "BBB prior: scale mixture or Gaussian",
        choices=["mixture", "gaussian"])
    prior_pi: float = setting(
        AgentConfig.prior_pi, "scale-mixture weight pi of the wide component",
        range=(OPEN(0), OPEN(1)))
    prior_sigma1: float = setting(
        AgentConfig.prior_sigma1, "scale-mixture wide sigma_1 (= e^0)",
        range=SIGMA)
    prior_sigma2: float = setting(
        AgentConfig.prior_sigma2, "scale-mixture narrow sigma_2 (= e^-6)",
        range=SIGMA)
    prior_sigma: float = setting(
        AgentConfig.prior_sigma,
        "Gaussian prior sigma (with --prior gaussian)", range=SIGMA)
    noise_sigma: float = setting(
        AgentConfig.noise_sigma,
        "BBB Gaussian likelihood noise sigma of the reward; with --likelihood "
        "learned, the floor of every neural agent's learned noise", range=(1e-3, 1e3))
    likelihood: str = setting(
        AgentConfig.likelihood, "every neural agent's reward likelihood: fixed (BBB: "
        "Gaussian with --noise-sigma; the others: squared error) or learned (the "
        "network also predicts the noise of each context and action, at least "
        "--noise-sigma, trained by Gaussian negative log-likelihood)",
        choices=["fixed", "learned"])
    nll_beta: float = setting(
        AgentConfig.nll_beta, "with --likelihood learned: beta-NLL (Seitzer et al. 2022), "
        "each datum's negative log-likelihood weighted by sigma^(2 beta) held constant "
        "(0: the plain NLL; 1: the mean learns as by squared error)", range=(0, 1))
    weight_decay: float = setting(
        AgentConfig.weight_decay, "decoupled weight decay (AdamW) of the point-estimate "
        "networks (greedy, epsilon-greedy, dropout, bootstrap, neurallinear); BBB's prior "
        "is its own regulariser (0: plain Adam)", range=(0, 10.0))
    kl_scale: str = setting(
        AgentConfig.kl_scale, "BBB: divide the complexity cost by the items "
        "in the buffer, or by every interaction seen "
        "so far (the buffer standing for the whole "
        "history: the posterior keeps narrowing)",
        choices=["buffer", "seen"])
    init_sigma: float = setting(
        AgentConfig.init_sigma, "BBB initial posterior sigma of every weight",
        range=SIGMA)
    act_samples: int | None = setting(
        None, "BBB: weight samples drawn to act, their predictions averaged (1: plain "
        "Thompson sampling, one weight sample per step; 2: the paper's average, kept by "
        "the presets that reproduce it)",
        range=(1, 10_000), type=int)
    lrt: bool = setting(
        False, "bbb: train with the local reparameterisation trick (acting keeps "
        "one weight sample per run)")
    dropout: float = setting(
        AgentConfig.dropout, "dropout: the dropout rate of the hidden layers "
        "(training, and the one mask drawn to act)",
        range=(OPEN(0), OPEN(1)))
    heads: int = setting(
        AgentConfig.heads, "bootstrap: networks per run, each on its own online "
        "bootstrap (Poisson(1) weights) of the buffer",
        range=(1, 10_000))
    refresh_every: int = setting(
        AgentConfig.refresh_every, "neurallinear: training steps between "
        "refits of its posterior to new features",
        range=COUNT)
    ucb_alpha: float = setting(
        AgentConfig.ucb_alpha, "linucb: the width alpha of the upper confidence bound "
        "(Li et al. 2010)", range=(0, 1e6))
    nu: float = setting(
        AgentConfig.nu, "neuralucb, neuralts: exploration scale nu (the reference "
        "implementations' default)", range=(OPEN(0), 1e6))
    ucb_lambda: float = setting(
        AgentConfig.ucb_lambda, "neuralucb, neuralts: regulariser lambda of the design "
        "matrix U = lambda I + sum g g^T (kept in float32: a smaller lambda would "
        "underflow)", range=UCB_LAMBDA_RANGE)
    exact_design: bool = setting(
        False, "neuralucb, neuralts: keep the full design matrix (small networks only) "
        "instead of its diagonal (the papers' approximation)")
    lin_a0: float = setting(
        AgentConfig.lin_a0, "linfullpost, neurallinear: inverse-gamma prior "
        "shape a0 of the noise variance", range=POSITIVE)
    lin_b0: float = setting(
        AgentConfig.lin_b0, "linfullpost, neurallinear: inverse-gamma prior "
        "scale b0", range=POSITIVE)
    lin_lambda: float = setting(
        AgentConfig.lin_lambda, "linfullpost, neurallinear: prior precision "
        "lambda (beta ~ N(0, sigma^2/lambda I))",
        range=POSITIVE)
    log_points: int = setting(
        2000, "max metrics.csv rows per run (every step if steps <= this)",
        range=COUNT)
    log_y: bool = setting(
        False, "logarithmic y axis in regret.png")
    threads: int = setting(
        1, "torch CPU threads; 1 is fastest for these small networks "
        "(0: torch's default)", range=(0, 1024))
    no_progress: bool = setting(
        False, "hide the progress bar")
    skip_diverged: bool = setting(
        False, "when a run's training loss becomes NaN or infinite, warn and "
        "let the other runs go on instead of stopping (runs are "
        "independent; the diverged one keeps acting on its NaN model)")
    checkpoint_every: float = setting(
        300.0, "seconds of work between checkpoints in the output "
        "directory (0: after every step); one is also written "
        "at the end and on Ctrl-C",
        range=(0, math.inf), allow_inf=True)
    workers: int | None = setting(
        None, "processes that run the populations side by side, one "
        "torch thread each unless --threads says otherwise; the "
        "results are the same bytes for every value (default: "
        "$BANDITS_WORKERS, else the cores this process may use, at "
        "most one per population)", range=(1, 1024), type=int)
    progress_file: Path | None = setting(
        None, argparse.SUPPRESS, type=Path)  # for the workers
    resume: Path | None = setting(
        None, "continue the run in this output directory from its "
        "checkpoint, with its config.json (--steps may extend it)",
        type=Path)


def build_parser() -> argparse.ArgumentParser:
    return build_settings_parser(Config, "python -m bandits.run", DESCRIPTION,
                                 PRESETS)


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse the command line, fill unset settings from the preset, and validate."""
    return _complete(vars(build_parser().parse_args(argv)))


def config_from(settings: dict[str, Any]) -> Config:
    """The configuration of ``settings`` (names of :class:`Config`'s fields, values as
    a TOML file or code gives them), with the defaults and the preset filling the rest,
    validated as :func:`parse_config` validates a command line."""
    values = {f.name: f.default for f in dataclasses.fields(Config)}
    values.update(convert(Config, settings))
    return _complete(values)


def _complete(values: dict[str, Any]) -> Config:
    for k, v in PRESETS[values["preset"]].items():  # the preset fills what was not given
        if values[k] is None:
            values[k] = v
    cfg = Config(**values)
    validate(cfg)
    return cfg


def validate(cfg: Config) -> None:
    """Every setting against its field's ``range``, then the settings that depend on each
    other, then the memory the run would need (before anything is allocated)."""
    unknown = [a for a in cfg.agent if a not in AGENTS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}; choose from {', '.join(AGENTS)}")
    if len(set(cfg.agent)) != len(cfg.agent):
        raise UsageError(f"--agent lists an agent twice: {' '.join(cfg.agent)}")
    if cfg.env not in envs.ENV_IDS:  # a data set registered by another process
        raise UsageError(f"unknown environment {cfg.env!r}; choose from "
                         f"{', '.join(envs.ENV_IDS)}, or register it with "
                         "envs.register_dataset in this process first")
    check_ranges(cfg)
    for flag, value, default, what in (("normalize", cfg.normalize, "none", "scales"),
                                       ("order", cfg.order, "random", "orders")):
        if value != default and cfg.env not in envs.DATASET_OF:
            raise UsageError(f"--{flag} {value} {what} a classification bandit's "
                             f"contexts; --env {cfg.env} is not one (use mushroom-classes, "
                             "mnist or a registered data set)")
    if cfg.seed + cfg.seeds - 1 > 2**63 - 1:
        raise UsageError(f"--seed {cfg.seed} with --seeds {cfg.seeds} runs past the largest "
                         f"seed, 2^63 - 1; give --seed at most {2**63 - cfg.seeds}")
    if cfg.nll_beta and cfg.likelihood != "learned":
        raise UsageError(f"--nll-beta {cfg.nll_beta:g} weights the learned noise's "
                         "likelihood; add --likelihood learned (or leave --nll-beta at 0)")
    context_dim, n_actions = envs.SHAPES[cfg.env]
    for name in cfg.agent:  # each agent's own checks (its spec's)
        why = SPECS[name].check(agent_config(cfg), context_dim, n_actions)
        if why is not None:
            raise UsageError(why)
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but torch has no CUDA device here "
                         "(install a CUDA build of torch, or use --device cpu)")
    need, have = memory_estimate(cfg), machine_memory(cfg.device)
    if have and need > 0.8 * have:
        raise UsageError(f"these settings need about {need / 2**30:.1f} GiB of memory and this "
                         f"machine has {have / 2**30:.1f} GiB; lower --seeds, --steps, "
                         "--hidden, --heads or --buffer-size, or list fewer agents")


def memory_estimate(cfg: Config) -> float:
    """Bytes a run of ``cfg`` needs, roughly (an upper-side estimate): the per-step
    records, the models with their optimiser state and workspace, the buffers, the rows
    of metrics.csv."""
    runs = cfg.seeds * len(cfg.agent)
    d_in = sum(envs.SHAPES[cfg.env])  # every env --env accepts has its shape there
    sizes = [d_in, *cfg.hidden, 1]
    params = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))
    copies = max(SPECS[name].networks(agent_config(cfg)) for name in cfg.agent)
    models = 4.0 * params * runs * copies * 12  # mu, rho, grads, Adam moments, samples
    activations = 4.0 * runs * copies * cfg.batch_size * sum(cfg.hidden) * 6
    records = 8.0 * 4 * runs * cfg.steps
    buffers = 4.0 * runs * cfg.buffer_size * (d_in + 2)
    metrics = 8.0 * 12 * runs * min(cfg.steps, 2 * cfg.log_points)
    return models + activations + records + buffers + metrics


def agent_config(cfg: Config) -> AgentConfig:
    """The agents' settings given on the command line (each agent adds its own overrides)."""
    agent_cfg = AgentConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(AgentConfig)
                               if hasattr(cfg, f.name)})
    agent_cfg.hidden = tuple(cfg.hidden)
    return agent_cfg


def env_options(cfg: Config) -> dict[str, Any]:
    """The keyword arguments of ``cfg.env``: the wheel's delta, else the data directory
    (and for a classification bandit, the contexts' normalisation when one is asked for)."""
    if cfg.env == "wheel":
        return {"delta": cfg.wheel_delta}
    options: dict[str, Any] = {"data_dir": cfg.data_dir}
    if cfg.normalize != "none":  # both refused for the envs without a data set (validate)
        options["normalize"] = cfg.normalize
    if cfg.order != "random":
        options["order"] = cfg.order
    return options


def agent_seed(seed: int, runs: int, name: str) -> list[int]:
    """Entropy for an agent's generators: the run's seeds and the agent's name."""
    return [seed, runs, zlib.crc32(name.encode())]


def plain(data: dict) -> dict:
    """``data`` as JSON would give it back (paths as strings): safe to store in a checkpoint."""
    return json.loads(json.dumps(data, default=str))
