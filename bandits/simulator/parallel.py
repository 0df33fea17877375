"""Populations side by side: one ``bandits.run`` in several worker processes.

A run's agents (one population each: :func:`agents.make_agents`) are independent: each has
its own models, generators, buffer and environment copies, and every agent's numbers
depend only on its own seeds. So ``--workers N`` splits the populations over N worker
processes, each an ordinary ``bandits.run`` of some of the agents in
``DIR/parts/<k>/`` (with its own checkpoints) that reads the run's settings as they are
from ``DIR/parts/settings.json`` (never re-spelled as flags), and gathers their outputs
into ``DIR``: ``metrics.csv``, ``summary.csv``, ``phases.csv`` and ``probes.csv`` are
written agent by agent, so they are the same bytes for every N (a test checks it).

The coordinator (this module) balances the populations over the workers by their
cost, shows one progress bar, forwards Ctrl-C once to every worker (each stops at a step
boundary and checkpoints), and never hangs on a dead worker: when one dies the others
are stopped at a checkpoint and the run ends with one line saying how to resume.
``python -m bandits.run --resume DIR`` resumes every worker from its own checkpoint.

Its workers are ``python -m bandits.run`` subprocesses, not jobs of the worker pool
(:func:`bandits.core.processes.run_jobs`): each is a whole run of its own, with the exit
status the coordinator reads (2, 3, 130), its stderr in ``DIR/parts/worker-<k>.log``
(where the coordinator finds the line that says why it stopped), a progress file read
while it runs, and a command line that ``config.json`` records and ``--resume``
reruns; and when one dies the others must stop at a checkpoint, whereas a pool whose
worker dies terminates the others at once and cannot tell which worker died or how.
What the pool's workers have, these have too, from :mod:`bandits.core.processes`: Ctrl-C
passed on once to every worker (:func:`~bandits.core.processes.signal_each`), the parent
watch (:func:`~bandits.core.processes.die_with_parent`) and the dead worker's one line
(:func:`~bandits.core.processes.how_it_ended`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import envs
from agents import SPECS
from bandits.core.config import UsageError
from bandits.core.files import package_versions, utc_now, write_atomic, write_json
from bandits.core.processes import (
    available_cores,
    ctrl_c_on,
    die_with_parent,
    how_it_ended,
    signal_each,
)
from bandits.core.runner import DIVERGED_STATUS
from bandits.core.runner import worker_count as worker_count_of
from bandits.records.figures import draw_run
from bandits.records.regret import METRICS_COLUMNS
from bandits.simulator.loop import Outcome
from bandits.simulator.resume import PARTS, RUN, identity, resume_config
from bandits.simulator.settings import (
    Config,
    Flags,
    check_data,
    per_process,
    recorded_columns,
)

SETTINGS_FILE = f"{PARTS}/settings.json"
"""The run's settings as the workers receive them (every one but those of their own
command line, the settings declared ``per_process``), as JSON."""


WORKER_PAYS = 20_000
"""The network updates (over every agent and seed) below which a run is too short for a
worker to pay its start: a fresh process imports torch and the rest (a few CPU seconds,
more than 20,000 updates of these networks split between two cores save)."""


def training_updates(cfg: Config) -> int:
    """The network updates of a run of ``cfg``, over every agent and seed: each step that
    trains (every ``--train-every``-th, and every one up to ``--train-always-until``)
    makes ``--updates-per-step`` updates."""
    run, training = cfg.run, cfg.training
    steps = (run.steps // training.train_every
             + min(training.train_always_until, run.steps)
             - min(training.train_always_until, run.steps) // training.train_every)
    return steps * training.updates_per_step * run.seeds * len(run.agent)


def worker_count(cfg: Config) -> int:
    """Workers for ``cfg``: ``--workers``, else ``$BANDITS_WORKERS``, else the cores this
    process may use (one for a run of fewer than :data:`WORKER_PAYS` updates); never more
    than the run's populations. One for a data set registered in this process
    (:func:`envs.register_dataset`): a fresh worker would not know it."""
    cores = available_cores() if training_updates(cfg) >= WORKER_PAYS else 1
    workers = worker_count_of(cfg.output.workers, len(cfg.run.agent), cores)
    return workers if cfg.run.env in envs.BUILT_IN else 1


def assign(names: list[str], workers: int) -> list[list[str]]:
    """The agents of each worker: agents placed largest first on the least loaded worker
    (an agent's cost: its spec's ``cost``). Each worker's agents keep the run's order."""
    cost = [SPECS[a].cost if a in SPECS else 1.0 for a in names]
    loads = [0.0] * workers
    bins: list[list[str]] = [[] for _ in range(workers)]
    for i in sorted(range(len(names)), key=lambda i: -cost[i]):
        k = loads.index(min(loads))
        loads[k] += cost[i]
        bins[k].append(names[i])
    return [sorted(b, key=names.index) for b in bins if b]


def is_parallel_run(out: Path) -> bool:
    try:
        return "parts" in json.loads((out / "config.json").read_text())
    except (OSError, ValueError, TypeError):
        return False


# --------------------------------------------------------------------------- running


def run(cfg: Config, out: Path, command: str):
    """Run ``cfg`` in :func:`worker_count` workers and gather the outputs into ``out``."""
    check_data(cfg)  # missing or malformed data: one line before any worker starts
    bins = assign(list(cfg.run.agent), worker_count(cfg))
    own = per_process(Flags)
    settings = {k: v for k, v in cfg.flat().items() if k not in own}
    try:
        (out / PARTS).mkdir(exist_ok=True)
        write_json(settings, out / SETTINGS_FILE)  # the record itself, never re-spelled
    except OSError as e:
        raise UsageError(f"cannot write to {out}: {e.strerror or e}") from None
    parts: list[dict[str, Any]] = [
        {"agents": agents, "dir": f"{PARTS}/{k}",
         "argv": ["--settings-file", str(out / SETTINGS_FILE), "--agent", *agents,
                  "--workers", "1", "--no-progress", "--overwrite",
                  "--out", str(out / PARTS / str(k))]}
        for k, agents in enumerate(bins)]
    config = {**cfg.flat(), "workers": len(parts), "parts": parts,
              "command": command,
              "versions": package_versions(), "started_utc": utc_now()}
    config["identity"] = identity(config)
    try:
        write_json({**config, "running": True}, out / "config.json")
    except OSError as e:
        raise UsageError(f"cannot write to {out}: {e.strerror or e}") from None
    commands = [p["argv"] for p in parts]
    return _coordinate(cfg, out, config, commands, resumed=False)


def resume(out: Path, changes: dict, command: str):
    """Continue a run made by :func:`run` in ``out``: every worker from its checkpoint,
    with ``changes`` (the settings that may be given beside ``--resume``)."""
    config = json.loads((out / "config.json").read_text())
    with RUN.claimed(out):
        return _resume_parts(out, config, changes, command)


def _resume_parts(out: Path, config: dict, changes: dict, command: str):
    """:func:`resume` once ``out`` is claimed."""
    extra: list[str] = []
    for k in sorted(set(changes) & {"steps", "checkpoint_every", "data_dir"}):
        extra += ["--" + k.replace("_", "-"), str(changes[k])]
    if "steps" in changes:
        config["steps"] = changes["steps"]
    config["no_progress"] = changes.get("no_progress", False)
    config["log_y"] = changes.get("log_y", False) or config.get("log_y", False)
    commands = []
    worker_changes = {k: changes[k] for k in ("steps", "data_dir") if k in changes}
    for k, p in enumerate(config["parts"]):
        d = out / p["dir"]
        if (d / "checkpoint.pt").is_file():
            # every part is checked before any worker starts (a foreign, damaged or
            # shorter checkpoint is refused here, not after the other workers ran)
            part_cfg, _ = resume_config(d, worker_changes)
            if list(part_cfg.run.agent) != list(p["agents"]):
                raise UsageError(f"cannot resume {out}: worker {k}'s checkpoint in {d} is a run "
                                 f"of {', '.join(part_cfg.run.agent)}, not of this run's "
                                 f"{', '.join(p['agents'])}; copy back its own part or start "
                                 "again with --overwrite")
            commands.append(["--resume", str(d), "--no-progress", *extra])
        elif _never_checkpointed(d):  # killed before its first checkpoint: start it again
            commands.append([*p["argv"], *[a for a in extra if a != "--checkpoint-every"]])
        else:
            raise UsageError(f"cannot resume {out}: worker {k}'s checkpoint {d / 'checkpoint.pt'} "
                             "is missing (worker checkpoints stay out of git); rerun the "
                             "command with --overwrite to start again")
    config["resumed"] = [*config.get("resumed", []), {"command": command, "at_utc": utc_now()}]

    cfg = Config.recorded(config)  # the run's record (its workers check and run it)
    return _coordinate(cfg, out, config, commands, resumed=True)


def _never_checkpointed(part: Path) -> bool:
    """Whether a worker's directory is that of a worker stopped before its first
    checkpoint (the directory made by the coordinator, with no config.json yet or the
    one written at step 0): only such a part may start again from step 0 on a resume. A
    missing directory (a clone of shipped results) may not."""
    if not part.is_dir():
        return False
    try:
        record = json.loads((part / "config.json").read_text())
    except FileNotFoundError:
        return True  # stopped while starting, before writing anything
    except (OSError, ValueError):
        return False
    return record.get("steps_completed") == 0


def _coordinate(cfg: Config, out: Path, config: dict, commands: list[list[str]], resumed: bool):
    from tqdm.auto import tqdm

    start = time.perf_counter()
    previous_wall = config.get("wall_seconds", 0.0) if resumed else 0.0
    procs, logs, progress_files = [], [], []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    for k, argv in enumerate(commands):
        d = out / PARTS / str(k)
        d.mkdir(parents=True, exist_ok=True)
        pf = out / PARTS / f".progress-{k}"
        progress_files.append(pf)
        log = open(out / PARTS / f"worker-{k}.log", "wb")  # noqa: SIM115 - closed below
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "bandits.run", *argv, "--progress-file", str(pf)],
            stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None))
    bar = tqdm(total=cfg.run.steps, unit="step", disable=cfg.output.no_progress,
               desc=f"{cfg.run.env} x{cfg.run.seeds}, {len(procs)} workers", dynamic_ncols=True)
    try:
        with ctrl_c_on():  # even when started with Ctrl-C ignored
            interrupts = _watch(procs, progress_files, bar)
    finally:
        bar.close()
        for log in logs:
            log.close()
    codes = [p.returncode for p in procs]
    wall = round(previous_wall + time.perf_counter() - start, 2)
    return _gather(cfg, out, config, codes, wall, interrupts > 0)


def _watch(procs, progress_files, bar) -> int:
    """Follow the workers until every one has ended, the bar at the steps all have done. A
    worker that dies, or Ctrl-C, stops the others at a checkpoint (each at a step
    boundary). Returns how many times Ctrl-C came."""
    interrupts, dead = 0, set()
    while any(p.poll() is None for p in procs):
        try:
            time.sleep(0.2)
            slowest = min(_read_steps(f) for f in progress_files)
            if slowest > bar.n:
                bar.update(slowest - bar.n)
            for k, p in enumerate(procs):
                if p.returncode not in (None, 0, 2, 3, 130) and k not in dead:
                    dead.add(k)
                    _signal_all(procs, signal.SIGINT)
        except KeyboardInterrupt:
            interrupts += 1
            _signal_all(procs, signal.SIGINT)
    return interrupts


def _signal_all(procs, sig) -> None:
    signal_each([p.pid for p in procs if p.poll() is None], sig)


def _read_steps(path: Path) -> int:
    try:
        return int(path.read_text() or 0)
    except (OSError, ValueError):
        return 0


def _last_line(out: Path, k: int) -> str:
    try:
        lines = (out / PARTS / f"worker-{k}.log").read_text().strip().splitlines()
    except OSError:
        return ""
    lines = [ln for ln in lines if "error" in ln or "diverged" in ln or "interrupted" in ln]
    return lines[-1].replace("bandits.run: ", "").replace("error: ", "") if lines else ""


def _gather(cfg: Config, out: Path, config: dict, codes: list[int], wall: float,
            interrupted: bool):
    """Merge the workers' outputs into ``out`` and say how the run ended."""
    parts = config["parts"]
    dirs = [out / p["dir"] for p in parts]
    for name in ("metrics.csv", "summary.csv", "phases.csv", "memory.csv", "probes.csv"):
        columns = [*METRICS_COLUMNS, *recorded_columns(cfg)] if name == "metrics.csv" else None
        merge_csv([d / name for d in dirs], cfg.run.agent, out / name, columns)
    wall_per_agent, done, diverged_runs = {}, [], []
    for d in dirs:
        try:
            c = json.loads((d / "config.json").read_text())
        except (OSError, ValueError):
            continue
        wall_per_agent.update(c.get("wall_seconds_per_agent", {}))
        done.append(c.get("steps_completed", 0))
        diverged_runs += c.get("diverged_runs", [])
    status, message = 0, None
    resume = RUN.resume_command(out, bool(config.get("exact")))
    dead = [k for k, c in enumerate(codes) if c not in (0, 2, DIVERGED_STATUS, 130)]
    if dead:
        k = dead[0]
        how = how_it_ended(codes[k])
        status = 1
        message = (f"error: worker {k} (agents {' '.join(parts[k]['agents'])}) died ({how}); "
                   f"the others stopped at a checkpoint; resume with: {resume}")
    elif DIVERGED_STATUS in codes:
        status = DIVERGED_STATUS
        message = "error: " + _last_line(out, codes.index(DIVERGED_STATUS))
    elif 2 in codes:
        status = 2
        message = "error: " + _last_line(out, codes.index(2))
    elif 130 in codes or interrupted:
        status = 130
        message = (f"interrupted after {min(done, default=0)} of {cfg.run.steps} steps; resume "
                   f"with: {resume}")
    config.update(steps_completed=min(done, default=0), wall_seconds=wall,
                  wall_seconds_per_agent=wall_per_agent, interrupted=status == 130,
                  diverged=message if status == DIVERGED_STATUS else None,
                  diverged_runs=diverged_runs,
                  worker_exit_codes=codes,
                  finished_utc=utc_now() if status == 0 and min(done, default=0) == cfg.run.steps
                  else None)
    config.pop("running", None)
    write_json(config, out / "config.json")
    draw_run(out, cfg.run.env, cfg.output.log_y, cfg.agents.act_samples)  # after the run
    return Outcome(status, message, out)


def merge_csv(paths: list[Path], order: list[str], out: Path,
              columns: list[str] | None = None) -> None:
    """The workers' CSVs as one: the header, then each agent's rows (their first field is
    the agent) in the run's order. Text is copied, never re-formatted: the bytes are those
    a single process writes. ``columns``: the whole run's header, where a worker's may
    lack the columns only other workers' agents declare (their fields are left empty, as
    a single process leaves a NaN)."""
    header: str | None = None
    rows: dict[str, list[str]] = {}
    for path in paths:
        try:
            lines = path.read_text().splitlines(keepends=True)
        except OSError:
            continue
        if not lines or lines[0].strip() in ("", '""'):  # an empty table
            continue
        names = lines[0].rstrip("\n").split(",")
        if columns is not None and names != columns:
            lines = [",".join(columns) + "\n", *(_with_columns(line, names, columns)
                                                 for line in lines[1:])]
        header = header or lines[0]
        for line in lines[1:]:
            rows.setdefault(line.split(",", 1)[0], []).append(line)
    if header is None:  # no worker had rows: what a single process writes for an empty table
        write_atomic(out, "\n")
        return
    write_atomic(out, header + "".join(line for a in order for line in rows.get(a, [])))


def _with_columns(line: str, names: list[str], columns: list[str]) -> str:
    """A row of the header ``names`` written under the header ``columns`` (empty fields
    for the columns it lacks)."""
    fields = dict(zip(names, line.rstrip("\n").split(",")))
    return ",".join(fields.get(c, "") for c in columns) + "\n"


__all__ = ["assign", "available_cores", "is_parallel_run", "merge_csv", "resume", "run",
           "worker_count"]

