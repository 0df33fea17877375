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
reported and the others go on; rerunning the sweep into the same ``DIR`` skips the
finished points and resumes the unfinished ones.

Results in ``DIR``: ``sweep.csv`` (one row per point, agent and seed: the swept
settings, final cumulative regret and expected regret, wall time, status),
``sweep_summary.csv`` (mean, std, min, max over seeds per point and agent),
``sweep.png``/``.pdf`` (final regret per point with +-1 std), and ``sweep.json`` (the
grid, the command, wall time). ``--redraw DIR`` rebuilds the table and plot from
``sweep.csv``.
"""

from __future__ import annotations

if __name__ == "__main__":  # before the slow imports: a Ctrl-C while starting is one line
    from bandits.startup import interruptible

    interruptible("bandits.sweep")

import argparse
import dataclasses
import itertools
import json
import math
import os
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from bandits import checkpoint
from bandits import run as runner
from bandits.config import (
    HelpFormatter,
    UsageError,
    first_paragraph,
    forbid_repeats,
    given_values,
    to_flags,
)
from bandits.diagnose import per_seed
from bandits.outputs import (
    OutputDirError,
    claim_dir,
    machine_memory,
    release_dir,
    save_figure,
    write_csv,
    write_json,
)
from bandits.processes import (
    ctrl_c_on,
    interrupt_workers,
    parent_stopped,
    pool_worker_init,
    sigint_handler,
)
from bandits.settings import RESUME_FLAGS, Config, config_from, identity

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

WORKER_BYTES = 400 * 2**20  # a local worker process with torch and a run loaded, about
STATUS = {0: "ok", 2: "bad setting", 3: "diverged", 130: "interrupted"}


class SweepError(Exception):
    """Bad input to the sweep as a whole: one line, exit status 2."""


@dataclass
class Point:
    """One configuration of the grid."""

    name: str  # its directory under DIR/points/
    settings: dict[str, Any]  # the swept settings' values
    argv: list[str]  # the bandits.run command line that runs it (without --out)
    out: str  # its output directory
    base: dict[str, Any] = dataclasses.field(default_factory=dict)  # the shared settings

    def config(self, **changes: Any):
        """Its :class:`bandits.settings.Config` (raises ``UsageError`` for a bad setting)."""
        return config_from({**self.base, **self.settings, "out": self.out, **changes})

    def command(self) -> str:
        return "python -m bandits.run " + shlex.join([*self.argv, "--out", self.out])


# --------------------------------------------------------------------------- the grid


def run_settings() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(Config)}


def _value(text: str) -> Any:
    """A command-line value as TOML would read it: numbers, booleans, else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_sets(items: Sequence[str]) -> dict[str, list]:
    """``["noise_sigma=0.05,0.1", ...]`` -> ``{"noise_sigma": [0.05, 0.1], ...}``."""
    grid: dict[str, list] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not values:
            raise SweepError(f"--set {item!r}: write NAME=V1,V2,... (for example "
                             "--set noise_sigma=0.05,0.1)")
        key = name.strip().replace("-", "_")
        if key in grid:
            raise SweepError(f"--set {key} is given twice; give its values once "
                             f"(--set {key}=V1,V2,...)")
        grid[key] = [_value(v.strip()) for v in values.split(",")]
    return grid


def load_spec(path: Path | None) -> tuple[dict[str, Any], dict[str, list]]:
    """``(base, grid)`` from a TOML spec (empty without one)."""
    if path is None:
        return {}, {}
    try:
        spec = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise SweepError(f"grid file {path} not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise SweepError(f"cannot read grid file {path}: {e}") from None
    unknown = set(spec) - {"base", "grid"}
    if unknown:
        raise SweepError(f"grid file {path}: unknown table [{sorted(unknown)[0]}]; "
                         "use [base] and [grid]")
    grid = spec.get("grid", {})
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"grid file {path}: [grid] {name} must be a non-empty list")
    return dict(spec.get("base", {})), dict(grid)


def point_name(settings: dict[str, Any]) -> str:
    def show(v: Any) -> str:
        return "-".join(map(str, v)) if isinstance(v, list) else str(v)

    name = "__".join(f"{k}={show(v)}" for k, v in settings.items()) or "base"
    return name.replace("/", "_").replace(" ", "_")


def make_points(base: dict[str, Any], grid: dict[str, list], out: Path) -> list[Point]:
    """Every combination of the grid's values, with the base settings, in the grid's order."""
    known = run_settings()
    for name in [*base, *grid]:
        if name not in known:
            raise SweepError(f"unknown setting {name!r}: use the names of bandits.run's "
                             "settings (python -m bandits.run --help; --noise-sigma is "
                             "noise_sigma)")
    for name in ("out", "overwrite", "resume"):
        if name in base or name in grid:
            raise SweepError(f"{name!r} is set by the sweep for every point; leave it out")
    both = set(base) & set(grid)
    if both:
        raise SweepError(f"{sorted(both)[0]!r} is both a base setting and a swept one")
    points = []
    for values in itertools.product(*grid.values()):
        settings = dict(zip(grid, values))
        name = point_name(settings)
        argv = to_flags({**base, **settings})
        points.append(Point(name, settings, argv, str(out / "points" / name), dict(base)))
    if len({p.name for p in points}) != len(points):
        raise SweepError("the grid lists a value twice")
    return points


def check_point(point: Point) -> str | None:
    """The one-line error of a point's settings, or ``None`` if bandits.run accepts them."""
    try:
        point.config()
    except UsageError as e:
        return str(e)
    return None


def requested(point: Point) -> dict[str, Any]:
    """The point's full configuration as ``config.json`` would record it."""
    return dataclasses.asdict(point.config())


def stale_reason(point: Point) -> str | None:
    """Why the run already in the point's directory is not the one asked for (settings
    or steps differ), or ``None`` when it is (or when there is none yet)."""
    saved = _saved_config(point.out)
    if saved is None:
        return None
    want = json.loads(json.dumps(requested(point), default=str))
    if saved.get("identity") != identity(want):
        for k in want:
            if k not in {*RESUME_FLAGS, "out", "overwrite"} and saved.get(k) != want[k]:
                return f"{k} is {saved.get(k)!r} there, {want[k]!r} asked for"
        return "its settings differ from those asked for"
    done = saved.get("steps_completed") or 0
    if done > want["steps"]:
        return f"it has done {done} steps, {want['steps']} asked for"
    return None


def _saved_config(out: str) -> dict | None:
    try:
        cfg = json.loads((Path(out) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return cfg if isinstance(cfg, dict) else None


# --------------------------------------------------------------------------- one point


def point_state(point: Point) -> str:
    """``"done"``, ``"resumable"`` (a checkpoint of this very configuration to continue
    from), ``"stale"`` (a run of other settings is there) or ``"new"``."""
    d = Path(point.out)
    cfg = _saved_config(point.out)
    if cfg is None:
        return "new"
    if stale_reason(point) is not None:
        return "stale"
    want = requested(point)["steps"]
    if ((d / "summary.csv").is_file() and cfg.get("steps_completed") == want
            and not cfg.get("running") and not cfg.get("interrupted")
            and not cfg.get("diverged")):
        return "done"
    return "resumable" if (d / checkpoint.NAME).is_file() else "new"


def run_point(point: Point) -> dict[str, Any]:
    """Run (or resume) one point in this process; never raises for a failed run."""
    # the sweep runs its points side by side: a point uses one process unless its own
    # settings say --workers
    os.environ["BANDITS_WORKERS"] = "1"
    if parent_stopped():  # queued in the pool before the sweep's Ctrl-C
        return {"point": point.name, "status": STATUS[130], "message": "not started"}
    state = point_state(point)
    if state == "done":
        return {"point": point.name, "status": "ok", "message": "finished earlier"}
    try:
        if state == "resumable":
            steps = requested(point)["steps"]
            outcome = runner.resume(Path(point.out), {"steps": steps, "no_progress": True},
                                    f"python -m bandits.run --resume {point.out} --steps {steps}")
        else:  # new, or stale under --overwrite (refused earlier otherwise)
            Path(point.out, checkpoint.NAME).unlink(missing_ok=True)
            outcome = runner.start(point.config(overwrite=True, no_progress=True),
                                   point.command())
    except UsageError as e:
        return {"point": point.name, "status": STATUS[2], "message": str(e)}
    message = (outcome.message or "").removeprefix("error: ")
    return {"point": point.name, "status": STATUS.get(outcome.status, f"exit {outcome.status}"),
            "message": message if outcome.status != 0 else ""}


# --------------------------------------------------------------------------- backends


def _local(points: list[Point], workers: int, retries: int, progress: _Progress,
           task=run_point) -> None:
    """Run ``task(point)`` for every point in a pool of ``workers`` processes; a point whose
    worker dies or raises is submitted again (to a new pool) up to ``retries`` times."""
    todo = {p.name: p for p in points}
    tries = dict.fromkeys(todo, 0)
    while todo:
        # spawn: a fresh interpreter per worker, as a Ray worker is (no forked torch state)
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=pool_worker_init,
                                 initargs=(os.getpid(), stop)) as ex:
            futures = {ex.submit(task, p): p for p in todo.values()}
            progress.running(min(workers, len(futures)))
            pending = set(futures)
            try:
                _gather(futures, pending, tries, retries, todo, workers, progress)
            except KeyboardInterrupt:  # pass it on once: each run stops at a checkpoint
                interrupt_workers(ex, stop)  # and the points the pool has queued never start
                # the workers stop at once; a second Ctrl-C must not leave them running
                with sigint_handler(signal.SIG_IGN):
                    ex.shutdown(wait=True, cancel_futures=True)
                raise


def _gather(futures: dict, pending: set, tries: dict, retries: int, todo: dict, workers: int,
            progress: _Progress) -> None:
    """Record the pool's results as they come; a failed point stays in ``todo`` to retry."""
    while pending:
        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
        for f in finished:
            p = futures[f]
            try:
                result = f.result()
            except Exception as e:  # its worker died (BrokenProcessPool) or it raised
                tries[p.name] += 1
                if tries[p.name] > retries:
                    progress.done(p, {"status": "failed", "message": _one_line(e)})
                    todo.pop(p.name)
                continue
            progress.done(p, result)
            todo.pop(p.name)
        progress.running(min(workers, len(pending)))


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
    task = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=retries)(run_point)
    futures = {task.remote(p): p for p in points}
    pending = list(futures)
    progress.running(min(len(pending), workers))
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        p = futures[ready[0]]
        try:
            result = ray.get(ready[0])
        except Exception as e:  # retries exhausted
            result = {"status": "failed", "message": _one_line(e)}
        progress.done(p, result)
        progress.running(min(len(pending), workers))


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[-1] if text else ''}"


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


# --------------------------------------------------------------------------- results


RESULT_COLUMNS = {"point", "agent", "seed", "seeds", "steps", "cumulative_regret",
                  "cumulative_expected_regret", "wall_seconds", "status", "message",
                  "cumulative_regret_mean", "cumulative_regret_std", "cumulative_regret_min",
                  "cumulative_regret_max", "cumulative_expected_regret_mean"}


def column(setting: str) -> str:
    """The table column of a swept setting: its name, or ``swept_<name>`` where the name is
    also a result column (sweeping ``seeds`` or ``seed``)."""
    return f"swept_{setting}" if setting in RESULT_COLUMNS else setting


def collect(points: list[Point], results: dict[str, dict]) -> pd.DataFrame:
    """One row per point, agent and seed (one row per point without results)."""
    rows = []
    for p in points:
        swept = {column(k): v for k, v in p.settings.items()}
        r = results.get(p.name, {"status": "not run", "message": ""})
        d = Path(p.out)
        metrics = d / "metrics.csv"
        if r["status"] == "ok" and metrics.is_file():
            cfg = json.loads((d / "config.json").read_text())
            wall = cfg.get("wall_seconds_per_agent", {})
            m = pd.read_csv(metrics)
            last = m[m["step"] == m["step"].max()]
            late = second_half(d / "phases.csv")
            for row in last.itertuples():
                rows.append({**swept, "point": p.name, "agent": row.agent,
                             "seed": row.seed, "steps": row.step,
                             "cumulative_regret": row.cumulative_regret,
                             "cumulative_expected_regret": row.cumulative_expected_regret,
                             **({} if late is None else {
                                 "expected_regret_per_step_second_half":
                                     late.get((row.agent, row.seed), math.nan)}),
                             "wall_seconds": wall.get(row.agent, math.nan),
                             "status": "ok", "message": ""})
        else:
            rows.append({**swept, "point": p.name, "status": r["status"],
                         "message": r.get("message", "")})
    return pd.DataFrame(rows)


def second_half(phases: Path) -> dict[tuple[str, int], float] | None:
    """Per (agent, seed): the expected regret per step over the second half of the run
    (whole phases of ``phases.csv`` from the middle on: exact counts), or None without
    the file."""
    try:
        p = pd.read_csv(phases)
    except (OSError, ValueError):
        return None
    if p.empty:
        return None
    end = int(p["end"].max())
    late = per_seed(p, end - end // 2)  # the phases that start after the middle
    return {(str(r.agent), int(r.seed)): float(r.expected_regret_per_step_last)
            for r in late.itertuples()}


def summarize(df: pd.DataFrame, settings: list[str]) -> pd.DataFrame:
    """Mean, std, min, max of the final regret over seeds, per point and agent (and, where
    the points recorded it, the mean and standard error of the expected regret per step
    over the second half of the run)."""
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame()
    keys = [*map(column, settings), "point", "agent"]
    g = ok.groupby(keys, sort=False, dropna=False)["cumulative_regret"]
    e = ok.groupby(keys, sort=False, dropna=False)["cumulative_expected_regret"]
    out = pd.DataFrame({"seeds": g.count(), "cumulative_regret_mean": g.mean(),
                        "cumulative_regret_std": g.std(ddof=1), "cumulative_regret_min": g.min(),
                        "cumulative_regret_max": g.max(),
                        "cumulative_expected_regret_mean": e.mean()})
    late = "expected_regret_per_step_second_half"
    if late in ok.columns:
        h = ok.groupby(keys, sort=False, dropna=False)[late]
        out[f"{late}_mean"] = h.mean()
        out[f"{late}_sem"] = h.std(ddof=1) / h.count() ** 0.5
        out["cumulative_regret_median"] = g.median()
    return out.reset_index().sort_values("cumulative_regret_mean", kind="stable")


def plot(summary: pd.DataFrame, settings: list[str], path: Path) -> None:
    """Final cumulative regret per point (mean +- 1 std over seeds), best at the top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [", ".join(f"{k} {r[column(k)]}" for k in settings) or r["point"]
              for _, r in summary.iterrows()]
    agents = list(dict.fromkeys(summary["agent"]))
    if len(agents) > 1:
        labels = [f"{lab} [{a}]" for lab, a in zip(labels, summary["agent"])]
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.32 * len(summary)))
    y = list(range(len(summary)))[::-1]
    ax.errorbar(summary["cumulative_regret_mean"], y, xerr=summary["cumulative_regret_std"],
                fmt="o", capsize=3, color="C0")
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("final cumulative regret (mean +- 1 std over seeds)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=150)
    save_figure(fig, path.with_suffix(".pdf"))
    plt.close(fig)


def write_results(out: Path, df: pd.DataFrame, settings: list[str]) -> pd.DataFrame:
    write_csv(df, out / "sweep.csv")
    summary = summarize(df, settings)
    write_csv(summary, out / "sweep_summary.csv")
    if not summary.empty:
        plot(summary, settings, out / "sweep.png")
    return summary


def redraw(out: Path) -> pd.DataFrame:
    """Rebuild ``sweep_summary.csv`` and the plot from ``sweep.csv``; where the points'
    directories are there (``DIR/points``, not shipped), the finished points' rows are
    collected from them again first, so a table gains what this version records (the
    second-half regret) without rerunning anything."""
    try:
        df = pd.read_csv(out / "sweep.csv")
        settings = json.loads((out / "sweep.json").read_text())["swept"]
    except (OSError, ValueError, KeyError) as e:
        raise SweepError(f"cannot redraw {out}: {e}") from None
    if (out / "points").is_dir():
        names = list(dict.fromkeys(df["point"]))
        status = df.groupby("point", sort=False)["status"].first()
        points = [Point(n, {}, [], str(out / "points" / n)) for n in names]
        fresh = collect(points, {n: {"status": status[n], "message": ""} for n in names})
        swept = df.groupby("point", sort=False)[list(map(column, settings))].first()
        fresh = fresh.drop(columns=[c for c in swept.columns if c in fresh.columns])
        df = swept.reset_index().merge(fresh, on="point", how="right")
        df = df[[*swept.columns, *[c for c in fresh.columns]]]
    return write_results(out, df, settings)


# --------------------------------------------------------------------------- CLI


DASHES = (" Flags after -- are bandits.run flags given to every point: python -m "
          "bandits.sweep --set lr=0.001,0.003 --out DIR -- --agent bbb --seeds 3")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bandits.sweep",
                                description=first_paragraph(__doc__) + DASHES,
                                formatter_class=HelpFormatter)
    p.add_argument("--grid", type=Path, default=None, help="TOML spec with [base] and [grid]")
    p.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="a swept setting and its values (repeatable)")
    p.add_argument("--out", type=Path, default=None,
                   help="sweep directory (required, except with --redraw)")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="where the points run")
    p.add_argument("--address", default=None, help="Ray cluster address (ray backend)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="points run at once (local pool size; a local Ray's CPUs)")
    p.add_argument("--cpus-per-point", type=float, default=1.0, help="Ray CPUs per point")
    p.add_argument("--gpus-per-point", type=float, default=0.0, help="Ray GPUs per point")
    p.add_argument("--retries", type=int, default=2,
                   help="times a point whose worker dies or raises is run again (a dead local "
                        "worker takes the points running beside it down too: they retry)")
    p.add_argument("--redraw", type=Path, default=None, metavar="DIR",
                   help="rebuild the summary and plot of DIR from its sweep.csv, then exit")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--overwrite", action="store_true",
                   help="rerun points whose directory holds a run of other settings, and "
                        "rewrite the tables of a sweep directory made with another grid "
                        "(without it such a sweep is refused)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = "python -m bandits.sweep " + shlex.join(argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    parser = build_parser()
    args = forbid_repeats(parser).parse_args(argv)
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


def sweep(args: argparse.Namespace, extra: list[str], command: str) -> int:
    if args.out is None:
        raise SweepError("--out DIR is required: the sweep's directory")
    if args.workers < 1:
        raise SweepError(f"--workers must be a positive integer, got {args.workers}")
    memory = machine_memory("cpu")
    if args.backend == "local" and memory and args.workers * WORKER_BYTES > 0.8 * memory:
        raise SweepError(f"--workers {args.workers} would need about "
                         f"{args.workers * WORKER_BYTES / 2**30:.1f} GiB (each worker process "
                         f"takes about {WORKER_BYTES / 2**20:.0f} MiB) and this machine has "
                         f"{memory / 2**30:.1f} GiB; give at most "
                         f"{max(1, int(0.8 * memory // WORKER_BYTES))}")
    if args.retries < 0:
        raise SweepError(f"--retries must be >= 0, got {args.retries}")
    base, grid = load_spec(args.grid)
    base.update(_base_from_flags(extra))
    grid.update(parse_sets(args.set))
    if not grid:
        raise SweepError("nothing to sweep: give --grid SPEC.toml with a [grid] table or --set")
    out = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SweepError(f"cannot create {out}: {e.strerror}") from None
    try:  # one sweep at a time in a directory, as one run at a time in a run's
        claim_dir(out)
    except OutputDirError as e:
        raise SweepError(str(e)) from None
    try:
        return _sweep(args, out, base, grid, command)
    finally:
        release_dir(out)


def _sweep(args: argparse.Namespace, out: Path, base: dict, grid: dict, command: str) -> int:
    points = make_points(base, grid, out)
    problems = {p.name: check_point(p) for p in points}
    if len(points) > 1 and len(set(problems.values())) == 1 and None not in problems.values():
        raise SweepError(next(iter(problems.values())))  # a bad shared setting: say it once
    check_directory(out, base, grid, points, problems, args.overwrite)
    start = time.perf_counter()
    seeds, steps = base.get("seeds"), base.get("steps")
    print(f"bandits.sweep: {len(points)} point{'s' if len(points) > 1 else ''} over "
          f"{', '.join(f'{k} ({len(v)})' for k, v in grid.items())}"
          + (f", {seeds} seeds" if seeds else "") + (f", {steps:,} steps" if steps else "")
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


if __name__ == "__main__":
    sys.exit(main())
