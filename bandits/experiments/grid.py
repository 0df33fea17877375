"""The grid of a sweep: its points (one ``bandits.run`` configuration each, with all
its seeds), read from a spec file and ``--set``, checked before anything runs, and run
one at a time (:func:`run_point`, in whichever process a backend gives it)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bandits.core import checkpoint
from bandits.core.command_line import to_flags
from bandits.core.config import UsageError
from bandits.core.data import DataError
from bandits.core.processes import (
    parent_stopped,
)
from bandits.experiments.sweep_point import STATUS, Point, SweepError
from bandits.simulator import run as runner
from bandits.simulator.resume import RESUME_FLAGS, RUN, identity
from bandits.simulator.settings import Flags, check_data

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib


def run_settings() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(Flags)}


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
    """The one-line error of a point's settings or of the data they read (a data file
    missing, malformed or changed), or ``None`` if bandits.run accepts them."""
    try:
        check_data(point.config())
    except (UsageError, DataError) as e:
        return str(e)
    return None


def requested(point: Point) -> dict[str, Any]:
    """The point's full configuration as ``config.json`` would record it."""
    return point.config().flat()


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
    if (d / checkpoint.NAME).is_file() or "parts" in cfg:  # a worker run: its parts resume
        return "resumable"
    return "new"


def lost_reason(point: Point) -> str | None:
    """Why the point cannot go on although its directory holds results of the settings
    asked for: they reach a step short of the one asked for, and the checkpoint to
    continue them from is gone (checkpoints stay out of git). ``None`` otherwise."""
    cfg = _saved_config(point.out)
    if cfg is None or point_state(point) != "new":
        return None
    done = cfg.get("steps_completed") or 0
    if done > 0 or Path(point.out, "summary.csv").is_file():
        return (f"it holds results up to step {done} but no {checkpoint.NAME} to continue "
                "them from")
    return None


def run_point(point: Point) -> dict[str, Any]:
    """Run (or resume) one point in this process; never raises for a failed run."""
    # the sweep runs its points side by side: a point uses one process unless its own
    # settings say --workers
    one = {} if "workers" in {**point.base, **point.settings} else {"workers": 1}
    if parent_stopped():  # queued in the pool before the sweep's Ctrl-C
        return {"point": point.name, "status": STATUS[130], "message": "not started"}
    state = point_state(point)
    if state == "done":
        return {"point": point.name, "status": "ok", "message": "finished earlier"}
    try:
        if state == "resumable":
            steps = requested(point)["steps"]
            outcome = runner.resume(Path(point.out),
                                    {"steps": steps, "no_progress": True, **one},
                                    f"{RUN.resume_command(point.out)} --steps {steps}")
        else:  # new, or stale under --overwrite (refused earlier otherwise)
            Path(point.out, checkpoint.NAME).unlink(missing_ok=True)
            outcome = runner.start(point.config(overwrite=True, no_progress=True, **one),
                                   point.command())
    except (UsageError, DataError) as e:  # data changed since the check: the point's error
        return {"point": point.name, "status": STATUS[2], "message": str(e)}
    message = (outcome.message or "").removeprefix("error: ")
    return {"point": point.name, "status": STATUS.get(outcome.status, f"exit {outcome.status}"),
            "message": message if outcome.status != 0 else ""}
