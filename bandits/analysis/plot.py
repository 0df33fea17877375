"""Regret plots, drawn from ``metrics.csv`` alone, each checked as its run wrote it
(:func:`bandits.records.reader.read`: against the run's ``config.json`` where it has one).

    python -m bandits.plot DIR [DIR ...] [--log-y] [--expected] [--out FILE]

With one DIR and no ``--out`` this redraws ``DIR/regret.png`` and ``DIR/regret.pdf``
(realised regret), or with ``--expected`` writes ``DIR/expected_regret.png`` and
``DIR/expected_regret.pdf`` (cumulative expected regret) and leaves ``regret.png`` as it
is. The title is the run's (``ENV: N seeds, T steps``) when ``DIR/config.json`` is there.

With several DIRs, all their agents go in one figure: by default
``regret_<name1>+<name2>....png`` and ``.pdf`` beside the first DIR (named for the runs;
``expected_regret_...`` with ``--expected``); with ``--out FILE`` to FILE, and to no other
file, whose directory must exist. Each agent
keeps its colour and label, with ``[DIR name]`` appended when there are several DIRs;
the runs are told apart by line style (solid, dashed, dotted, dash-dot, cycling).

Every figure is written atomically (:func:`bandits.core.files.save_figure`). Errors (no or
malformed ``metrics.csv``, an output that cannot be written) are one line on stderr and
exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backend_bases import FigureCanvasBase

from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.command_line import first_paragraph
from bandits.core.config import setting
from bandits.core.files import save_figure
from bandits.core.processes import stop_on_ctrl_c
from bandits.records import reader
from bandits.records.figures import (
    DPI,
    combined_name,
    panels_figure,
    plot_regret,
    run_labels,
    run_title,
)


def _check_out(out: Path) -> str | None:
    """Why ``out`` cannot be written (checked before drawing), or None."""
    parent = out.parent
    if not parent.exists():
        return f"directory {parent} does not exist (create it first: mkdir -p {parent})"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    fmt = out.suffix.lstrip(".").lower() or "png"
    supported = FigureCanvasBase.get_supported_filetypes()
    if fmt not in supported:
        return f"unsupported format {fmt!r} (use one of: {', '.join(sorted(supported))})"
    return None


def _panels(args: Settings, frames: list[pd.DataFrame], column: str, stem: str) -> int:
    """``--panels``: each run in its own panel of one figure (:func:`panels_figure`)."""
    titles = args.titles or [d.resolve().name for d in args.dirs]
    if len(args.dirs) < 2 or len(titles) != len(args.dirs):
        return _error(f"--panels draws two or more DIRs, with one --titles entry per DIR "
                      f"({len(args.dirs)} DIRs, {len(titles)} titles)")
    out = args.out or combined_name(args.dirs, stem)
    why = _check_out(out)
    if why:
        return _error(why)
    fig = panels_figure(frames, titles, args.log_y, column, [_labels(d) for d in args.dirs])
    targets = [out] + ([out.with_suffix(".pdf")] if args.out is None else [])
    try:
        for target in targets:
            save_figure(fig, target, dpi=DPI)
    except OSError as e:
        return _error(f"cannot write {out}: {e.strerror or e}")
    finally:
        plt.close(fig)
    print(f"wrote {' and '.join(map(str, targets))}")
    return 0


def _disjoint(frames: list[pd.DataFrame]) -> bool:
    """Whether no agent is in two of the runs (then the runs need no tags)."""
    seen: set[str] = set()
    for f in frames:
        agents = set(f["agent"].astype(str))
        if agents & seen:
            return False
        seen |= agents
    return True


def _error(msg: str) -> int:
    print(f"bandits.plot: error: {msg}", file=sys.stderr)
    return 2


@dataclass
class Settings:
    """The settings of ``python -m bandits.plot``: its arguments and flags."""

    dirs: list[Path] = setting(None, "run output directories (with metrics.csv)",
                               positional=True, nargs="+", type=Path)
    log_y: bool = setting(False, "logarithmic y axis (default: linear)")
    expected: bool = setting(False, "plot cumulative expected regret instead of realised "
                             "regret (default file: DIR/expected_regret.png)")
    out: Path | None = setting(None, "write the figure to this file only; its directory "
                               "must exist (default for one DIR: DIR/regret.png, or "
                               "DIR/expected_regret.png with --expected; for several: "
                               "regret_<names>.png and .pdf beside the first DIR)", type=Path)
    panels: bool = setting(False, "with several DIRs: one panel per run, side by side on one "
                           "y axis, instead of one axis for all")
    titles: list[str] | None = setting(None, "with --panels: each panel's title, one per DIR "
                                       "(default: the directories' names)", nargs="+",
                                       type=str)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m bandits.plot``; a bad flag raises
    :class:`bandits.core.config.UsageError` (one line, exit status 2)."""
    return build_settings_parser(Settings, "python -m bandits.plot", first_paragraph(__doc__))


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.plot", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = Settings(**vars(build_parser().parse_args(argv)))
    if args.titles is not None and not args.panels:  # else nothing would show them
        return _error("--titles are the titles of the panels of --panels; give --panels "
                      "too, or leave out --titles")
    column = "cumulative_expected_regret" if args.expected else "cumulative_regret"
    try:  # each checked as its run wrote it (bandits.records.reader): a damaged file is one line
        frames = [reader.read(d / "metrics.csv", by_itself=True) for d in args.dirs]
    except (OSError, ValueError) as e:
        return _error(" ".join(str(e).split()))
    stem = "expected_regret" if args.expected else "regret"
    if args.panels:
        return _panels(args, frames, column, stem)
    out, metrics, title, labels = _figure(args, frames, stem)
    why = _check_out(out)
    if why is not None:
        return _error(f"cannot write {out}: {why}")
    twin = args.out is None  # --out FILE: that file alone, never one beside it
    try:
        plot_regret(metrics, out, args.log_y, column, title=title, pdf_twin=twin,
                    labels=labels)
    except OSError as e:
        target = e.filename or out
        return _error(f"cannot write {target}: {e.strerror or e}")
    print(f"wrote {out}"
          + (f" and {out.with_suffix('.pdf')}" if twin and out.suffix == ".png" else ""))
    return 0


def _figure(args: Settings, frames: list[pd.DataFrame], stem: str
            ) -> tuple[Path, pd.DataFrame, str | None, dict[str, str]]:
    """What one figure of the runs draws: its file, the rows, its title and the agents'
    labels. One run: its own file, title and labels; several runs with no agent in two:
    one figure of them all, untagged; else each run's agents tagged with the run."""
    if len(frames) == 1:
        out = args.out or args.dirs[0] / f"{stem}.png"
        return out, frames[0], run_title(args.dirs[0], frames[0]), _labels(args.dirs[0])
    out = args.out or combined_name(args.dirs, stem)
    if _disjoint(frames):
        titles = {run_title(d, f) for d, f in zip(args.dirs, frames)}
        labels = {k: v for d in args.dirs for k, v in _labels(d).items()}
        return (out, pd.concat(frames, ignore_index=True),
                titles.pop() if len(titles) == 1 else None, labels)
    names = [d.resolve().name for d in args.dirs]
    for i, (name, f) in enumerate(zip(names, frames)):
        # tell the runs apart; the index where names repeat
        f["run"] = name if names.count(name) == 1 else f"{i + 1}:{name}"
    return out, pd.concat(frames, ignore_index=True), None, {}


def _labels(run_dir: Path) -> dict[str, str]:
    """The legend labels a run's own settings give its agents (BBB's acting), or none
    without a readable ``config.json``."""
    try:
        return run_labels(json.loads((run_dir / "config.json").read_text()))
    except (OSError, ValueError, AttributeError):
        return {}
