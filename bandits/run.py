"""The bandit simulator: agents act, learn from a replay buffer, and are scored by regret.

    python -m bandits.run --agent bbb [greedy eps1 ...] --env mushroom|wheel|mushroom-classes|mnist
        --seeds N --steps T --preset quick|long|paper --device cpu|cuda --out DIR

One flow per step and population: ``agent.act`` -> ``env.step`` -> ``buffer.add`` ->
``agent.update`` (:func:`interact`); around it, hooks that look at the models
(:class:`Probe`), show progress, watch for divergence (:class:`DivergenceWatch`),
write checkpoints (:class:`Checkpoints`) and stop cleanly on Ctrl-C. The agents are
those of :data:`agents.AGENTS`. Every agent's ``--seeds`` runs are one batched model
through the runs dimension, and agents that differ only in how they act (greedy,
eps1, eps5) share one population and one training step (see
:func:`agents.make_agents`); every run of every agent sees the same contexts and reward
draws for its seed (common random numbers). Populations may run in worker processes
(:mod:`bandits.parallel`). Outputs: ``metrics.csv``, ``summary.csv``, ``phases.csv``,
``memory.csv`` (:mod:`bandits.memory`), ``probes.csv``, ``config.json``, ``regret.png``
(see the README).
"""

from __future__ import annotations

if __name__ == "__main__":  # before the slow imports: a Ctrl-C while starting is one line
    from bandits.startup import interruptible

    interruptible("bandits.run")

import argparse
import dataclasses
import json
import math
import shlex
import signal
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

import envs
from agents import AGENTS, Agent, AgentConfig, make_agents
from bandits import checkpoint
from bandits.buffer import ReplayBuffer
from bandits.checkpoint import CheckpointError
from bandits.config import (
    COUNT,
    OPEN,
    POSITIVE,
    SIGMA,
    UsageError,
    check_ranges,
    convert,
    first_paragraph,
    refuse_with_resume,
    setting,
)
from bandits.config import build_parser as build_settings_parser
from bandits.config import given_flags as flags_named
from bandits.memory import memory_frame
from bandits.outputs import (
    OutputDirError,
    claim_dir,
    device_name,
    machine,
    machine_memory,
    output_dir,
    package_versions,
    release_dir,
    remove_if_unused,
    write_csv,
    write_json,
)
from bandits.plot import plot_regret
from bandits.processes import ctrl_c_on, parent_stopped, sigint_handler
from bandits.regret import RegretLog, ranking

# The paper's protocol (Blundell et al. 2015, section 5.3) and a CPU-sized one.
# Preset values fill every setting the command line leaves unset. The agents' own
# defaults (network, prior, likelihood, optimiser) come from AgentConfig.
PRESETS: dict[str, dict] = {
    "quick": {
        "agent": ["bbb", "greedy", "eps1", "eps5"], "seeds": 3, "steps": 2000,
        "buffer_size": 4096, "batch_size": 64, "updates_per_step": 16,
    },
    "paper": {
        "agent": ["bbb", "greedy", "eps1", "eps5"], "seeds": 5, "steps": 50_000,
        "buffer_size": 4096, "batch_size": 64, "updates_per_step": 64,
    },
    # The paper's horizon, agents, network and buffer on a 2-core CPU in under an hour:
    # 10 seeds, 8 updates of 64 per step (each item is still drawn about 500 times in
    # its 4096 steps in the buffer).
    "long": {
        "agent": ["bbb", "greedy", "eps1", "eps5"], "seeds": 10, "steps": 50_000,
        "buffer_size": 4096, "batch_size": 64, "updates_per_step": 8,
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
    act_samples: int = setting(
        AgentConfig.act_samples,
        "BBB: weight samples drawn and averaged to act (the paper's 2; 1 = plain "
        "Thompson sampling)",
        range=(1, 10_000))
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
        "matrix U = lambda I + sum g g^T", range=(OPEN(0), 1e6))
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
    return build_settings_parser(Config, "python -m bandits.run", first_paragraph(__doc__),
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
    _validate(cfg)
    return cfg


def _validate(cfg: Config) -> None:
    """Every setting against its field's ``range``, then the settings that depend on each
    other, then the memory the run would need (before anything is allocated)."""
    unknown = [a for a in cfg.agent if a not in AGENTS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}; choose from {', '.join(AGENTS)}")
    if len(set(cfg.agent)) != len(cfg.agent):
        raise UsageError(f"--agent lists an agent twice: {' '.join(cfg.agent)}")
    check_ranges(cfg)
    if cfg.seed + cfg.seeds - 1 > 2**63 - 1:
        raise UsageError(f"--seed {cfg.seed} with --seeds {cfg.seeds} runs past the largest "
                         f"seed, 2^63 - 1; give --seed at most {2**63 - cfg.seeds}")
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
    d_in = sum(envs.SHAPES.get(cfg.env, (128, 5)))
    sizes = [d_in, *cfg.hidden, 1]
    params = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))
    copies = cfg.heads if "bootstrap" in cfg.agent else 1
    models = 4.0 * params * runs * copies * 12  # mu, rho, grads, Adam moments, samples
    activations = 4.0 * runs * copies * cfg.batch_size * sum(cfg.hidden) * 6
    records = 8.0 * 4 * runs * cfg.steps
    buffers = 4.0 * runs * cfg.buffer_size * (d_in + 2)
    metrics = 8.0 * 12 * runs * min(cfg.steps, 2 * cfg.log_points)
    return models + activations + records + buffers + metrics


KIND = "bandits.run"  # the checkpoint kind
# flags that may be given beside --resume: they do not change the results
RESUME_FLAGS = ("resume", "steps", "checkpoint_every", "data_dir", "workers", "no_progress",
                "log_y", "progress_file")


def given_flags(argv: Sequence[str] | None) -> set[str]:
    """The settings named on the command line (not filled by a default)."""
    return flags_named(build_parser, argv)


def identity(config: dict[str, Any]) -> str:
    """A fingerprint of the settings that decide a run's results (all but the output
    directory and the flags allowed beside ``--resume``), from ``config.json``'s values.
    Two runs with the same identity and steps produce the same bytes."""
    names = sorted(f.name for f in dataclasses.fields(Config)
                   if f.name not in {*RESUME_FLAGS, "out", "overwrite"})
    return checkpoint.fingerprint(_plain({k: config.get(k) for k in names}))


def resume_flags(argv: Sequence[str] | None) -> tuple[dict[str, Any], set[str]]:
    """The parsed command line of a ``--resume`` and the flags given on it; one line
    naming the first flag that would change the results."""
    args = vars(build_parser().parse_args(argv))
    given = given_flags(argv)
    refuse_with_resume(given, RESUME_FLAGS)
    return args, given


def resume_config(out: Path, changes: dict[str, Any]) -> tuple[Config, dict]:
    """The config of the run to resume in ``out`` (its config.json, with ``changes``:
    --steps and the other flags of :data:`RESUME_FLAGS`) and what :func:`run` needs to
    continue it."""
    refuse_with_resume(changes, RESUME_FLAGS)
    try:  # the checkpoint must be this directory's own, and intact
        state = checkpoint.load_own(out, KIND, identity)
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    saved = state["config"]  # config.json as it was when the checkpoint was written
    settings = {f.name: saved[f.name] for f in dataclasses.fields(Config) if f.name in saved}
    settings.update(changes)
    settings.update(resume=out, out=out, overwrite=True)
    try:
        cfg = Config(**settings)
        cfg.hidden = tuple(cfg.hidden)
        cfg.data_dir = None if cfg.data_dir is None else Path(cfg.data_dir)
    except TypeError as e:
        raise UsageError(f"the checkpoint in {out} holds settings of another version: {e}"
                         ) from None
    _validate(cfg)
    done = int(state["steps_done"])
    if cfg.steps < done:
        raise UsageError(f"--steps {cfg.steps} is fewer than the {done} steps the checkpoint in "
                         f"{out} has done; give --steps {done} or more")
    return cfg, {"state": state, "config": saved}


# what a run (and bandits.plot, bandits.diagnose after it) writes into its directory: an
# --overwrite removes these first, so that no output of an earlier run survives
OUTPUTS = ("metrics.csv", "summary.csv", "phases.csv", "memory.csv", "probes.csv",
           "config.json", "regret.png", "regret.pdf", "expected_regret.png",
           "expected_regret.pdf", checkpoint.NAME, "diagnosis.csv", "diagnosis_seeds.csv",
           "diagnosis.png", "diagnosis.pdf", "memorisation.csv", "parts")


def prepare_out_dir(cfg: Config) -> Path:
    """Create (or check) the output directory; never overwrite without --overwrite."""
    try:
        return output_dir(cfg.out, f"{cfg.env}-{cfg.preset}", cfg.overwrite, OUTPUTS)
    except OutputDirError as e:
        raise UsageError(str(e)) from None


def agent_seed(seed: int, runs: int, name: str) -> list[int]:
    """Entropy for an agent's generators: the run's seeds and the agent's name."""
    return [seed, runs, zlib.crc32(name.encode())]


@dataclass
class Population:
    """One population of agents (their runs batched in one :class:`agents.Agent`) with
    its environment copies, its replay buffer and where it stands."""

    agent: Agent
    env: Any  # a vector env of agent.runs copies
    buffer: ReplayBuffer
    context: np.ndarray  # (runs, d): the contexts the population acts on next
    loss: torch.Tensor | None = None  # (runs,) on the device: the last update's loss
    diverged_at: torch.Tensor | None = None  # (runs,) first step with a non-finite loss, or -1


class Diverged(Exception):
    """A run's training loss became NaN or infinite."""


def agent_config(cfg: Config) -> AgentConfig:
    """The agents' settings given on the command line (each agent adds its own overrides)."""
    agent_cfg = AgentConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(AgentConfig)
                               if hasattr(cfg, f.name)})
    agent_cfg.hidden = tuple(cfg.hidden)
    return agent_cfg


def env_options(cfg: Config) -> dict[str, Any]:
    """The keyword arguments of ``cfg.env``: the wheel's delta, else the data directory."""
    return {"delta": cfg.wheel_delta} if cfg.env == "wheel" else {"data_dir": cfg.data_dir}


def build(cfg: Config) -> tuple[list[Population], list[int]]:
    """The populations of ``cfg.agent``, each with its env copies, buffer and first contexts."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    env_kwargs = env_options(cfg)
    seeds = [cfg.seed + r for r in range(cfg.seeds)]
    agent_cfg = agent_config(cfg)
    try:
        env = envs.make_vec(cfg.env, 1, **env_kwargs)  # the spaces; the data is checked here
    except (FileNotFoundError, ValueError) as e:  # missing or malformed data
        raise UsageError(str(e)) from None
    d, n_actions = env.single_observation_space.shape[0], int(env.single_action_space.n)
    agents = make_agents(cfg.agent, d, n_actions, cfg.seeds,
                         lambda name: agent_seed(cfg.seed, cfg.seeds, name), agent_cfg,
                         cfg.device, cuda_graph=not cfg.no_cuda_graph, compile=cfg.compile)
    built = []
    for agent in agents:
        env = envs.make_vec(cfg.env, agent.runs, **env_kwargs)
        # every member's run r sees seed + r: common random numbers across agents
        context, _ = env.reset(seed=[s for _ in agent.members for s in seeds])
        buffer = ReplayBuffer(cfg.buffer_size, agent.runs, d, device=cfg.device)
        built.append(Population(agent, env, buffer, context,
                                diverged_at=torch.full((agent.runs,), -1, device=cfg.device)))
    return built, seeds


def snapshot(populations: list[Population], log: RegretLog, wall: dict[str, float],
             probe: Probe) -> dict[str, Any]:
    """The state of a run at the end of step ``log.done``, for a checkpoint."""
    return {"steps_done": log.done, "log": log.state_dict(), "wall": dict(wall),
            "probes": list(probe.rows),
            "populations": [{"agents": pop.agent.names, "agent": pop.agent.state_dict(),
                             "buffer": pop.buffer.state_dict(), "loss": pop.loss,
                             "context": torch.from_numpy(np.array(pop.context))}
                            for pop in populations]}


def restore(populations: list[Population], log: RegretLog, wall: dict[str, float],
            probe: Probe, state: dict) -> None:
    """Put a freshly built run into the state of :func:`snapshot`.

    The environments are replayed to the checkpoint's step (their streams depend on the
    seeds and the step only, never on the actions) and checked against the saved contexts.
    """
    saved = state["populations"]
    if [pop.agent.names for pop in populations] != [s["agents"] for s in saved]:
        raise CheckpointError("the checkpoint's agents do not match config.json")
    log.load_state_dict(state["log"])
    wall.update(state["wall"])
    probe.rows = list(state["probes"])
    for pop, s in zip(populations, saved):
        pop.agent.load_state_dict(s["agent"])
        pop.buffer.load_state_dict(s["buffer"])
        pop.loss = None if s["loss"] is None else s["loss"].to(pop.buffer.device)
        zeros = np.zeros(pop.agent.runs, dtype=np.int64)
        for _ in range(log.done):
            pop.context = pop.env.step(zeros)[0]
        if not np.array_equal(pop.context, s["context"].numpy()):
            raise CheckpointError("the environment does not reproduce the checkpoint's "
                                  "contexts (was the data set changed?)")


def diverged_runs(populations: list[Population], seeds: list[int]) -> list[dict[str, Any]]:
    """The runs whose training loss has been NaN or infinite: agent, seed and first step,
    earliest first. Reads one small tensor per population: call it now and then."""
    found = []
    for pop in populations:
        at = pop.diverged_at.cpu()
        for k, name in enumerate(pop.agent.names):
            for i, step in enumerate(at[pop.agent.member_runs(k)].tolist()):
                if step >= 0:
                    found.append({"step": step, "agent": name, "seed": seeds[i]})
    return sorted(found, key=lambda d: (d["step"], d["agent"], d["seed"]))


def _describe(d: dict[str, Any]) -> str:
    return (f"agent {d['agent']}, seed {d['seed']} diverged at step {d['step']} "
            "(non-finite training loss)")


def probe_steps(steps: int) -> set[int]:
    """The steps after which the probes look: 1, 2, 3, 5, 7 times each power of ten (the
    same steps whatever the horizon, so an extended run looks where a longer one would)."""
    return {m * 10**k for k in range(len(str(steps))) for m in (1, 2, 3, 5, 7)
            if m * 10**k <= steps}


class Probe:
    """What the reward models believe as training goes on: at :func:`probe_steps`,
    each population that can (``predict_samples``) scores every action of a fixed set of
    contexts (drawn once from the environment with a seed of their own) under
    ``SAMPLES`` weight samples, from a generator of the probe's own (so looking changes
    nothing in the run). Per agent, seed, step and best action: the mean prediction of
    each action, the spread (std over samples, averaged over the contexts), the true
    expected reward, and how often a sample ranks the action first (the probability that
    Thompson sampling takes it). Written to ``probes.csv``."""

    CONTEXTS, SAMPLES, SEED = 64, 16, 2**31 - 1

    def __init__(self, cfg: Config) -> None:
        env = envs.make_vec(cfg.env, self.CONTEXTS, **env_options(cfg))
        self.contexts, _ = env.reset(seed=self.SEED)
        info = env.step(np.zeros(self.CONTEXTS, dtype=np.int64))[4]
        self.best = np.asarray(info["optimal_action"])
        self.expected = np.asarray(info["expected_rewards"])
        self.steps = probe_steps(cfg.steps)
        self.device = cfg.device
        self.agents = list(cfg.agent)
        self.rows: list[dict[str, Any]] = []

    @torch.no_grad()
    def look(self, populations: list[Population], step: int, seeds: list[int]) -> None:
        for population in populations:
            agent = population.agent
            if not hasattr(agent, "predict_samples"):
                continue
            g = torch.Generator(device=self.device)
            g.manual_seed(zlib.crc32(f"{step}:{','.join(agent.names)}".encode()))
            pred = agent.predict_samples(torch.as_tensor(self.contexts, device=self.device),
                                         self.SAMPLES, g).cpu().numpy()  # (runs, S, N, A)
            first = pred.argmax(-1)  # (runs, S, N)
            for k, name in enumerate(agent.names):
                for i, r in enumerate(range(*agent.member_runs(k).indices(agent.runs))):
                    for b in np.unique(self.best):
                        sel = self.best == b
                        for a in range(pred.shape[-1]):
                            p = pred[r][:, sel, a]  # (S, contexts with best action b)
                            self.rows.append({
                                "agent": name, "seed": seeds[i], "step": step,
                                "best_action": int(b), "action": a,
                                "expected_reward": float(self.expected[sel, a].mean()),
                                "predicted_mean": float(p.mean()),
                                "predicted_std": float(p.std(0).mean()),
                                "chosen_share": float((first[r][:, sel] == a).mean())})

    def frame(self) -> pd.DataFrame:
        """The rows agent by agent (in the run's order), then seed, step: the same bytes
        whether the populations ran in one process or in several."""
        f = pd.DataFrame(self.rows)
        if f.empty:
            return f
        order = {a: i for i, a in enumerate(self.agents)}
        key = f["agent"].map(order)
        return f.assign(_k=key).sort_values(["_k", "seed", "step"], kind="stable").drop(
            columns="_k").reset_index(drop=True)


CHECK_EVERY = 50  # steps between divergence checks (each reads a few bytes from the device)


def interact(pop: Population, t: int, cfg: Config, log: RegretLog, wall: dict[str, float],
             index: dict[str, int]) -> None:
    """Step ``t`` of one population: act on its contexts, step its environments, store
    the interactions, train, and record the regret of every member."""
    tic = time.perf_counter()
    actions = pop.agent.act(pop.context)  # on the device
    actions_np = actions.cpu().numpy()  # the one copy to the host per step
    next_context, rewards, _, _, info = pop.env.step(actions_np)
    pop.buffer.add(pop.context, actions, rewards)
    if pop.agent.learns and (t + 1) % cfg.train_every == 0:
        pop.loss = pop.agent.update(pop.buffer, cfg.updates_per_step)
        if pop.loss is not None:  # no wait for the device
            bad = (pop.diverged_at < 0) & ~torch.isfinite(pop.loss)
            pop.diverged_at.masked_fill_(bad, t + 1)
    elapsed = time.perf_counter() - tic
    for k, name in enumerate(pop.agent.names):
        runs = pop.agent.member_runs(k)
        wall[name] += elapsed / len(pop.agent.members)
        record = {key: info[key][runs] for key in
                  ("regret", "expected_regret", "optimal_action")}
        if "mushroom" in info:
            record["item"] = info["mushroom"][runs]
        log.record(index[name], t, actions_np[runs], rewards[runs], record)
    pop.context = next_context


class Checkpoints:
    """Writes the run's checkpoint when one is due: every ``cfg.checkpoint_every``
    seconds of work, at the last step and when the run is asked to stop; remembers the
    step of the last one written (``None`` before the first)."""

    def __init__(self, cfg: Config, out: Path, record: Callable[[], dict], identity: str,
                 step: int | None) -> None:
        self.cfg, self.path = cfg, out / checkpoint.NAME
        self.record, self.identity = record, identity  # config.json as of now; the run's identity
        self.step = step
        self.next = time.monotonic() + cfg.checkpoint_every

    def due(self, done: int, stopping: bool) -> bool:
        return done == self.cfg.steps or stopping or time.monotonic() >= self.next

    def save(self, state: dict[str, Any], done: int) -> None:
        checkpoint.save(self.path, KIND, {**state, "config": _plain(self.record())},
                        identity=self.identity)
        self.step = done
        self.next = time.monotonic() + self.cfg.checkpoint_every


class DivergenceWatch:
    """Stops the run (:class:`Diverged`) when a run's training loss has become NaN or
    infinite; under ``--skip-diverged`` says so once per run and lets the others go on."""

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.found: list[dict[str, Any]] = []  # the diverged runs let go on

    def check(self, populations: list[Population], seeds: list[int]) -> None:
        found = diverged_runs(populations, seeds)
        if found and not self.skip:
            raise Diverged(_describe(found[0]))
        for d in found[len(self.found):]:
            print(f"bandits.run: warning: {_describe(d)}; its other runs and "
                  "agents go on (--skip-diverged)", file=sys.stderr)
        self.found = found


@dataclass
class Outcome:
    """How a run ended: its exit status (0 finished, 1 a worker died, 2 a bad checkpoint
    or output, 3 diverged, 130 interrupted) and, unless it finished cleanly, one line
    for the user (starting with ``error:`` for an error)."""

    status: int
    message: str | None = None
    out: Path | None = None  # where its outputs are (None if it wrote none)


def run(cfg: Config, out: Path, resume: dict | None = None, command: str | None = None
        ) -> Outcome:
    """Run every agent in lockstep until ``cfg.steps`` interactions and write the outputs.

    ``resume``: a checkpoint's state to continue from (see :func:`resume_config`);
    ``command``: the command line recorded in ``config.json`` (default: this process's).
    """
    populations, seeds = build(cfg)
    log = RegretLog(cfg.agent, seeds, cfg.steps)
    probe = Probe(cfg)
    index = {name: k for k, name in enumerate(cfg.agent)}
    wall = dict.fromkeys(cfg.agent, 0.0)
    config = {**dataclasses.asdict(cfg), "seed_list": seeds,
              "agent_config": dataclasses.asdict(agent_config(cfg)),
              "command": command or "python -m bandits.run " + shlex.join(sys.argv[1:]),
              "device_name": device_name(cfg.device), "machine": machine(cfg.device),
              "versions": package_versions(),
              # which run this directory's checkpoints belong to (a copy of another
              # run's checkpoint, even one with the same settings, is refused)
              "run_id": uuid.uuid4().hex}
    previous_wall = 0.0
    if resume is not None:
        config["run_id"] = resume["config"].get("run_id", config["run_id"])
        _restore_or_refuse(populations, log, wall, probe, resume["state"], out)
        config.update(command=resume["config"]["command"],
                      resumed=[*resume["config"].get("resumed", []),
                               {"command": config["command"], "at_step": log.done}])
        previous_wall = resume["config"].get("wall_seconds", 0.0)
    start = time.perf_counter()

    def progress_info() -> dict:
        return {"steps_completed": log.done,
                "wall_seconds": round(previous_wall + time.perf_counter() - start, 2)}

    config["identity"] = identity(config)
    try:
        write_json({**config, "steps_completed": log.done, "running": True},
                   out / "config.json")
    except OSError as e:
        raise UsageError(f"cannot write to {out}: {e.strerror or e}") from None
    checkpoints = Checkpoints(cfg, out, lambda: {**config, **progress_info()},
                              config["identity"], log.done if resume is not None else None)
    watch = DivergenceWatch(cfg.skip_diverged)
    stop, progress = _StopOnSigint(), _progress(cfg, log.done)
    status, message = 0, None
    try:
        with stop:
            for t in range(log.done, cfg.steps):
                for pop in populations:
                    interact(pop, t, cfg, log, wall, index)
                log.done = t + 1
                if log.done in probe.steps:
                    probe.look(populations, log.done, seeds)
                progress.update(log)
                save = checkpoints.due(log.done, stop.requested)
                if save or log.done % CHECK_EVERY == 0:
                    watch.check(populations, seeds)  # never checkpoint a diverged state
                if save:
                    checkpoints.save(snapshot(populations, log, wall, probe), log.done)
                if stop.requested:
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        status = 130
        kept = (f"resume from step {checkpoints.step} with: python -m bandits.run --resume "
                f"{out}" if checkpoints.step is not None else "no checkpoint was written yet")
        message = f"interrupted after {log.done} of {cfg.steps} steps; {kept}"
    except Diverged as e:
        status = 3
        kept = (f"the last good checkpoint (step {checkpoints.step}) is kept"
                if checkpoints.step is not None else "no checkpoint was written")
        message = f"{e}; wrote the results up to step {log.done}; {kept}"
    except CheckpointError as e:
        status, message = 2, str(e)
    finally:
        progress.close()
    config.update(steps_completed=log.done, interrupted=status == 130,
                  diverged=message if status == 3 else None, diverged_runs=watch.found,
                  wall_seconds=round(previous_wall + time.perf_counter() - start, 2),
                  wall_seconds_per_agent={a: round(w, 2) for a, w in wall.items()},
                  checkpoint_step=checkpoints.step)
    try:
        # a second Ctrl-C must not leave half the outputs
        with sigint_handler(signal.SIG_IGN):
            write_outputs(cfg, out, log, wall, last_losses(populations), config, probe)
    except OSError as e:
        kept = (f"the checkpoint of step {checkpoints.step} is kept"
                if checkpoints.step is not None else "")
        return Outcome(2, f"error: cannot write the results to {out}: {e.strerror or e}"
                       + (f"; {kept}" if kept else ""))
    if message and status in (2, 3):
        message = "error: " + message
    return Outcome(status, message, out)


def _restore_or_refuse(populations: list[Population], log: RegretLog, wall: dict[str, float],
                       probe: Probe, state: dict, out: Path) -> None:
    """:func:`restore`, with a checkpoint that cannot be restored as one line."""
    try:
        restore(populations, log, wall, probe, state)
    except CheckpointError as e:
        raise UsageError(f"checkpoint {out / checkpoint.NAME}: {e}") from None
    except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as e:
        raise UsageError(f"checkpoint {out / checkpoint.NAME} does not hold the state this "
                         f"run needs ({type(e).__name__}: {e}); it cannot be resumed"
                         ) from None


def last_losses(populations: list[Population]) -> dict[str, float]:
    """Each agent's mean training loss over its runs, at its last update."""
    losses = {}
    for pop in populations:
        for k, name in enumerate(pop.agent.names):
            if pop.loss is not None:
                losses[name] = float(pop.loss[pop.agent.member_runs(k)].mean())
    return losses


def write_outputs(cfg: Config, out: Path, log: RegretLog, wall: dict, losses: dict,
                  config: dict, probe: Probe | None = None) -> None:
    """metrics.csv, summary.csv, phases.csv, memory.csv, probes.csv, config.json and
    regret.png."""
    metrics = log.metrics_frame(cfg.log_points)
    summary = log.summary_frame(losses)
    write_csv(metrics, out / "metrics.csv")
    write_csv(summary, out / "summary.csv")
    write_csv(log.phases_frame(envs.SHAPES[cfg.env][1] if cfg.env in envs.SHAPES
                               else int(log.action.max()) + 1),
              out / "phases.csv")
    n = log.done
    write_csv(memory_frame(log.agents, log.seeds, log.action[:, :, :n], log.reward[:, :, :n],
                           log.item[:, :, :n], log.optimal_action[:, :, :n],
                           cfg.buffer_size), out / "memory.csv")
    if probe is not None:
        write_csv(probe.frame(), out / "probes.csv")
    write_json(config, out / "config.json")
    if log.done > 0:
        title = f"{cfg.env}: {len(log.seeds)} seeds, {log.done} steps"
        plot_regret(metrics, out / "regret.png", log_y=cfg.log_y, title=title)


def header(cfg: Config, out: Path, workers: int) -> str:
    """The line a run starts with: what runs, with the numbers that decide its cost."""
    updates = (f"{cfg.updates_per_step} updates of {cfg.batch_size} per step"
               + (f" (every {cfg.train_every} steps)" if cfg.train_every > 1 else ""))
    return (f"bandits.run: preset {cfg.preset}: {' '.join(cfg.agent)} on {cfg.env}, "
            f"{cfg.steps:,} steps x {cfg.seeds} seed{'s' if cfg.seeds > 1 else ''}, {updates}, "
            f"buffer {cfg.buffer_size:,}, {workers} worker{'s' if workers > 1 else ''}, "
            f"device {cfg.device} -> {out}")


def print_summary(out: Path) -> None:
    """The cumulative regret of each agent at one common step, from the run's
    ``summary.csv``, ``metrics.csv`` and ``config.json``: lowest mean first, with its
    standard error over the seeds and whether the seeds separate it from the next agent
    (:func:`bandits.regret.ranking`); agents stopped at different steps are listed each
    with its step, not ranked."""
    try:
        summary = pd.read_csv(out / "summary.csv")
        record = json.loads((out / "config.json").read_text())
    except (OSError, ValueError):
        return
    if summary.empty:
        return
    wall = record.get("wall_seconds_per_agent", {})
    summary = summary.assign(wall_seconds=[wall.get(a, float("nan")) for a in summary["agent"]])
    steps = dict(zip(summary["agent"], summary["steps"]))
    if len(set(steps.values())) > 1:
        print(f"\nThe agents stopped at different steps "
              f"({', '.join(f'{a} {s}' for a, s in steps.items())}); cumulative regret of "
              f"each at its own step, not comparable until resumed to one step:")
        cols = ["agent", "steps", "cumulative_regret_mean", "cumulative_regret_std",
                "wall_seconds"]
        print(summary[cols].to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        print(f"outputs in {out}")
        return
    try:
        metrics = pd.read_csv(out / "metrics.csv")
    except (OSError, ValueError):
        return
    table = ranking(metrics).merge(summary[["agent", "wall_seconds"]], on="agent")
    print(f"\nCumulative regret after {summary['steps'].iloc[0]} steps "
          f"({summary['seeds'].iloc[0]} seeds, env {record['env']}), lowest mean first; "
          "s.e.: standard error over the seeds; next: the paired difference to the next "
          "agent over the same seeds:")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print(f"outputs in {out}")


def _plain(data: dict) -> dict:
    """``data`` as JSON would give it back (paths as strings): safe to store in a checkpoint."""
    return json.loads(json.dumps(data, default=str))


class _StopOnSigint:
    """While active, Ctrl-C (SIGINT) asks the loop to stop at the end of the current step,
    so that the checkpoint it then writes is a consistent one; a second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.requested = False
        self._old = None

    def _handler(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> _StopOnSigint:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        # in a sweep's worker: a Ctrl-C the parent passed on before this handler was on
        self.requested = parent_stopped()
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


class _progress:
    """A tqdm bar over steps with the running mean cumulative regret of each agent."""

    def __init__(self, cfg: Config, done: int = 0) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=cfg.steps, initial=done, unit="step", disable=cfg.no_progress,
                        desc=f"{cfg.env} x{cfg.seeds}", dynamic_ncols=True)
        self.every = max(1, cfg.steps // 200)
        self.file, self.next_write = cfg.progress_file, 0.0  # a worker tells its coordinator

    def update(self, log: RegretLog) -> None:
        self.bar.update(1)
        if self.file is not None and (time.monotonic() >= self.next_write
                                      or log.done == len(log.action[0, 0])):
            try:
                Path(self.file).write_text(str(log.done))
            except OSError:
                pass
            self.next_write = time.monotonic() + 0.5
        if log.done % self.every == 0:
            cum = log.regret[:, :, : log.done].sum(-1).mean(1)
            self.bar.set_postfix({a: f"{c:.0f}" for a, c in zip(log.agents, cum)}, refresh=False)

    def close(self) -> None:
        self.bar.close()


def start(cfg: Config, command: str) -> Outcome:
    """A new run of ``cfg`` into its output directory, in :func:`bandits.parallel.worker_count`
    processes; ``command`` is recorded in ``config.json``. Bad input raises
    :class:`UsageError` and leaves no empty directory behind."""
    from bandits import parallel

    out = prepare_out_dir(cfg)
    try:
        workers = parallel.worker_count(cfg)
        print(header(cfg, out, workers), flush=True)
        if workers > 1:
            return parallel.run(cfg, out, command)
        return run(cfg, out, command=command)
    except (UsageError, KeyboardInterrupt):
        remove_if_unused(out)  # stopped before writing anything: leave no empty directory
        raise
    finally:
        release_dir(out)


def resume(out: Path, changes: dict[str, Any], command: str) -> Outcome:
    """Continue the run in ``out`` from its checkpoint, with ``changes`` (settings of
    :data:`RESUME_FLAGS` only: ``{"steps": 50000}`` extends it)."""
    from bandits import parallel

    try:
        if parallel.is_parallel_run(out):
            return parallel.resume(out, changes, command)
        cfg, state = resume_config(out, changes)
        try:
            claim_dir(out)
        except OutputDirError as e:
            raise UsageError(str(e)) from None
        return run(cfg, out, state, command)
    finally:
        release_dir(out)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = "python -m bandits.run " + shlex.join(argv)
    try:
        with ctrl_c_on():  # from here on, a Ctrl-C outside the loop's own handling
            return _main(argv, command)
    except KeyboardInterrupt:
        print("bandits.run: interrupted while starting; no step was run (a checkpoint "
              "already in the directory stays good)", file=sys.stderr)
        return 130


def _main(argv: list[str], command: str) -> int:
    try:
        if "resume" in given_flags(argv):
            args, given = resume_flags(argv)
            outcome = resume(Path(args["resume"]), {k: args[k] for k in given - {"resume"}},
                             command)
        else:
            outcome = start(parse_config(argv), command)
    except UsageError as e:
        print(f"bandits.run: error: {e}", file=sys.stderr)
        return 2
    if outcome.out is not None:
        print_summary(outcome.out)
    if outcome.message:
        print(f"bandits.run: {outcome.message}", file=sys.stderr)
    return outcome.status


if __name__ == "__main__":
    sys.exit(main())
