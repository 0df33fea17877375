"""The loop of a bandit run: every population acts, steps its environments, stores the
interactions and trains (:func:`interact`), step after step (:func:`run_steps`); the
recorder keeps what each step gave and the hooks look on (:mod:`bandits.simulator.hooks`).
Settings: :mod:`bandits.simulator.settings`; the command line: :mod:`bandits.simulator.run`.
"""

from __future__ import annotations

import dataclasses
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Callable, Sequence
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
from bandits.core.data import DataError
from bandits.core.files import (
    device_name,
    machine,
    package_versions,
    utc_now,
    write_csv,
    write_json,
)
from bandits.core.processes import sigint_handler
from bandits.core.runner import DIVERGED_STATUS
from bandits.records.regret import RegretLog
from bandits.simulator.hooks import (
    Checkpoints,
    Diverged,
    DivergenceWatch,
    GivenHook,
    Hook,
    HookFailed,
    MemoryRecord,
    Probe,
    Progress,
    Recorder,
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


def interact(pop: Population, t: int, cfg: Config, recorder: Recorder) -> None:
    """Step ``t`` of one population: act on its contexts, step its environments, store
    the interactions, train; the recorder keeps what the step gave."""
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
            assert pop.diverged_at is not None  # made with the population
            bad = (pop.diverged_at < 0) & ~torch.isfinite(pop.loss)
            pop.diverged_at.masked_fill_(bad, t + 1)
    recorder.record(pop, t, actions_np, rewards, info, time.perf_counter() - tic)
    pop.context = next_context


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
    wall = dict.fromkeys(cfg.run.agent, 0.0)
    if resume is not None:
        _restore_or_refuse(populations, log, wall, probe, resume["state"], out)
    record = run_record(cfg, seeds, command, resume, log.done)
    clock = Clock(resume["config"].get("wall_seconds", 0.0) if resume is not None else 0.0)
    given = [GivenHook.made(path, cfg, out) for path in cfg.output.hook or ()]  # before any file
    watch = DivergenceWatch(cfg.output.skip_diverged)
    checkpoints, progress = _open_records(
        cfg, out, record, log, clock, resume is not None, watch,
        lambda: snapshot(populations, log, wall, probe))
    # each looks after every step, in this order: the run's own, then --hook's, then the
    # caller's
    everyone: list[Hook] = [probe, progress, checkpoints, *given, *hooks]
    try:
        status, message = _steps_until_stopped(cfg, out, populations, Recorder(log, wall),
                                               everyone, checkpoints)
    finally:
        progress.close()
    record.update(steps_completed=log.done, interrupted=status == 130,
                  diverged=message if status == DIVERGED_STATUS else None,
                  diverged_runs=watch.found, wall_seconds=clock.seconds(),
                  wall_seconds_per_agent={a: round(w, 2) for a, w in wall.items()},
                  checkpoint_step=checkpoints.step,
                  finished_utc=utc_now() if status == 0 and log.done == cfg.run.steps else None)
    failed = _write_all(cfg, out, log, populations, wall, record, probe,
                        [MemoryRecord(cfg), *everyone], checkpoints.step)
    if failed is not None:
        return failed
    return Outcome(status, f"error: {message}" if message and status in (2, 3) else message, out)


def run_record(cfg: Config, seeds: list[int], command: str | None, resume: dict | None,
               done: int) -> dict[str, Any]:
    """The run's record (``config.json``) as it starts: the settings, and what the run is
    (its command, machine, versions, start and identity). A resumed run (``resume``, at
    step ``done``) keeps its own command, start and id, and lists this start in
    ``resumed``."""
    record = {**cfg.flat(), "seed_list": seeds,
              "agent_config": dataclasses.asdict(agent_config(cfg)),
              "command": command or "python -m bandits.run " + shlex.join(sys.argv[1:]),
              "device_name": device_name(cfg.run.device), "machine": machine(cfg.run.device),
              "versions": package_versions(), "started_utc": utc_now(),
              # which run this directory's checkpoints belong to (a copy of another
              # run's checkpoint, even one with the same settings, is refused)
              "run_id": uuid.uuid4().hex}
    if resume is not None:
        before = resume["config"]
        record.update(run_id=before.get("run_id", record["run_id"]),
                      command=before["command"], started_utc=before.get("started_utc"),
                      resumed=[*before.get("resumed", []),
                               {"command": record["command"], "at_step": done,
                                "at_utc": utc_now()}])
    record["identity"] = identity(record)
    return record


class Clock:
    """The run's wall time in seconds: the runs it continues (``previous``) and this one
    since it was made."""

    def __init__(self, previous: float) -> None:
        self.previous, self.start = previous, time.perf_counter()

    def seconds(self) -> float:
        return round(self.previous + time.perf_counter() - self.start, 2)


def _open_records(cfg: Config, out: Path, record: dict, log: RegretLog, clock: Clock,
                  resumed: bool, watch: DivergenceWatch, state: Callable[[], dict[str, Any]]
                  ) -> tuple[Checkpoints, Progress]:
    """``config.json`` written as running, and the run's checkpoints and progress bar; a
    folder that cannot be written is one line. A Ctrl-C before the loop could keep a
    checkpoint leaves a new run's folder as it found it, so the same command runs again."""
    try:
        write_json({**record, "steps_completed": log.done, "running": True},
                   out / "config.json")
        checkpoints = Checkpoints(
            cfg, out, lambda: {**record, "steps_completed": log.done,
                               "wall_seconds": clock.seconds()},
            record["identity"], log.done if resumed else None, state, watch)
        return checkpoints, Progress(cfg, log.done)
    except OSError as e:
        raise UsageError(f"cannot write to {out}: {e.strerror or e}") from None
    except KeyboardInterrupt:
        if not resumed:
            (out / "config.json").unlink(missing_ok=True)
        raise


def run_steps(cfg: Config, populations: list[Population], recorder: Recorder,
              hooks: Sequence[Hook]) -> None:
    """The loop: from the log's steps done to ``cfg.run.steps``, every population
    interacts, then every hook looks; a Ctrl-C stops it at the end of the step
    (``KeyboardInterrupt``)."""
    log = recorder.log
    with StopOnSigint() as stop:
        for t in range(log.done, cfg.run.steps):
            for pop in populations:
                interact(pop, t, cfg, recorder)
            log.done = t + 1
            for hook in hooks:
                hook.after_step(populations, log, stop.requested)
            if stop.requested:
                raise KeyboardInterrupt


def _steps_until_stopped(cfg: Config, out: Path, populations: list[Population],
                         recorder: Recorder, hooks: Sequence[Hook], checkpoints: Checkpoints
                         ) -> tuple[int, str | None]:
    """:func:`run_steps`, and how it stopped: the exit status and, unless it finished,
    one line for the user that says what is kept and how to resume."""
    try:
        run_steps(cfg, populations, recorder, hooks)
        return 0, None
    except KeyboardInterrupt:
        hint: str | None = (_resume_hint(cfg, out, checkpoints.step)
                            or "no checkpoint was written yet")
        return 130, f"interrupted after {recorder.log.done} of {cfg.run.steps} steps; {hint}"
    except Diverged as e:
        kept = (f"the last good checkpoint (step {checkpoints.step}) is kept"
                if checkpoints.step is not None else "no checkpoint was written")
        return DIVERGED_STATUS, f"{e}; wrote the results up to step {recorder.log.done}; {kept}"
    except CheckpointError as e:
        return 2, str(e)
    except HookFailed as e:
        hint = _resume_hint(cfg, out, checkpoints.step)
        return 2, (f"{e}; wrote the results up to step {recorder.log.done}"
                   + (f"; {hint}" if hint else ""))


def _resume_hint(cfg: Config, out: Path, step: int | None) -> str | None:
    """How to resume from the checkpoint of ``step`` (None: none was written)."""
    if step is None:
        return None
    return f"resume from step {step} with: {RUN.resume_command(out, cfg.run.exact)}"


def _write_all(cfg: Config, out: Path, log: RegretLog, populations: list[Population],
               wall: dict[str, float], record: dict, probe: Probe, hooks: Sequence[Any],
               kept: int | None) -> Outcome | None:
    """The run's outputs (:func:`write_outputs`), then each hook's ``after_run`` (a second
    Ctrl-C meanwhile must not leave half the outputs). None where all are written, else the
    outcome that says what is not (``kept``: the step of the checkpoint kept, or None)."""
    try:
        with sigint_handler(signal.SIG_IGN):
            write_outputs(cfg, out, log, wall, last_losses(populations), record, probe)
            for hook in hooks:  # the steps after the run
                if hasattr(hook, "after_run"):
                    hook.after_run(log, out)
    except OSError as e:
        return Outcome(2, f"error: cannot write the results to {out}: {e.strerror or e}"
                       + (f"; the checkpoint of step {kept} is kept" if kept is not None
                          else ""))
    except HookFailed as e:  # the run's own outputs are written whole before it
        return Outcome(2, f"error: {e}; the run's outputs are written", out)
    return None


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
    except DataError:  # a data file missing, malformed or changed: said as every command
        raise  # says it (bandits.core.startup.Command)
    except (FileNotFoundError, ValueError) as e:  # a bad setting of the environment
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
