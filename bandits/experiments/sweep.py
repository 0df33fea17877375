"""Sweeps: many ``bandits.run`` configurations over settings and seeds, here or on Ray.

    python -m bandits.sweep --grid SPEC.toml --out DIR [--backend local|ray] [--address ADDR]
    python -m bandits.sweep --set noise_sigma=0.05,0.1 --set prior=mixture,gaussian \\
        --out DIR -- --agent bbb --seeds 3

A grid is the product of the values of every swept setting; each combination is a
*point*: one ``bandits.run`` configuration with all its seeds (batched through the runs
dimension), run into its own directory ``DIR/points/<setting=value__...>`` with its own
``config.json``, CSVs and checkpoint, so that every point can be redrawn and resumed on
its own. ``SPEC.toml`` has a ``[base]`` table (settings every point shares) and a
``[grid]`` table (a list of values per swept setting); names are ``bandits.run``'s
settings (``--noise-sigma`` is ``noise_sigma``). ``--set`` adds grid entries and flags
after ``--`` add base settings.

Backends: ``local`` (default) runs points in a pool of worker processes on this machine
(``--workers``, default one per core); ``ray`` submits each point as a Ray task with
``--cpus-per-point`` / ``--gpus-per-point`` resources, to the cluster at ``--address`` or
to a local Ray started on the spot (``pip install -e '.[ray]'``). A point runs the same
code in a fresh process whichever backend runs it, so its CSVs are the same bytes.

Robustness: a point whose worker dies or raises is retried (``--retries``), resuming
from its checkpoint; a point with a bad setting, or whose training diverges, is
reported and the others go on (every point's settings are checked before anything is
made: a grid none of whose points can run is refused in one line); rerunning the sweep
into the same ``DIR`` skips the finished points and resumes the unfinished ones.

Results in ``DIR``: ``sweep.csv`` (one row per point, agent and seed: the swept
settings, final cumulative regret and expected regret, wall time, status),
``sweep_summary.csv`` (mean, std, min, max over seeds per point and agent),
``sweep.png``/``.pdf`` (final regret per point, mean +-1 standard error), and ``sweep.json`` (the
grid, the command, wall time). ``--redraw DIR`` rebuilds the table and plot from
``sweep.csv``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bandits.core import kernels
from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.command_line import first_paragraph, given_values, to_flags
from bandits.core.conditions import refuse_settings_without_effect
from bandits.core.config import UsageError, check_ranges, setting
from bandits.core.files import machine_memory, write_json
from bandits.core.outputs import OutputDirError, claim_dir, release_dir
from bandits.core.processes import Ended, ctrl_c_on, one_line, run_jobs
from bandits.experiments.grid import (
    Point,
    SweepError,
    check_point,
    load_spec,
    lost_reason,
    make_points,
    parse_sets,
    run_point,
    stale_reason,
)
from bandits.experiments.sweep_results import collect, column, redraw, write_results
from bandits.simulator import run as runner

# what a sweep writes into its directory beside its points' directories (its claim removes
# what a killed write of these left)
OUTPUTS = ("sweep.json", "sweep.csv", "sweep_summary.csv", "sweep.png", "sweep.pdf")
WORKER_BYTES = 400 * 2**20  # a local worker process with torch and a run loaded, about


def _local(points: list[Point], workers: int, retries: int, progress: _Progress,
           task=run_point) -> None:
    """Run ``task(point)`` for every point in a pool of ``workers`` processes
    (:func:`bandits.core.processes.run_jobs`); a point whose worker dies or raises runs again
    (in a new pool) up to ``retries`` times, then is reported as failed."""
    def ended(e: Ended) -> None:
        progress.done(e.job, e.result if e.error is None
                      else {"status": "failed", "message": one_line(e.error)})

    run_jobs(task, points, workers, retries, on_end=ended, on_running=progress.running)


def _ray(points: list[Point], address: str | None, workers: int, cpus: float, gpus: float,
         retries: int, progress: _Progress) -> None:
    try:
        import ray
    except ImportError:
        raise SweepError("--backend ray needs ray: pip install -e '.[ray]'") from None
    if not ray.is_initialized():
        kwargs = {"address": address} if address else {"num_cpus": workers}
        ray.init(include_dashboard=False, log_to_driver=False, **kwargs)
    # max_retries: Ray runs a task again when its worker dies; the point then resumes.
    # runtime_env: each worker process starts with the kernels pinned as this one is
    # (bandits.core.kernels), on this machine or a cluster's.
    pinned = {k: os.environ[k] for k in (*kernels.PIN, kernels.EXACT)
              if k in os.environ}
    task = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=retries,
                      runtime_env={"env_vars": pinned})(run_point)
    futures = {task.remote(p): p for p in points}
    pending = list(futures)
    progress.running(min(len(pending), workers))
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        p = futures[ready[0]]
        try:
            result = ray.get(ready[0])
        except Exception as e:  # retries exhausted
            result = {"status": "failed", "message": one_line(e)}
        progress.done(p, result)
        progress.running(min(len(pending), workers))


class _Progress:
    """Points done / running / failed, with an ETA (tqdm)."""

    def __init__(self, total: int, disable: bool) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, unit="point", disable=disable, dynamic_ncols=True,
                        desc="sweep")
        self.results: dict[str, dict] = {}
        self.failed = 0
        self._running = 0

    def running(self, n: int) -> None:
        self._running = n
        self._show()

    def done(self, point: Point, result: dict) -> None:
        self.results[point.name] = result
        if result["status"] != "ok":
            self.failed += 1
            self.bar.write(f"point {point.name}: {result['status']}: {result['message']}")
        self.bar.update(1)
        self._show()

    def _show(self) -> None:
        self.bar.set_postfix(running=self._running, failed=self.failed, refresh=True)

    def close(self) -> None:
        self.bar.close()

_ON_RAY = (lambda c: c["backend"] == "ray", "add --backend ray")  # a Ray setting's acts_when
DASHES = (" Flags after -- are bandits.run flags given to every point: python -m "
          "bandits.sweep --set lr=0.001,0.003 --out DIR -- --agent bbb --seeds 3")


@dataclass
class Settings:
    """The settings of a sweep; each field is a flag of ``python -m bandits.sweep``."""

    grid: Path | None = setting(None, "TOML spec with [base] and [grid]", type=Path)
    set: list[str] = setting([], "a swept setting and its values (repeatable)",
                             action="append", type=str, metavar="NAME=V1,V2,...")
    out: Path | None = setting(None, "sweep directory (required, except with --redraw)",
                               type=Path)
    backend: str = setting("local", "where the points run", choices=["local", "ray"])
    address: str | None = setting(None, "Ray cluster address (ray backend)", type=str,
                                  acts_when=_ON_RAY)
    workers: int = setting(os.cpu_count() or 1,
                           "points run at once (local pool size; a local Ray's CPUs)")
    cpus_per_point: float = setting(1.0, "Ray CPUs per point", range=(0, 1024),
                                    acts_when=_ON_RAY)
    gpus_per_point: float = setting(0.0, "Ray GPUs per point", range=(0, 1024),
                                    acts_when=_ON_RAY)
    retries: int = setting(2, "times a point whose worker dies or raises is run again (a "
                           "dead local worker takes the points running beside it down too: "
                           "they retry)")
    redraw: Path | None = setting(None, "rebuild the summary and plot of DIR from its "
                                  "sweep.csv, then exit", type=Path, metavar="DIR")
    no_progress: bool = setting(False, "hide the progress bar")
    max_points: int = setting(10_000, "the most points a sweep starts (a larger grid is "
                              "refused with its size: raise this to run it)",
                              range=(1, 10**12))
    overwrite: bool = setting(False, "rerun points whose directory holds a run of other "
                              "settings, and rewrite the tables of a sweep directory made "
                              "with another grid (without it such a sweep is refused)")


def build_parser() -> argparse.ArgumentParser:
    """The parser of the sweep's own flags (those before ``--``); a bad one is one line,
    exit status 2, as every command says it."""
    return build_settings_parser(Settings, "python -m bandits.sweep",
                                 first_paragraph(__doc__) + DASHES)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = "python -m bandits.sweep " + shlex.join(argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    args = Settings(**vars(build_parser().parse_args(argv)))
    try:
        if args.redraw is not None:
            print(redraw(args.redraw).to_string(index=False))
            return 0
        with ctrl_c_on():
            return sweep(args, extra, command)
    except SweepError as e:
        print(f"bandits.sweep: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # outside the points' own Ctrl-C handling
        print("bandits.sweep: interrupted; finished points are kept: run the same command "
              "again to continue", file=sys.stderr)
        return 130


def _base_from_flags(extra: list[str]) -> dict[str, Any]:
    """Base settings from ``bandits.run`` flags (``-- --agent bbb --seeds 3``)."""
    if not extra:
        return {}
    try:
        given = given_values(runner.build_parser, extra)  # one parse, no defaults filled in
    except UsageError as e:
        raise SweepError(str(e)) from None
    return {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
            for k, v in given.items()}


def check_directory(out: Path, base: dict, grid: dict, points: list[Point],
                    problems: dict[str, str | None], overwrite: bool) -> None:
    """Refuse (one line) to mix this sweep with results of other settings already in
    ``out``: a point whose directory holds a run of other settings, or a sweep made with a
    grid that had points this one leaves out (its tables would silently drop them).
    With ``overwrite`` those points are rerun and the tables rewritten for this grid."""
    if overwrite:
        return
    try:
        before = json.loads((out / "sweep.json").read_text())
    except (OSError, ValueError):
        before = None
    if isinstance(before, dict) and "base" in before and "grid" in before:
        old = make_points(before["base"], before["grid"], out)
        kept = {p.name for p in points}
        dropped = [p.name for p in old if p.name not in kept]
        if dropped:
            raise SweepError(f"{out} holds a sweep with points this grid leaves out "
                             f"({dropped[0]}{' and more' if len(dropped) > 1 else ''}); give "
                             "its grid again (or a larger one), choose another --out, or pass "
                             "--overwrite to rewrite its tables for this grid")
    for p in points:
        if problems[p.name] is None:
            reason = stale_reason(p)
            if reason is not None:
                raise SweepError(f"point {p.name} in {out} holds a run of other settings "
                                 f"({reason}); choose another --out, or pass --overwrite to "
                                 "run it again")
            reason = lost_reason(p)
            if reason is not None:
                raise SweepError(f"point {p.name} in {out} cannot be continued ({reason}); "
                                 "give the --steps it reached, or pass --overwrite to run it "
                                 "again from step 0")


def sweep(args: Settings, extra: list[str], command: str) -> int:
    _check_flags(args)
    base, grid = _base_and_grid(args, extra)
    out = args.out
    assert out is not None  # _check_flags refuses a sweep without --out
    points = make_points(base, grid, out)  # every point checked before anything is made
    problems = {p.name: check_point(p) for p in points}
    _refuse_if_none_runs(points, problems, base, out)
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SweepError(f"cannot create {out}: {e.strerror}") from None
    try:  # one sweep at a time in a directory, as one run at a time in a run's
        claim_dir(out, OUTPUTS)
    except OutputDirError as e:
        raise SweepError(str(e)) from None
    try:
        return _sweep(args, out, base, grid, command, points, problems)
    finally:
        release_dir(out)
        if made and not any(out.iterdir()):  # refused before writing: leave no folder
            out.rmdir()


def _check_flags(args: Settings) -> None:
    """The sweep's own flags, each refused in one line (:class:`SweepError`) before
    anything is read or made: --out given, the ranges, no flag without effect, workers
    that fit in this machine's memory."""
    if args.out is None:
        raise SweepError("--out DIR is required: the sweep's directory")
    if args.workers < 1:
        raise SweepError(f"--workers must be a positive integer, got {args.workers}")
    try:
        check_ranges(args)  # every range the flags declare
        refuse_settings_without_effect(Settings, vars(args))  # a Ray flag on the local pool
    except UsageError as e:
        raise SweepError(str(e)) from None
    memory = machine_memory("cpu")
    if args.backend == "local" and memory and args.workers * WORKER_BYTES > 0.8 * memory:
        raise SweepError(f"--workers {args.workers} would need about "
                         f"{args.workers * WORKER_BYTES / 2**30:.1f} GiB (each worker process "
                         f"takes about {WORKER_BYTES / 2**20:.0f} MiB) and this machine has "
                         f"{memory / 2**30:.1f} GiB; give at most "
                         f"{max(1, int(0.8 * memory // WORKER_BYTES))}")
    if args.retries < 0:
        raise SweepError(f"--retries must be >= 0, got {args.retries}")


def _base_and_grid(args: Settings, extra: list[str]) -> tuple[dict, dict]:
    """The settings every point shares (``--grid``'s, then the run flags of ``extra``) and
    the grid (``--grid``'s, then ``--set``'s), refused where it is empty or has more than
    ``--max-points`` points."""
    base, grid = load_spec(args.grid)
    base.update(_base_from_flags(extra))
    grid.update(parse_sets(args.set))
    if not grid:
        raise SweepError("nothing to sweep: give --grid SPEC.toml with a [grid] table or --set")
    size = math.prod(len(v) for v in grid.values())
    if size > args.max_points:  # before a single point is made: a typo can ask for millions
        seeds, steps = base.get("seeds") or 1, base.get("steps")
        work = f", {size * seeds * steps:,} interactions in all" if steps else ""
        shape = " x ".join(str(len(v)) for v in grid.values())
        raise SweepError(f"this grid has {size:,} points ({shape}){work}, more than --max-points "
                         f"{args.max_points:,}; sweep fewer values, or raise --max-points "
                         "to run it")
    return base, grid


def _refuse_if_none_runs(points: list[Point], problems: dict[str, str | None], base: dict,
                         out: Path) -> None:
    """One line (:class:`SweepError`) where no point of the grid can run: a bad shared
    setting (or one reason for every point) said once, else the first point's reason."""
    if None in problems.values():
        return  # a bad point is reported with its name; the others run
    first = problems[points[0].name]
    shared = Point("base", {}, to_flags(base), str(out / "points" / "base"), dict(base))
    if len(set(problems.values())) == 1 and (len(points) > 1 or check_point(shared) == first):
        raise SweepError(first)
    others = len(points) - 1
    raise SweepError(f"point {points[0].name}: {first} (" + (
        f"and the {others} other point{'s' * (others > 1)} too: " if others else "")
        + "no point of this grid can run)")


def _sweep(args: Settings, out: Path, base: dict, grid: dict, command: str,
           points: list[Point], problems: dict[str, str | None]) -> int:
    check_directory(out, base, grid, points, problems, args.overwrite)
    start = time.perf_counter()
    seeds, steps = base.get("seeds"), base.get("steps")
    print(f"bandits.sweep: {len(points)} point{'s' if len(points) > 1 else ''} over "
          f"{', '.join(f'{k} ({len(v)})' for k, v in grid.items())}"
          + (f", {seeds} seed{'s' if seeds != 1 else ''}" if seeds else "")
          + (f", {steps:,} steps" if steps else "")
          + (f" each, {args.workers} worker{'s' if args.workers > 1 else ''}"
             if args.backend == "local" else " each, on Ray") + f" -> {out}", flush=True)
    progress = _Progress(len(points), args.no_progress)
    runnable = []
    for p in points:  # a bad setting is reported with its name; the others run
        if problems[p.name] is None:
            runnable.append(p)
        else:
            progress.done(p, {"status": "bad setting", "message": problems[p.name]})
    try:
        if args.backend == "local":
            _local(runnable, args.workers, args.retries, progress)
        else:
            _ray(runnable, args.address, args.workers, args.cpus_per_point,
                 args.gpus_per_point, args.retries, progress)
    except KeyboardInterrupt:
        progress.close()
        print(f"bandits.sweep: interrupted; {len(progress.results)} of {len(points)} points "
              "finished. Run the same command again to continue: finished points are kept "
              "and unfinished ones resume from their checkpoints", file=sys.stderr)
        return 130
    finally:
        progress.close()
    df = collect(points, progress.results)
    summary = write_results(out, df, list(grid))
    write_json({"command": command, "backend": args.backend, "base": base, "grid": grid,
                "swept": list(grid), "points": len(points),
                "failed": sum(r["status"] != "ok" for r in progress.results.values()),
                "wall_seconds": round(time.perf_counter() - start, 1)}, out / "sweep.json")
    if not summary.empty:
        cols = [*map(column, grid), "agent", "seeds", "cumulative_regret_mean",
                "cumulative_regret_std"]
        table = summary[cols].copy()
        for c in ("cumulative_regret_mean", "cumulative_regret_std"):
            table[c] = table[c].map(lambda v: f"{v:.1f}")
        print(table.to_string(index=False))
    failed = {k: r for k, r in progress.results.items() if r["status"] != "ok"}
    for name, r in failed.items():
        print(f"point {name}: {r['status']}: {r['message']}", file=sys.stderr)
    print(f"{len(points) - len(failed)} of {len(points)} points ok; results in {out}")
    return 1 if failed else 0

