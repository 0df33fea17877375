"""Regret plots, drawn from ``metrics.csv`` alone.

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

Every figure is written atomically (:func:`bandits.files.save_figure`). Errors (no or
malformed ``metrics.csv``, an output that cannot be written) are one line on stderr and
exit status 2.
"""

from __future__ import annotations

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.startup import start

    start("bandits.plot")

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from agents import SPECS  # noqa: E402
from bandits.config import build_parser as build_settings_parser  # noqa: E402
from bandits.config import first_paragraph, setting  # noqa: E402
from bandits.files import save_figure
from bandits.processes import stop_on_ctrl_c  # noqa: E402
from bandits.regret import METRICS_COLUMNS  # noqa: E402
from bandits.tables import header, read_run_table  # noqa: E402

# Stable colours and labels per agent, from the agents' own specs, so every figure of the
# project reads the same way.
COLORS = {name: spec.color for name, spec in SPECS.items()}
LABELS = {name: spec.label for name, spec in SPECS.items()}
CROWDED = 6
"""More agents than this in one figure: the legend goes beside the axes."""

# On a log axis the band is the seeds' interquartile range (it lives on a log scale, as a
# mean minus one std does not) and the y axis starts here when the regret grows past 10x it.
LOG_FLOOR = 100.0
# Line style of the i-th run in a combined figure (the same agent in several runs).
LINESTYLES = ("-", "--", ":", "-.")
# The columns plot_regret needs besides the plotted one.
KEY_COLUMNS = ("agent", "seed", "step")
DPI = 150


def _agent_colors(agents: Sequence[str]) -> dict[str, str]:
    """A colour per agent: COLORS where it has one; the others get distinct colours of the
    default cycle, those no agent of this figure already uses first."""
    colors = {a: COLORS[a] for a in agents if a in COLORS}
    cycle = [matplotlib.colors.to_hex(c)
             for c in plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])]
    used = {matplotlib.colors.to_hex(c) for c in colors.values()}
    free = [c for c in cycle if c not in used] or cycle
    i = 0
    for a in agents:
        if a not in colors:
            colors[a] = free[i % len(free)]
            i += 1
    return colors


def _draw(ax, metrics: pd.DataFrame, log_y: bool, column: str,
          labels: dict[str, str] | None) -> tuple[list, float]:
    """Each (run,) agent of ``metrics`` as a line and band on ``ax``; returns the lines
    in ranking order (lowest at the last step first) and the highest line's top."""
    has_run = "run" in metrics.columns
    agents = list(dict.fromkeys(metrics["agent"].astype(str)))
    colors = _agent_colors(agents)
    runs = list(dict.fromkeys(metrics["run"].astype(str))) if has_run else [None]
    keys = ["run", "agent"] if has_run else ["agent"]
    handles, top = [], 0.0
    for key, df in metrics.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        run, agent = (str(key[0]), str(key[1])) if has_run else (None, str(key[0]))
        wide = df.pivot(index="step", columns="seed", values=column).sort_index()
        n = wide.shape[1]
        if log_y:  # one statistic: the median and the seeds' middle half
            mid = wide.median(axis=1)
            lo, hi = wide.quantile(0.25, axis=1), wide.quantile(0.75, axis=1)
        else:  # the mean and its standard error over the seeds
            mid = wide.mean(axis=1)
            se = (wide.std(axis=1, ddof=1) / n ** 0.5).fillna(0.0)
            lo, hi = mid - se, mid + se
        label = (labels or {}).get(agent, LABELS.get(agent, agent)) + (
            f" [{run}]" if run is not None else "")
        style = LINESTYLES[runs.index(run) % len(LINESTYLES)]
        (line,) = ax.plot(mid.index, mid, color=colors[agent], ls=style, lw=1.6,
                          label=f"{label} (n={n})")
        ax.fill_between(mid.index, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        handles.append((float(mid.iloc[-1]), len(handles), line))  # the ranking at the end
        top = max(top, float(mid.max()))
    ax.set_xlabel("step")
    if log_y:
        ax.set_yscale("log")
        if top > 10 * LOG_FLOOR:
            ax.set_ylim(bottom=LOG_FLOOR)
    ax.grid(True, alpha=0.3, which="both" if log_y else "major")
    return [h for _, _, h in sorted(handles, key=lambda t: t[:2])], top


def _statistic(log_y: bool) -> str:
    return ("line: median over seeds; band: 25-75 % of seeds" if log_y
            else "line: mean over seeds; band: ±1 standard error") + \
        "; legend: lowest at the end first"


def _ylabel(column: str) -> str:
    return "cumulative regret" if column == "cumulative_regret" else \
        "cumulative expected regret"


def regret_figure(
    metrics: pd.DataFrame,
    log_y: bool = False,
    column: str = "cumulative_regret",
    title: str | None = None,
    labels: dict[str, str] | None = None,
) -> Figure:
    """The figure of :func:`plot_regret`, not saved (the caller closes it).

    ``metrics`` may have a ``run`` column (the tag of the run directory, for combined
    figures): then each (run, agent) is a line labelled ``"<agent label> [<run>]"``, the
    agent's colour and the run's line style. On a linear axis the line is the mean over
    seeds with a band of +-1 standard error; on a log axis (which starts at
    :data:`LOG_FLOOR` once the regret passes ten times it) the median with the seeds'
    interquartile range. The legend lists the lines in the order of their values at the
    last step, lowest first (the ranking).
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    lines, _ = _draw(ax, metrics, log_y, column, labels)
    ax.set_ylabel(_ylabel(column))
    if "run" in metrics.columns:  # long run names: below the axes, never over the data
        fig.set_size_inches(6.4, 4.2 + 0.22 * len(lines))
        fig.legend(lines, [h.get_label() for h in lines], frameon=False, loc="outside lower center",
                   fontsize=8, ncol=1)
    elif len(lines) > CROWDED:  # many agents: beside the axes, never over the data
        fig.set_size_inches(8.4, 4.2)
        fig.legend(lines, [h.get_label() for h in lines], frameon=False, loc="outside right upper",
                   fontsize=8)
    else:
        ax.legend(lines, [h.get_label() for h in lines], frameon=False, loc="best", fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    ax.text(0.01, 0.99, _statistic(log_y), transform=ax.transAxes,
            ha="left", va="top", fontsize=7, color="0.4")
    return fig


def panels_figure(frames: Sequence[pd.DataFrame], titles: Sequence[str], log_y: bool = False,
                  column: str = "cumulative_regret",
                  labels: Sequence[dict[str, str] | None] = ()) -> Figure:
    """One panel per run, side by side on one y axis, each titled, each agent in its
    colour in every panel (:func:`plot_regret`'s lines and bands)."""
    n = len(frames)
    fig, axes = plt.subplots(1, n, figsize=(5.0 * n, 4.4), sharey=True, constrained_layout=True)
    for k, (ax, metrics, title) in enumerate(zip(axes, frames, titles)):
        lines, _ = _draw(ax, metrics, log_y, column, labels[k] if k < len(labels) else None)
        ax.legend(lines, [h.get_label() for h in lines], frameon=False, loc="lower right",
                  fontsize=8)
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel(_ylabel(column))
    fig.suptitle(_statistic(log_y), fontsize=8, color="0.4")
    return fig


def plot_regret(
    metrics: pd.DataFrame,
    path: Path,
    log_y: bool = False,
    column: str = "cumulative_regret",
    title: str | None = None,
    pdf_twin: bool = True,
    labels: dict[str, str] | None = None,
) -> None:
    """Cumulative regret against step: per agent the mean over seeds with a band of +-1
    standard error, or on a log axis the median with the seeds' 25-75 % band.

    Args:
        metrics: Rows of ``metrics.csv`` (columns ``agent, seed, step, <column>``; an
            optional ``run`` column for combined figures, see :func:`regret_figure`).
        path: Output image; a ``.pdf`` twin is written beside a ``.png`` (unless
            ``pdf_twin`` is false: a file named by the user is the only one written).
            Both are written atomically.
        log_y: Logarithmic y axis (as the paper's Figure 6).
        column: Which cumulative quantity to draw.
        title: Figure title.
        labels: The agents' legend labels where not their specs' (:func:`run_labels`).

    Raises:
        OSError: A file cannot be written (it is then left as it was).
    """
    path = Path(path)
    fig = regret_figure(metrics, log_y, column, title, labels)
    twin = pdf_twin and path.suffix == ".png"
    targets = [path] + ([path.with_suffix(".pdf")] if twin else [])
    try:
        for target in targets:
            try:
                save_figure(fig, target, dpi=DPI)
            except OSError as e:  # name the target, not save_figure's temporary file
                raise OSError(e.errno, e.strerror or str(e), str(target)) from e
    finally:
        plt.close(fig)


def run_labels(settings: dict) -> dict[str, str]:
    """Legend labels that depend on a run's settings: BBB acting on the mean of several
    weight samples is not Thompson sampling, and says so."""
    samples = settings.get("act_samples", 1) or 1
    return {"bbb": f"Bayes by Backprop (mean of {samples} samples)"} if samples > 1 else {}


def read_metrics(run_dir: Path, column: str = "cumulative_regret") -> pd.DataFrame:
    """Read ``run_dir/metrics.csv`` for drawing ``column``, checked whole
    (:func:`bandits.tables.read_run_table`; one-line :class:`ValueError` otherwise)."""
    f = Path(run_dir) / "metrics.csv"
    present = header(f)
    numeric = ["step", column, *[c for c in METRICS_COLUMNS[3:] if c in present and c != column]]
    metrics = read_run_table(f, [*KEY_COLUMNS, column], numeric=numeric, grid=["step"])
    if metrics.duplicated(list(KEY_COLUMNS)).any():  # the rest is read_run_table's
        raise ValueError(f"{f} repeats (agent, seed, step) rows")
    return metrics


def run_title(run_dir: Path, metrics: pd.DataFrame) -> str | None:
    """The title the run drew (``ENV: N seeds, T steps``), or None without a readable
    ``run_dir/config.json`` naming the env."""
    try:
        env = json.loads((Path(run_dir) / "config.json").read_text()).get("env")
    except (OSError, ValueError, AttributeError):
        return None
    if not env:
        return None
    return f"{env}: {metrics['seed'].nunique()} seeds, {int(metrics['step'].max())} steps"


def combined_name(dirs: Sequence[Path], stem: str) -> Path:
    """The default file of several runs' figure: beside the first, named for the runs
    (``regret_a+b.png``; long lists of names end in ``+N-more``)."""
    names = [d.resolve().name for d in dirs]
    joined = "+".join(names)
    if len(joined) > 120:
        kept = [n for k, n in enumerate(names) if len("+".join(names[:k + 1])) <= 100]
        joined = "+".join(kept or names[:1]) + f"+{len(names) - max(len(kept), 1)}-more"
    return dirs[0].resolve().parent / f"{stem}_{joined}.png"


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
    labels = []
    for d in args.dirs:
        try:
            labels.append(run_labels(json.loads((d / "config.json").read_text())))
        except (OSError, ValueError, AttributeError):
            labels.append({})
    fig = panels_figure(frames, titles, args.log_y, column, labels)
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


def _error(msg: str) -> int:
    print(f"bandits.plot: error: {msg}", file=sys.stderr)
    return 2


@dataclass
class Settings:
    """The settings of ``python -m bandits.plot``: its arguments and flags."""

    dirs: list[Path] | None = setting(None, "run output directories (with metrics.csv)",
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
    """The parser of ``python -m bandits.plot``; its errors are argparse's (the usage, one
    line, exit status 2)."""
    return build_settings_parser(Settings, "python -m bandits.plot", first_paragraph(__doc__),
                                 parser_class=argparse.ArgumentParser)


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.plot", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = Settings(**vars(build_parser().parse_args(argv)))
    column = "cumulative_expected_regret" if args.expected else "cumulative_regret"
    try:
        frames = [read_metrics(d, column) for d in args.dirs]
    except (OSError, ValueError) as e:
        return _error(" ".join(str(e).split()))
    stem = "expected_regret" if args.expected else "regret"
    if args.panels:
        return _panels(args, frames, column, stem)
    labels = {}
    if len(frames) == 1:  # a run's own settings name its agents (BBB's acting)
        try:
            labels = run_labels(json.loads((args.dirs[0] / "config.json").read_text()))
        except (OSError, ValueError, AttributeError):
            labels = {}
    if args.out is None and len(frames) == 1:
        out = args.dirs[0] / f"{stem}.png"
        metrics, title = frames[0], run_title(args.dirs[0], frames[0])
    else:
        out = args.out or combined_name(args.dirs, stem)
        if len(frames) == 1:
            metrics, title = frames[0], run_title(args.dirs[0], frames[0])
        else:
            names = [d.resolve().name for d in args.dirs]
            for i, (name, f) in enumerate(zip(names, frames)):
                # tell the runs apart; the index where names repeat
                f["run"] = name if names.count(name) == 1 else f"{i + 1}:{name}"
            metrics, title = pd.concat(frames, ignore_index=True), None
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


if __name__ == "__main__":
    sys.exit(main())
