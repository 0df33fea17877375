"""The bandit simulator: agents act, learn from a replay buffer, and are scored by regret.

    python -m bandits.run --agent bbb [greedy eps1 eps5 uniform] --env mushroom|wheel
        --seeds N --steps T --preset quick|paper --device cpu|cuda --out DIR

Every agent's ``--seeds`` runs are one batched model through the runs dimension,
and agents that differ only in how they act (greedy, eps1, eps5) share one
population and one training step (see :func:`agents.make_agents`); every run of
every agent sees the same contexts and reward draws for its seed (common random
numbers). Outputs: ``metrics.csv``,
``summary.csv``, ``config.json``, ``regret.png`` (see the README).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shlex
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

import envs
from agents import AGENTS, AgentConfig, make_agents
from bandits.buffer import ReplayBuffer
from bandits.plot import plot_regret
from bandits.results import (
    OutputDirError,
    RegretLog,
    output_dir,
    package_versions,
    write_csv,
    write_json,
)

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
}


def _f(default, help: str, **kw):  # noqa: A002 - 'help' is the field's CLI help
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class Config:
    """Settings of one invocation; each field is a CLI flag (``--kebab-case``)."""

    agent: list[str] | None = _f(None, "agents to compare, from: " + ", ".join(AGENTS), nargs="+",
                                  type=str)
    env: str = _f("mushroom", "bandit environment", choices=sorted(envs.ENV_IDS))
    preset: str = _f("quick", "defaults for every unset setting", choices=sorted(PRESETS))
    seeds: int | None = _f(None, "number of seeds (runs) per agent", type=int)
    seed: int = _f(0, "first seed; the runs use seed, seed+1, ...")
    steps: int | None = _f(None, "interactions per run", type=int)
    device: str = _f("cpu", "torch device of the models", choices=["cpu", "cuda"])
    no_cuda_graph: bool = _f(False, "with --device cuda, run each training step eagerly instead "
                                    "of replaying it as a captured CUDA graph")
    compile: bool = _f(False, "fuse the BBB training step's per-weight work with torch.compile "
                              "(fewer kernels on a GPU; on a CPU it gains little and takes "
                              "about 30 s to compile)")
    out: Path | None = _f(None, "output directory (default: a new directory under results/runs/)",
                           type=Path)
    overwrite: bool = _f(False, "allow writing into an existing non-empty output directory")
    data_dir: Path | None = _f(None, "data directory (else $BANDITS_DATA_DIR, the cache, download)",
                                type=Path)
    hidden: tuple[int, ...] = _f(AgentConfig.hidden, "hidden layer sizes of the reward network",
                                 nargs="+")
    buffer_size: int | None = _f(None, "replay buffer capacity (last N interactions)", type=int)
    batch_size: int | None = _f(None, "minibatch size of each update", type=int)
    updates_per_step: int | None = _f(None, "minibatch updates after each interaction", type=int)
    train_every: int = _f(1, "train after every k-th interaction (k=1: every step)")
    lr: float = _f(AgentConfig.lr, "Adam learning rate of every neural agent")
    prior: str = _f(AgentConfig.prior, "BBB prior: scale mixture or Gaussian",
                    choices=["mixture", "gaussian"])
    prior_pi: float = _f(AgentConfig.prior_pi, "scale-mixture weight pi of the wide component")
    prior_sigma1: float = _f(AgentConfig.prior_sigma1, "scale-mixture wide sigma_1 (= e^0)")
    prior_sigma2: float = _f(AgentConfig.prior_sigma2, "scale-mixture narrow sigma_2 (= e^-6)")
    prior_sigma: float = _f(AgentConfig.prior_sigma,
                            "Gaussian prior sigma (with --prior gaussian)")
    noise_sigma: float = _f(AgentConfig.noise_sigma,
                            "BBB Gaussian likelihood noise sigma of the reward")
    init_sigma: float = _f(AgentConfig.init_sigma, "BBB initial posterior sigma of every weight")
    act_samples: int = _f(AgentConfig.act_samples,
                          "BBB weight samples averaged per action (1 = Thompson sampling)")
    log_points: int = _f(2000, "max metrics.csv rows per run (every step if steps <= this)")
    log_y: bool = _f(False, "logarithmic y axis in regret.png")
    threads: int = _f(1, "torch CPU threads; 1 is fastest for these small networks "
                         "(0: torch's default)")
    no_progress: bool = _f(False, "hide the progress bar")


class UsageError(Exception):
    """Bad input: reported as one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, no usage dump, exit status 2
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m bandits.run", description=__doc__.split("\n")[0])
    for f in dataclasses.fields(Config):
        meta = dict(f.metadata)
        help_ = meta.pop("help")
        preset_keys = [n for n in PRESETS if f.name in PRESETS[n]]
        if preset_keys:
            help_ += " [from the preset: " + ", ".join(
                f"{n}: {_show(PRESETS[n][f.name])}" for n in preset_keys) + "]"
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            p.add_argument(flag, action="store_true", help=help_ + " (default: off)")
            continue
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        meta.setdefault("type", type(default[0] if isinstance(default, tuple) else default))
        if default is not None:
            help_ += f" (default: {_show(default)})"
        p.add_argument(flag, default=default, help=help_, **meta)
    return p


def _show(v) -> str:
    return " ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse the command line, fill unset settings from the preset, and validate."""
    args = vars(build_parser().parse_args(argv))
    for k, v in PRESETS[args["preset"]].items():  # the preset fills what was not given
        if args[k] is None:
            args[k] = v
    cfg = Config(**args)
    unknown = [a for a in cfg.agent if a not in AGENTS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}; choose from {', '.join(AGENTS)}")
    if len(set(cfg.agent)) != len(cfg.agent):
        raise UsageError(f"--agent lists an agent twice: {' '.join(cfg.agent)}")
    for name in ("seeds", "steps", "buffer_size", "batch_size", "updates_per_step",
                 "train_every", "act_samples", "log_points"):
        v = getattr(cfg, name)
        if v <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be a positive integer, got {v}")
    if any(h <= 0 for h in cfg.hidden):
        raise UsageError(f"--hidden sizes must be positive integers, got {cfg.hidden}")
    for name in ("lr", "prior_sigma1", "prior_sigma2", "prior_sigma", "noise_sigma", "init_sigma"):
        v = getattr(cfg, name)
        if not (math.isfinite(v) and v > 0):
            raise UsageError(f"--{name.replace('_', '-')} must be a positive number, got {v}")
    if cfg.threads < 0:
        raise UsageError(f"--threads must be >= 0, got {cfg.threads}")
    if not 0.0 <= cfg.prior_pi <= 1.0:
        raise UsageError(f"--prior-pi must be in [0, 1], got {cfg.prior_pi}")
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but torch has no CUDA device here "
                         "(install a CUDA build of torch, or use --device cpu)")
    return cfg


def prepare_out_dir(cfg: Config) -> Path:
    """Create (or check) the output directory; never overwrite without --overwrite."""
    try:
        return output_dir(cfg.out, f"{cfg.env}-{cfg.preset}", cfg.overwrite)
    except OutputDirError as e:
        raise UsageError(str(e)) from None


def agent_seed(seed: int, runs: int, name: str) -> list[int]:
    """Entropy for an agent's generators: the run's seeds and the agent's name."""
    return [seed, runs, zlib.crc32(name.encode())]


def run(cfg: Config, out: Path) -> int:
    """Run every agent in lockstep for ``cfg.steps`` interactions and write the outputs."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    env_kwargs = {"data_dir": cfg.data_dir} if cfg.env == "mushroom" else {}
    seeds = [cfg.seed + r for r in range(cfg.seeds)]
    agent_cfg = AgentConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(AgentConfig)
                               if hasattr(cfg, f.name)})
    agent_cfg.hidden = tuple(cfg.hidden)
    try:
        env = envs.make_vec(cfg.env, 1, **env_kwargs)  # the spaces; the data is checked here
    except (FileNotFoundError, ValueError) as e:  # missing or malformed data
        raise UsageError(str(e)) from None
    d, n_actions = env.single_observation_space.shape[0], int(env.single_action_space.n)
    populations = make_agents(cfg.agent, d, n_actions, cfg.seeds,
                              lambda name: agent_seed(cfg.seed, cfg.seeds, name), agent_cfg,
                              cfg.device, cuda_graph=not cfg.no_cuda_graph, compile=cfg.compile)
    lanes = []  # one [population, vector env, buffer, context, loss] per population
    for pop in populations:
        env = envs.make_vec(cfg.env, pop.runs, **env_kwargs)
        # every member's run r sees seed + r: common random numbers across agents
        context, _ = env.reset(seed=[s for _ in pop.members for s in seeds])
        buffer = ReplayBuffer(cfg.buffer_size, pop.runs, d, device=cfg.device)
        lanes.append([pop, env, buffer, context, None])
    log = RegretLog(cfg.agent, seeds, cfg.steps)
    index = {name: k for k, name in enumerate(cfg.agent)}
    wall = dict.fromkeys(cfg.agent, 0.0)
    config = {**dataclasses.asdict(cfg), "seed_list": seeds,
              "agent_config": dataclasses.asdict(agent_cfg),
              "command": "python -m bandits.run " + shlex.join(sys.argv[1:]),
              "device_name": _device_name(cfg.device), "versions": package_versions()}
    start = time.perf_counter()
    interrupted = False
    progress = _progress(cfg)
    try:
        for t in range(cfg.steps):
            for lane in lanes:
                pop, env, buffer, context, _ = lane
                tic = time.perf_counter()
                actions = pop.act(context)  # on the device
                actions_np = actions.cpu().numpy()  # the one copy to the host per step
                next_context, rewards, _, _, info = env.step(actions_np)
                buffer.add(context, actions, rewards)
                if pop.learns and (t + 1) % cfg.train_every == 0:
                    lane[4] = pop.update(buffer, cfg.updates_per_step)  # not waited for
                elapsed = time.perf_counter() - tic
                for k, name in enumerate(pop.names):
                    runs = pop.member_runs(k)
                    wall[name] += elapsed / len(pop.members)
                    log.record(index[name], t, actions_np[runs], rewards[runs],
                               {key: info[key][runs] for key in ("regret", "expected_regret")})
                lane[3] = next_context
            log.done = t + 1
            progress.update(log)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
    elapsed = time.perf_counter() - start
    config.update(steps_completed=log.done, interrupted=interrupted,
                  wall_seconds=round(elapsed, 2))
    losses = {}  # each agent's mean training loss over its runs, at its last update
    for pop, *_, loss in lanes:
        for k, name in enumerate(pop.names):
            if loss is not None:
                losses[name] = float(loss[pop.member_runs(k)].mean())
    write_outputs(cfg, out, log, wall, losses, config)
    if interrupted:
        print(f"interrupted after {log.done} of {cfg.steps} steps; wrote the results to {out}",
              file=sys.stderr)
        return 130
    return 0


def write_outputs(cfg: Config, out: Path, log: RegretLog, wall: dict, losses: dict,
                  config: dict) -> None:
    """metrics.csv, summary.csv, config.json and regret.png; prints the summary table."""
    metrics = log.metrics_frame(cfg.log_points)
    summary = log.summary_frame(wall, losses)
    write_csv(metrics, out / "metrics.csv")
    write_csv(summary, out / "summary.csv")
    write_json(config, out / "config.json")
    if log.done > 0:
        title = f"{cfg.env}: {len(log.seeds)} seeds, {log.done} steps"
        plot_regret(metrics, out / "regret.png", log_y=cfg.log_y, title=title)
    cols = ["agent", "cumulative_regret_mean", "cumulative_regret_std",
            "cumulative_regret_min", "cumulative_regret_max", "wall_seconds"]
    print(f"\nCumulative regret after {log.done} steps ({len(log.seeds)} seeds, env {cfg.env}):")
    print(summary[cols].sort_values("cumulative_regret_mean").to_string(
        index=False, float_format=lambda v: f"{v:.1f}"))
    print(f"outputs in {out}")


def _device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    import platform

    return platform.processor() or platform.machine()


class _progress:
    """A tqdm bar over steps with the running mean cumulative regret of each agent."""

    def __init__(self, cfg: Config) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=cfg.steps, unit="step", disable=cfg.no_progress,
                        desc=f"{cfg.env} x{cfg.seeds}", dynamic_ncols=True)
        self.every = max(1, cfg.steps // 200)

    def update(self, log: RegretLog) -> None:
        self.bar.update(1)
        if log.done % self.every == 0:
            cum = log.regret[:, :, : log.done].sum(-1).mean(1)
            self.bar.set_postfix({a: f"{c:.0f}" for a, c in zip(log.agents, cum)}, refresh=False)

    def close(self) -> None:
        self.bar.close()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        cfg = parse_config(argv)
        out = prepare_out_dir(cfg)
        return run(cfg, out)
    except UsageError as e:
        print(f"bandits.run: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
