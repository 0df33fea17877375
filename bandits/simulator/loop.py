"""The loop of a bandit run: every population acts, steps its environments, stores the
interactions and trains (:func:`interact`), step after step, and the hooks look on
(:mod:`bandits.simulator.hooks`). Settings: :mod:`bandits.simulator.settings`; the command line:
:mod:`bandits.simulator.run`."""

from __future__ import annotations

import dataclasses
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

import envs
from agents import SPECS, make_agents
from bandits.core import checkpoint, denormals
from bandits.core.buffer import ReplayBuffer
from bandits.core.checkpoint import CheckpointError
from bandits.core.config import UsageError
from bandits.core.files import (
    device_name,
    machine,
    package_versions,
    utc_now,
    write_csv,
    write_json,
)
from bandits.core.import_path import hook_factory
from bandits.core.processes import sigint_handler
from bandits.core.runner import DIVERGED_STATUS
from bandits.records.regret import RegretLog
from bandits.simulator.hooks import (
    Checkpoints,
    Diverged,
    DivergenceWatch,
    Hook,
    MemoryRecord,
    Probe,
    Progress,
    StopOnSigint,
)
from bandits.simulator.population import Population
from bandits.simulator.resume import RUN, identity
from bandits.simulator.settings import (
    Config,
    agent_config,
    agent_seed,
    env_options,
    recorded_columns,
)


def interact(pop: Population, t: int, cfg: Config, log: RegretLog, wall: dict[str, float],
             index: dict[str, int]) -> None:
    """Step ``t`` of one population: act on its contexts, step its environments, store
    the interactions, train, and record the agent's regret."""
    tic = time.perf_counter()
    actions = pop.agent.act(pop.context)  # on the device
    actions_np = actions.cpu().numpy()  # the one copy to the host per step
    next_context, rewards, _, _, info = pop.env.step(actions_np)
    pop.buffer.add(pop.context, actions, rewards,
                   info[pop.item_key] if pop.buffer.compact else None)
    if pop.agent.learns and ((t + 1) % cfg.training.train_every == 0
                             or t + 1 <= cfg.training.train_always_until):
        pop.loss = pop.agent.update(pop.buffer, cfg.training.updates_per_step)
        if pop.loss is not None:  # no wait for the device
            bad = (pop.diverged_at < 0) & ~torch.isfinite(pop.loss)
            pop.diverged_at.masked_fill_(bad, t + 1)
    elapsed = time.perf_counter() - tic
    values = ({c: v.cpu().numpy() for c, v in pop.agent.step_values().items()}
              if pop.agent_columns else {})
    name = pop.agent.name
    wall[name] += elapsed
    record = {key: info[key] for key in ("regret", "expected_regret", "optimal_action")}
    if pop.item_key is not None:  # the data item shown (memory.csv), where the env names it
        record["item"] = info[pop.item_key]
    record.update({c: info[c] for c in pop.env_columns})  # the specs' columns
    record.update({c: values[c] for c in pop.agent_columns})
    log.record(index[name], t, actions_np, rewards, record)
    pop.context = next_context


class HookFailed(Exception):
    """A ``--hook``'s ``after_step`` or ``after_run`` raised: the run stops with one line."""


@dataclass
class GivenHook:
    """A ``--hook``'s object, its errors turned into one line (:class:`HookFailed`)."""

    path: str
    hook: Any

    @classmethod
    def made(cls, path: str, cfg: Config, out: Path) -> GivenHook:
        """The object ``path``'s factory makes for this run; one line (:class:`UsageError`)
        where making it raises or it has no ``after_step``."""
        try:
            hook = hook_factory(path)(cfg, out)
        except Exception as e:  # noqa: BLE001 - the user's code: any error is one line
            raise UsageError(f"--hook {path}: making it with (cfg, out) raised "
                             f"{type(e).__name__}: {e}") from None
        if not callable(getattr(hook, "after_step", None)):
            raise UsageError(f"--hook {path}: what it made has no after_step(populations, "
                             "log, stopping) method; give it one")
        return cls(path, hook)

    def after_step(self, populations, log, stopping) -> None:
        try:
            self.hook.after_step(populations, log, stopping)
        except Exception as e:  # noqa: BLE001 - the user's code: any error is one line
            raise HookFailed(f"--hook {self.path}: after_step raised at step {log.done}: "
                             f"{type(e).__name__}: {e}") from None

    def __getattr__(self, name: str) -> Any:  # after_run, where the hook has one
        if name != "after_run" or not hasattr(self.hook, "after_run"):
            raise AttributeError(name)

        def after_run(log, out) -> None:
            try:
                self.hook.after_run(log, out)
            except Exception as e:  # noqa: BLE001 - the user's code: any error is one line
                raise HookFailed(f"--hook {self.path}: after_run raised: "
                                 f"{type(e).__name__}: {e}") from None
        return after_run


@dataclass
class Outcome:
    """How a run ended: its exit status (0 finished, 1 a worker died, 2 a bad checkpoint
    or output, 3 diverged, 130 interrupted) and, unless it finished cleanly, one line
    for the user (starting with ``error:`` for an error)."""

    status: int
    message: str | None = None
    out: Path | None = None  # where its outputs are (None if it wrote none)


def simulate(cfg: Config, out: Path, resume: dict | None = None, command: str | None = None,
             hooks: Sequence[Hook] = ()) -> Outcome:
    """Run every agent in lockstep until ``cfg.run.steps`` interactions and write the outputs.

    ``resume``: a checkpoint's state to continue from (see :func:`resume_config`);
    ``command``: the command line recorded in ``config.json`` (default: this process's);
    ``hooks``: more :class:`bandits.simulator.hooks.Hook` s to call after every step, after the
    run's own (the probes, the progress bar, the checkpoints). Denormal floats are
    flushed to zero meanwhile (:mod:`bandits.core.denormals`).
    """
    with denormals.flushed():
        return _simulate(cfg, out, resume, command, hooks)


def _simulate(cfg: Config, out: Path, resume: dict | None, command: str | None,
              hooks: Sequence[Hook]) -> Outcome:
    populations, seeds = build(cfg)
    log = RegretLog(cfg.run.agent, seeds, cfg.run.steps, recorded_columns(cfg))
    probe = Probe(cfg)
    index = {name: k for k, name in enumerate(cfg.run.agent)}
    wall = dict.fromkeys(cfg.run.agent, 0.0)
    # the run's record (config.json): the settings, and what the run was and did
    record = {**cfg.flat(), "seed_list": seeds,
              "agent_config": dataclasses.asdict(agent_config(cfg)),
              "command": command or "python -m bandits.run " + shlex.join(sys.argv[1:]),
              "device_name": device_name(cfg.run.device), "machine": machine(cfg.run.device),
              "versions": package_versions(), "started_utc": utc_now(),
              # which run this directory's checkpoints belong to (a copy of another
              # run's checkpoint, even one with the same settings, is refused)
              "run_id": uuid.uuid4().hex}
    previous_wall = 0.0
    if resume is not None:
        record["run_id"] = resume["config"].get("run_id", record["run_id"])
        _restore_or_refuse(populations, log, wall, probe, resume["state"], out)
        record.update(command=resume["config"]["command"],
                      started_utc=resume["config"].get("started_utc"),
                      resumed=[*resume["config"].get("resumed", []),
                               {"command": record["command"], "at_step": log.done,
                                "at_utc": utc_now()}])
        previous_wall = resume["config"].get("wall_seconds", 0.0)
    start = time.perf_counter()

    def progress_info() -> dict:
        return {"steps_completed": log.done,
                "wall_seconds": round(previous_wall + time.perf_counter() - start, 2)}

    record["identity"] = identity(record)
    given = [GivenHook.made(path, cfg, out) for path in cfg.output.hook or ()]  # before any file
    try:
        write_json({**record, "steps_completed": log.done, "running": True},
                   out / "config.json")
        watch = DivergenceWatch(cfg.output.skip_diverged)
        checkpoints = Checkpoints(cfg, out, lambda: {**record, **progress_info()},
                                  record["identity"], log.done if resume is not None else None,
                                  lambda: snapshot(populations, log, wall, probe), watch)
        progress = Progress(cfg, log.done)
    except OSError as e:
        raise UsageError(f"cannot write to {out}: {e.strerror or e}") from None
    except KeyboardInterrupt:  # before the loop could keep a checkpoint: a new run leaves
        if resume is None:  # its folder as it found it, so the same command runs again
            (out / "config.json").unlink(missing_ok=True)
        raise
    # each looks after every step, in this order: the run's own, then --hook's, then the
    # caller's
    everyone = [probe, progress, checkpoints, *given, *hooks]
    status, message = 0, None
    try:
        with StopOnSigint() as stop:
            for t in range(log.done, cfg.run.steps):
                for pop in populations:
                    interact(pop, t, cfg, log, wall, index)
                log.done = t + 1
                for hook in everyone:
                    hook.after_step(populations, log, stop.requested)
                if stop.requested:
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        status = 130
        again = RUN.resume_command(out, cfg.run.exact)
        kept = (f"resume from step {checkpoints.step} with: {again}"
                if checkpoints.step is not None else "no checkpoint was written yet")
        message = f"interrupted after {log.done} of {cfg.run.steps} steps; {kept}"
    except Diverged as e:
        status = DIVERGED_STATUS
        kept = (f"the last good checkpoint (step {checkpoints.step}) is kept"
                if checkpoints.step is not None else "no checkpoint was written")
        message = f"{e}; wrote the results up to step {log.done}; {kept}"
    except (CheckpointError, HookFailed) as e:
        status, message = 2, str(e)
        if isinstance(e, HookFailed):
            message += (f"; wrote the results up to step {log.done}"
                        + (f"; resume from step {checkpoints.step} with: "
                           f"{RUN.resume_command(out, cfg.run.exact)}"
                           if checkpoints.step is not None else ""))
    finally:
        progress.close()
    record.update(steps_completed=log.done, interrupted=status == 130,
                  diverged=message if status == DIVERGED_STATUS else None,
                  diverged_runs=watch.found,
                  wall_seconds=round(previous_wall + time.perf_counter() - start, 2),
                  wall_seconds_per_agent={a: round(w, 2) for a, w in wall.items()},
                  checkpoint_step=checkpoints.step,
                  finished_utc=utc_now() if status == 0 and log.done == cfg.run.steps else None)
    try:
        # a second Ctrl-C must not leave half the outputs
        with sigint_handler(signal.SIG_IGN):
            write_outputs(cfg, out, log, wall, last_losses(populations), record, probe)
            for hook in (MemoryRecord(cfg), *everyone):  # the steps after the run
                if hasattr(hook, "after_run"):
                    hook.after_run(log, out)
    except OSError as e:
        kept = (f"the checkpoint of step {checkpoints.step} is kept"
                if checkpoints.step is not None else "")
        return Outcome(2, f"error: cannot write the results to {out}: {e.strerror or e}"
                       + (f"; {kept}" if kept else ""))
    except HookFailed as e:  # the run's own outputs are written whole before it
        return Outcome(2, f"error: {e}; the run's outputs are written", out)
    if message and status in (2, 3):
        message = "error: " + message
    return Outcome(status, message, out)


def build(cfg: Config) -> tuple[list[Population], list[int]]:
    """The populations of ``cfg.run.agent``, each with its env copies, buffer and first
    contexts."""
    run = cfg.run
    if cfg.output.threads:
        torch.set_num_threads(cfg.output.threads)
    env_kwargs = env_options(cfg)
    seeds = [run.seed + r for r in range(run.seeds)]
    agent_cfg = agent_config(cfg)
    try:
        env = envs.make_vec(run.env, 1, **env_kwargs)  # the spaces; the data is checked here
    except (FileNotFoundError, ValueError) as e:  # missing or malformed data
        raise UsageError(str(e)) from None
    d, n_actions = env.single_observation_space.shape[0], int(env.single_action_space.n)
    agents = make_agents(run.agent, d, n_actions, run.seeds,
                         lambda name: agent_seed(run.seed, run.seeds, name), agent_cfg,
                         run.device, cuda_graph=not run.no_cuda_graph, compile=run.compile)
    built = []
    for agent in agents:
        env = envs.make_vec(run.env, agent.runs, **env_kwargs)
        # every agent's run r sees seed + r: common random numbers across agents
        context, _ = env.reset(seed=seeds)
        item_key = envs.SPECS[run.env].item_key
        problem = getattr(env.unwrapped, "problem", None)
        table = problem.item_features() if item_key and problem is not None else None
        buffer = ReplayBuffer(cfg.training.buffer_size, agent.runs, d, device=run.device,
                              table=table, n_actions=n_actions)
        built.append(Population(agent, env, buffer, context,
                                diverged_at=torch.full((agent.runs,), -1, device=run.device),
                                item_key=item_key,
                                env_columns=envs.SPECS[run.env].columns,
                                agent_columns=SPECS[agent.name].columns))
    return built, seeds


def snapshot(populations: list[Population], log: RegretLog, wall: dict[str, float],
             probe: Probe) -> dict[str, Any]:
    """The state of a run at the end of step ``log.done``, for a checkpoint."""
    return {"steps_done": log.done, "log": log.state_dict(), "wall": dict(wall),
            "probes": list(probe.rows),
            "populations": [{"agents": [pop.agent.name], "agent": pop.agent.state_dict(),
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
    if [[pop.agent.name] for pop in populations] != [s["agents"] for s in saved]:
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
        if pop.loss is not None:
            losses[pop.agent.name] = float(pop.loss.mean())
    return losses


def write_outputs(cfg: Config, out: Path, log: RegretLog, wall: dict, losses: dict,
                  record: dict, probe: Probe | None = None) -> None:
    """The run's records: metrics.csv, summary.csv, phases.csv, probes.csv and
    config.json (memory.csv is a hook's, :class:`bandits.simulator.hooks.MemoryRecord`,
    and the figure is drawn after the run: :func:`bandits.simulator.run.start`)."""
    metrics = log.metrics_frame(cfg.output.log_points)
    summary = log.summary_frame(losses)
    write_csv(metrics, out / "metrics.csv")
    write_csv(summary, out / "summary.csv")
    write_csv(log.phases_frame(envs.SHAPES[cfg.run.env][1]), out / "phases.csv")
    if probe is not None:
        write_csv(probe.frame(), out / "probes.csv")
    write_json(record, out / "config.json")
