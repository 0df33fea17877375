"""What happens around a step, outside the loop: the hooks of
:func:`bandits.simulator.loop.simulate`.

Each population's step goes into the regret log through the :class:`Recorder`. After
every step the loop calls ``hook.after_step(populations, log, stopping)`` on each hook in
turn: :class:`Probe` (what the reward models believe, at a few steps), :class:`Progress`
(the bar, and the file a worker's coordinator reads), :class:`Checkpoints` (a checkpoint
when one is due, never of a diverged state: :class:`DivergenceWatch`), then each
``--hook``'s object (:class:`GivenHook`, its errors one line). :class:`StopOnSigint` turns
Ctrl-C into a stop at the end of the step, so that the checkpoint then written is a
consistent one.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import numpy as np
import pandas as pd
import torch

import envs
from bandits.core import checkpoint
from bandits.core.config import UsageError
from bandits.core.files import write_csv
from bandits.core.import_path import hook_factory
from bandits.core.processes import parent_stopped
from bandits.core.runner import Diverged, plain
from bandits.records.memory import memory_frame
from bandits.records.regret import RegretLog
from bandits.simulator.population import Population
from bandits.simulator.settings import CHECKPOINT_KIND, Config, env_options

CHECK_EVERY = 50  # steps between divergence checks (each reads a few bytes from the device)


class Hook(Protocol):
    """What looks on while a run goes: after every step, ``after_step`` sees the
    populations (:class:`bandits.simulator.population.Population`), the regret log (``log.done``:
    the steps done) and whether a stop was asked for (a checkpoint is due then). The
    probes, the progress bar and the checkpoints are hooks; :func:`bandits.simulator.loop.simulate`
    takes more (``hooks=``), called after them in the order given. A hook may also have
    ``after_run(log, out)``, called once the run has stopped (finished, interrupted or
    diverged) and its own records are written: :class:`MemoryRecord` writes
    ``memory.csv`` so."""

    def after_step(self, populations: list[Population], log: RegretLog, stopping: bool
                   ) -> None: ...


class Recorder:
    """What a step of a population gave, into the regret log, agent by agent (its runs):
    the environment's regret, expected regret and optimal action, the data item shown
    (where the environment names it), the columns the environment's and the agent's
    specs declare, and the agent's share of the step's wall time (``wall``, seconds)."""

    def __init__(self, log: RegretLog, wall: dict[str, float]) -> None:
        self.log, self.wall = log, wall
        self.index = {name: k for k, name in enumerate(log.agents)}

    def record(self, pop: Population, t: int, actions: np.ndarray, rewards: np.ndarray,
               info: dict[str, Any], elapsed: float) -> None:
        """Step ``t`` (0-based) of ``pop``: its ``actions`` and ``rewards``, the
        environment's ``info``, ``elapsed`` seconds of work."""
        values = ({c: v.cpu().numpy() for c, v in pop.agent.step_values().items()}
                  if pop.agent_columns else {})
        name = pop.agent.name
        self.wall[name] += elapsed
        record = {key: info[key] for key in ("regret", "expected_regret", "optimal_action")}
        if pop.item_key is not None:  # the data item shown (memory.csv), where the env names it
            record["item"] = info[pop.item_key]
        record.update({c: info[c] for c in pop.env_columns})  # the specs' columns
        record.update({c: values[c] for c in pop.agent_columns})
        self.log.record(self.index[name], t, actions, rewards, record)


class MemoryRecord:
    """A step after the run (not a hook of every step): ``memory.csv``, what each
    decision could remember
    (:func:`bandits.records.memory.memory_frame`, from the regret log's per-step actions,
    rewards and items and the buffer's size)."""

    def __init__(self, cfg: Config) -> None:
        self.buffer_size = cfg.training.buffer_size

    def after_run(self, log: RegretLog, out: Path) -> None:
        n = log.done
        write_csv(memory_frame(log.agents, log.seeds, log.action[:, :, :n],
                               log.reward[:, :, :n], log.item[:, :, :n],
                               log.optimal_action[:, :, :n], self.buffer_size),
                  out / "memory.csv")


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
        env = envs.make_vec(cfg.run.env, self.CONTEXTS, **env_options(cfg))
        self.contexts, _ = env.reset(seed=self.SEED)
        info = env.step(np.zeros(self.CONTEXTS, dtype=np.int64))[4]
        self.best = np.asarray(info["optimal_action"])
        self.expected = np.asarray(info["expected_rewards"])
        self.steps = probe_steps(cfg.run.steps)
        self.device = cfg.run.device
        self.agents = list(cfg.run.agent)
        self.rows: list[dict[str, Any]] = []

    def after_step(self, populations: list[Population], log: RegretLog, stopping: bool) -> None:
        if log.done in self.steps:
            self.look(populations, log.done, log.seeds)

    @torch.no_grad()
    def look(self, populations: list[Population], step: int, seeds: list[int]) -> None:
        for population in populations:
            agent = population.agent
            g = torch.Generator(device=self.device)
            g.manual_seed(zlib.crc32(f"{step}:{agent.name}".encode()))
            pred = agent.predict_samples(torch.as_tensor(self.contexts, device=self.device),
                                         self.SAMPLES, g)
            if pred is None:  # no reward model to look at
                continue
            draws = pred.cpu().numpy()  # (runs, S, N, A)
            first = draws.argmax(-1)  # (runs, S, N)
            for r in range(agent.runs):
                for b in np.unique(self.best):
                    sel = self.best == b
                    for a in range(draws.shape[-1]):
                        p = draws[r][:, sel, a]  # (S, contexts with best action b)
                        self.rows.append({
                            "agent": agent.name, "seed": seeds[r], "step": step,
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


def diverged_runs(populations: list[Population], seeds: list[int]) -> list[dict[str, Any]]:
    """The runs whose training loss has been NaN or infinite: agent, seed and first step,
    earliest first. Reads one small tensor per population: call it now and then."""
    found = []
    for pop in populations:
        assert pop.diverged_at is not None  # made with the population
        at = pop.diverged_at.cpu()
        for i, step in enumerate(at.tolist()):
            if step >= 0:
                found.append({"step": step, "agent": pop.agent.name, "seed": seeds[i]})
    return sorted(found, key=lambda d: (d["step"], d["agent"], d["seed"]))


def _describe(d: dict[str, Any]) -> str:
    return (f"agent {d['agent']}, seed {d['seed']} diverged at step {d['step']} "
            "(non-finite training loss)")


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


class Checkpoints:
    """Writes the run's checkpoint when one is due: every ``cfg.output.checkpoint_every``
    seconds of work, at the last step and when the run is asked to stop; remembers the
    step of the last one written (``None`` before the first). The divergence watch looks
    first, every :data:`CHECK_EVERY` steps and before every checkpoint, so that a diverged
    state is never checkpointed.

    Args:
        record: ``config.json`` as of now.
        identity: The run's identity (:func:`bandits.simulator.resume.identity`).
        step: The step of the checkpoint the run resumed from, or ``None``.
        state: The run's state now (:func:`bandits.simulator.loop.snapshot`).
        watch: The divergence watch.
    """

    def __init__(self, cfg: Config, out: Path, record: Callable[[], dict], identity: str,
                 step: int | None, state: Callable[[], dict[str, Any]],
                 watch: DivergenceWatch) -> None:
        self.cfg, self.path = cfg, out / checkpoint.NAME
        self.record, self.identity = record, identity
        self.step, self.state, self.watch = step, state, watch
        self.next = time.monotonic() + cfg.output.checkpoint_every

    def due(self, done: int, stopping: bool) -> bool:
        return done == self.cfg.run.steps or stopping or time.monotonic() >= self.next

    def after_step(self, populations: list[Population], log: RegretLog, stopping: bool) -> None:
        save = self.due(log.done, stopping)
        if save or log.done % CHECK_EVERY == 0:
            self.watch.check(populations, log.seeds)  # never checkpoint a diverged state
        if save:
            self.save(self.state(), log.done)

    def save(self, state: dict[str, Any], done: int) -> None:
        checkpoint.save(self.path, CHECKPOINT_KIND, {**state, "config": plain(self.record())},
                        identity=self.identity)
        self.step = done
        self.next = time.monotonic() + self.cfg.output.checkpoint_every


class StopOnSigint:
    """While active, Ctrl-C (SIGINT) asks the loop to stop at the end of the current step,
    so that the checkpoint it then writes is a consistent one; a second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.requested = False
        self._old: Callable[[int, FrameType | None], Any] | int | None = None

    def _handler(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> StopOnSigint:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        # in a sweep's worker: a Ctrl-C the parent passed on before this handler was on
        self.requested = parent_stopped()
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


class Progress:
    """A tqdm bar over steps with the running mean cumulative regret of each agent."""

    def __init__(self, cfg: Config, done: int = 0) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=cfg.run.steps, initial=done, unit="step",
                        disable=cfg.output.no_progress,
                        desc=f"{cfg.run.env} x{cfg.run.seeds}", dynamic_ncols=True)
        self.every = max(1, cfg.run.steps // 200)
        # a worker tells its coordinator
        self.file, self.next_write = cfg.output.progress_file, 0.0

    def after_step(self, populations: list[Population], log: RegretLog, stopping: bool) -> None:
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
