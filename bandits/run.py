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
import json
import math
import shlex
import signal
import sys
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import envs
from agents import AGENTS, Agent, AgentConfig, make_agents
from bandits import checkpoint
from bandits.buffer import ReplayBuffer
from bandits.checkpoint import CheckpointError
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
    wheel_delta: float = _f(0.95, "wheel: radius delta beyond which the high-reward arms pay "
                                  "(Riquelme et al.: 0.5 ... 0.99; harder as it grows)")
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
    lrt: bool = _f(False, "bbb: train with the local reparameterisation trick (acting keeps "
                          "one weight sample per run)")
    dropout: float = _f(AgentConfig.dropout, "dropout: the dropout rate of the hidden layers "
                                             "(training, and the one mask drawn to act)")
    heads: int = _f(AgentConfig.heads, "bootstrap: networks per run, each on its own online "
                                       "bootstrap (Poisson(1) weights) of the buffer")
    refresh_every: int = _f(AgentConfig.refresh_every, "neurallinear: training steps between "
                                                       "refits of its posterior to new features")
    lin_a0: float = _f(AgentConfig.lin_a0, "linfullpost, neurallinear: inverse-gamma prior "
                                           "shape a0 of the noise variance")
    lin_b0: float = _f(AgentConfig.lin_b0, "linfullpost, neurallinear: inverse-gamma prior "
                                           "scale b0")
    lin_lambda: float = _f(AgentConfig.lin_lambda, "linfullpost, neurallinear: prior precision "
                                                   "lambda (beta ~ N(0, sigma^2/lambda I))")
    log_points: int = _f(2000, "max metrics.csv rows per run (every step if steps <= this)")
    log_y: bool = _f(False, "logarithmic y axis in regret.png")
    threads: int = _f(1, "torch CPU threads; 1 is fastest for these small networks "
                         "(0: torch's default)")
    no_progress: bool = _f(False, "hide the progress bar")
    skip_diverged: bool = _f(False, "when a run's training loss becomes NaN or infinite, warn and "
                                    "let the other runs go on instead of stopping (runs are "
                                    "independent; the diverged one keeps acting on its NaN model)")
    checkpoint_every: float = _f(300.0, "seconds of work between checkpoints in the output "
                                        "directory (0: after every step); one is also written "
                                        "at the end and on Ctrl-C")
    resume: Path | None = _f(None, "continue the run in this output directory from its "
                                   "checkpoint, with its config.json (--steps may extend it)",
                             type=Path)


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
    _validate(cfg)
    return cfg


def _validate(cfg: Config) -> None:
    unknown = [a for a in cfg.agent if a not in AGENTS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}; choose from {', '.join(AGENTS)}")
    if len(set(cfg.agent)) != len(cfg.agent):
        raise UsageError(f"--agent lists an agent twice: {' '.join(cfg.agent)}")
    for name in ("seeds", "steps", "buffer_size", "batch_size", "updates_per_step",
                 "train_every", "act_samples", "log_points", "heads", "refresh_every"):
        v = getattr(cfg, name)
        if v <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be a positive integer, got {v}")
    if any(h <= 0 for h in cfg.hidden):
        raise UsageError(f"--hidden sizes must be positive integers, got {cfg.hidden}")
    for name in ("lr", "prior_sigma1", "prior_sigma2", "prior_sigma", "noise_sigma", "init_sigma",
                 "lin_a0", "lin_b0", "lin_lambda"):
        v = getattr(cfg, name)
        if not (math.isfinite(v) and v > 0):
            raise UsageError(f"--{name.replace('_', '-')} must be a positive number, got {v}")
    if cfg.threads < 0:
        raise UsageError(f"--threads must be >= 0, got {cfg.threads}")
    if not 0.0 < cfg.wheel_delta < 1.0:
        raise UsageError(f"--wheel-delta must be in (0, 1), got {cfg.wheel_delta}")
    if not 0.0 < cfg.dropout < 1.0:
        raise UsageError(f"--dropout must be in (0, 1), got {cfg.dropout}")
    if not 0.0 <= cfg.prior_pi <= 1.0:
        raise UsageError(f"--prior-pi must be in [0, 1], got {cfg.prior_pi}")
    if not (math.isfinite(cfg.checkpoint_every) and cfg.checkpoint_every >= 0):
        raise UsageError(f"--checkpoint-every must be >= 0 seconds, got {cfg.checkpoint_every}")
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but torch has no CUDA device here "
                         "(install a CUDA build of torch, or use --device cpu)")


KIND = "bandits.run"  # the checkpoint kind
# flags that may be given beside --resume: they do not change the results
RESUME_FLAGS = {"resume", "steps", "no_progress", "checkpoint_every", "data_dir", "log_y"}


def given_flags(argv: Sequence[str] | None) -> set[str]:
    """The settings named on the command line (not filled by a default)."""
    p = build_parser()
    for action in p._actions:
        action.default = argparse.SUPPRESS
    return set(vars(p.parse_args(argv)))


def resume_config(argv: Sequence[str] | None) -> tuple[Config, dict]:
    """The config of the run to resume (its config.json, with --steps and the other
    harmless flags applied) and what :func:`run` needs to continue it."""
    args = vars(build_parser().parse_args(argv))
    given = given_flags(argv)
    refused = sorted(given - RESUME_FLAGS)
    if refused:
        flag = "--" + refused[0].replace("_", "-")
        raise UsageError(f"{flag} cannot be given with --resume: it would change the results "
                         "(--resume takes every setting from the run's config.json; only "
                         "--steps, --checkpoint-every, --data-dir, --no-progress, --log-y may "
                         "be added)")
    out = Path(args["resume"])
    try:
        state = checkpoint.load(out / checkpoint.NAME, KIND)
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    saved = state["config"]  # config.json as it was when the checkpoint was written
    settings = {f.name: saved[f.name] for f in dataclasses.fields(Config) if f.name in saved}
    for k in given - {"resume"}:
        settings[k] = args[k]
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


def prepare_out_dir(cfg: Config) -> Path:
    """Create (or check) the output directory; never overwrite without --overwrite."""
    try:
        return output_dir(cfg.out, f"{cfg.env}-{cfg.preset}", cfg.overwrite)
    except OutputDirError as e:
        raise UsageError(str(e)) from None


def agent_seed(seed: int, runs: int, name: str) -> list[int]:
    """Entropy for an agent's generators: the run's seeds and the agent's name."""
    return [seed, runs, zlib.crc32(name.encode())]


@dataclass
class Lane:
    """One population with its environment copies, its buffer and where it stands."""

    pop: Agent
    env: Any  # a vector env of pop.runs copies
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


def build(cfg: Config) -> tuple[list[Lane], list[int]]:
    """The populations of ``cfg.agent``, each with its env copies, buffer and first contexts."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    env_kwargs = ({"data_dir": cfg.data_dir} if cfg.env == "mushroom"
                  else {"delta": cfg.wheel_delta})
    seeds = [cfg.seed + r for r in range(cfg.seeds)]
    agent_cfg = agent_config(cfg)
    try:
        env = envs.make_vec(cfg.env, 1, **env_kwargs)  # the spaces; the data is checked here
    except (FileNotFoundError, ValueError) as e:  # missing or malformed data
        raise UsageError(str(e)) from None
    d, n_actions = env.single_observation_space.shape[0], int(env.single_action_space.n)
    populations = make_agents(cfg.agent, d, n_actions, cfg.seeds,
                              lambda name: agent_seed(cfg.seed, cfg.seeds, name), agent_cfg,
                              cfg.device, cuda_graph=not cfg.no_cuda_graph, compile=cfg.compile)
    lanes = []
    for pop in populations:
        env = envs.make_vec(cfg.env, pop.runs, **env_kwargs)
        # every member's run r sees seed + r: common random numbers across agents
        context, _ = env.reset(seed=[s for _ in pop.members for s in seeds])
        buffer = ReplayBuffer(cfg.buffer_size, pop.runs, d, device=cfg.device)
        lanes.append(Lane(pop, env, buffer, context,
                          diverged_at=torch.full((pop.runs,), -1, device=cfg.device)))
    return lanes, seeds


def snapshot(lanes: list[Lane], log: RegretLog, wall: dict[str, float]) -> dict[str, Any]:
    """The state of a run at the end of step ``log.done``, for a checkpoint."""
    return {"steps_done": log.done, "log": log.state_dict(), "wall": dict(wall),
            "lanes": [{"agents": lane.pop.names, "agent": lane.pop.state_dict(),
                       "buffer": lane.buffer.state_dict(), "loss": lane.loss,
                       "context": torch.from_numpy(np.array(lane.context))} for lane in lanes]}


def restore(lanes: list[Lane], log: RegretLog, wall: dict[str, float], state: dict) -> None:
    """Put a freshly built run into the state of :func:`snapshot`.

    The environments are replayed to the checkpoint's step (their streams depend on the
    seeds and the step only, never on the actions) and checked against the saved contexts.
    """
    if [lane.pop.names for lane in lanes] != [s["agents"] for s in state["lanes"]]:
        raise CheckpointError("the checkpoint's agents do not match config.json")
    log.load_state_dict(state["log"])
    wall.update(state["wall"])
    for lane, s in zip(lanes, state["lanes"]):
        lane.pop.load_state_dict(s["agent"])
        lane.buffer.load_state_dict(s["buffer"])
        lane.loss = None if s["loss"] is None else s["loss"].to(lane.buffer.device)
        zeros = np.zeros(lane.pop.runs, dtype=np.int64)
        for _ in range(log.done):
            lane.context = lane.env.step(zeros)[0]
        if not np.array_equal(lane.context, s["context"].numpy()):
            raise CheckpointError("the environment does not reproduce the checkpoint's "
                                  "contexts (was the data set changed?)")


def diverged_runs(lanes: list[Lane], seeds: list[int]) -> list[dict[str, Any]]:
    """The runs whose training loss has been NaN or infinite: agent, seed and first step,
    earliest first. Reads one small tensor per population: call it now and then."""
    found = []
    for lane in lanes:
        at = lane.diverged_at.cpu()
        for k, name in enumerate(lane.pop.names):
            for i, step in enumerate(at[lane.pop.member_runs(k)].tolist()):
                if step >= 0:
                    found.append({"step": step, "agent": name, "seed": seeds[i]})
    return sorted(found, key=lambda d: (d["step"], d["agent"], d["seed"]))


def _describe(d: dict[str, Any]) -> str:
    return (f"agent {d['agent']}, seed {d['seed']} diverged at step {d['step']} "
            "(non-finite training loss)")


CHECK_EVERY = 50  # steps between divergence checks (each reads a few bytes from the device)


def run(cfg: Config, out: Path, resume: dict | None = None) -> int:
    """Run every agent in lockstep until ``cfg.steps`` interactions and write the outputs.

    ``resume``: a checkpoint's state to continue from (see :func:`resume_config`).
    """
    lanes, seeds = build(cfg)
    log = RegretLog(cfg.agent, seeds, cfg.steps)
    index = {name: k for k, name in enumerate(cfg.agent)}
    wall = dict.fromkeys(cfg.agent, 0.0)
    config = {**dataclasses.asdict(cfg), "seed_list": seeds,
              "agent_config": dataclasses.asdict(agent_config(cfg)),
              "command": "python -m bandits.run " + shlex.join(sys.argv[1:]),
              "device_name": _device_name(cfg.device), "versions": package_versions()}
    previous_wall = 0.0
    if resume is not None:
        restore(lanes, log, wall, resume["state"])
        config.update(command=resume["config"]["command"],
                      resumed=[*resume["config"].get("resumed", []),
                               {"command": config["command"], "at_step": log.done}])
        previous_wall = resume["config"].get("wall_seconds", 0.0)
    ckpt = out / checkpoint.NAME
    start = time.perf_counter()

    def progress_info() -> dict:
        return {"steps_completed": log.done,
                "wall_seconds": round(previous_wall + time.perf_counter() - start, 2)}

    write_json({**config, "steps_completed": log.done, "running": True}, out / "config.json")
    ckpt_step = log.done if resume is not None else None  # step of the last good checkpoint
    stop = _StopOnSigint()
    status, message = 0, None
    skipped: list[dict[str, Any]] = []  # diverged runs let go on by --skip-diverged
    next_ckpt = time.monotonic() + cfg.checkpoint_every
    progress = _progress(cfg, log.done)
    try:
        with stop:
            for t in range(log.done, cfg.steps):
                for lane in lanes:
                    tic = time.perf_counter()
                    actions = lane.pop.act(lane.context)  # on the device
                    actions_np = actions.cpu().numpy()  # the one copy to the host per step
                    next_context, rewards, _, _, info = lane.env.step(actions_np)
                    lane.buffer.add(lane.context, actions, rewards)
                    if lane.pop.learns and (t + 1) % cfg.train_every == 0:
                        lane.loss = lane.pop.update(lane.buffer, cfg.updates_per_step)
                        if lane.loss is not None:  # no wait for the device
                            bad = (lane.diverged_at < 0) & ~torch.isfinite(lane.loss)
                            lane.diverged_at.masked_fill_(bad, t + 1)
                    elapsed = time.perf_counter() - tic
                    for k, name in enumerate(lane.pop.names):
                        runs = lane.pop.member_runs(k)
                        wall[name] += elapsed / len(lane.pop.members)
                        log.record(index[name], t, actions_np[runs], rewards[runs],
                                   {key: info[key][runs] for key in ("regret", "expected_regret")})
                    lane.context = next_context
                log.done = t + 1
                progress.update(log)
                save = (log.done == cfg.steps or stop.requested
                        or time.monotonic() >= next_ckpt)
                if save or log.done % CHECK_EVERY == 0:
                    found = diverged_runs(lanes, seeds)  # never checkpoint a diverged state
                    if found and not cfg.skip_diverged:
                        raise Diverged(_describe(found[0]))
                    for d in found[len(skipped):]:  # --skip-diverged: say so once, go on
                        print(f"bandits.run: warning: {_describe(d)}; its other runs and "
                              "agents go on (--skip-diverged)", file=sys.stderr)
                    skipped = found
                if save:
                    checkpoint.save(ckpt, KIND, {**snapshot(lanes, log, wall),
                                                 "config": _plain({**config, **progress_info()})})
                    ckpt_step = log.done
                    next_ckpt = time.monotonic() + cfg.checkpoint_every
                if stop.requested:
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        status = 130
        kept = (f"resume from step {ckpt_step} with: python -m bandits.run --resume {out}"
                if ckpt_step is not None else "no checkpoint was written yet")
        message = f"interrupted after {log.done} of {cfg.steps} steps; {kept}"
    except Diverged as e:
        status = 3
        kept = (f"the last good checkpoint (step {ckpt_step}) is kept" if ckpt_step is not None
                else "no checkpoint was written")
        message = f"{e}; wrote the results up to step {log.done}; {kept}"
    except CheckpointError as e:
        status, message = 2, str(e)
    finally:
        progress.close()
    config.update(steps_completed=log.done, interrupted=status == 130,
                  diverged=message if status == 3 else None, diverged_runs=skipped,
                  wall_seconds=round(previous_wall + time.perf_counter() - start, 2),
                  wall_seconds_per_agent={a: round(w, 2) for a, w in wall.items()},
                  checkpoint_step=ckpt_step)
    losses = {}  # each agent's mean training loss over its runs, at its last update
    for lane in lanes:
        for k, name in enumerate(lane.pop.names):
            if lane.loss is not None:
                losses[name] = float(lane.loss[lane.pop.member_runs(k)].mean())
    try:
        write_outputs(cfg, out, log, wall, losses, config)
    except OSError as e:
        kept = f"the checkpoint of step {ckpt_step} is kept" if ckpt_step is not None else ""
        print(f"bandits.run: error: cannot write the results to {out}: {e.strerror or e}"
              + (f"; {kept}" if kept else ""), file=sys.stderr)
        return 2
    if message:
        print(f"bandits.run: {'error: ' if status in (2, 3) else ''}{message}", file=sys.stderr)
    return status


def write_outputs(cfg: Config, out: Path, log: RegretLog, wall: dict, losses: dict,
                  config: dict) -> None:
    """metrics.csv, summary.csv, config.json and regret.png; prints the summary table."""
    metrics = log.metrics_frame(cfg.log_points)
    summary = log.summary_frame(losses)
    write_csv(metrics, out / "metrics.csv")
    write_csv(summary, out / "summary.csv")
    write_json(config, out / "config.json")
    if log.done > 0:
        title = f"{cfg.env}: {len(log.seeds)} seeds, {log.done} steps"
        plot_regret(metrics, out / "regret.png", log_y=cfg.log_y, title=title)
    cols = ["agent", "cumulative_regret_mean", "cumulative_regret_std",
            "cumulative_regret_min", "cumulative_regret_max", "wall_seconds"]
    table = summary.assign(wall_seconds=[wall[a] for a in summary["agent"]])
    print(f"\nCumulative regret after {log.done} steps ({len(log.seeds)} seeds, env {cfg.env}):")
    print(table[cols].sort_values("cumulative_regret_mean").to_string(
        index=False, float_format=lambda v: f"{v:.1f}"))
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
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def _device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    import platform

    return platform.processor() or platform.machine()


class _progress:
    """A tqdm bar over steps with the running mean cumulative regret of each agent."""

    def __init__(self, cfg: Config, done: int = 0) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=cfg.steps, initial=done, unit="step", disable=cfg.no_progress,
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
        if "resume" in given_flags(argv):
            cfg, resume = resume_config(argv)
            return run(cfg, cfg.out, resume)
        cfg = parse_config(argv)
        return run(cfg, prepare_out_dir(cfg))
    except UsageError as e:
        print(f"bandits.run: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
