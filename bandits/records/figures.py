"""Regret figures of a run's ``metrics.csv``: the drawing the simulator writes with its
outputs (``regret.png``, :func:`plot_regret`) and ``python -m bandits.plot`` redraws
(:mod:`bandits.analysis.plot`). One statistic per line and band (the median with the
seeds' 25-75 % band on a log axis, the mean with +-1 standard error on a linear one),
each agent's colour, line style and label from its spec, the legend in ranking order.
Every figure is written atomically (:func:`bandits.core.files.save_figure`)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from agents import SPECS  # noqa: E402
from bandits.core.files import save_figure  # noqa: E402
from bandits.core.style import DPI, styled  # noqa: E402
from bandits.records.regret import METRICS_COLUMNS  # noqa: E402
from bandits.records.tables import header, read_run_table  # noqa: E402

# Stable colours and labels per agent, from the agents' own specs, so every figure of the
# project reads the same way.
COLORS = {name: spec.color for name, spec in SPECS.items()}
STYLES = {name: spec.linestyle for name, spec in SPECS.items()}
LABELS = {name: spec.label for name, spec in SPECS.items()}
CROWDED = 6
"""More agents than this in a figure of one run: a panel beside the curves gives each
agent's value at the last step, and the legend goes below."""

# On a log axis the band is the seeds' interquartile range (it lives on a log scale, as a
# mean minus one std does not) and the y axis starts here when the regret grows past 10x it.
LOG_FLOOR = 100.0
# Line style of the i-th run in a combined figure (the same agent in several runs); a
# figure of one run gives each agent its spec's line style (STYLES).
LINESTYLES = ("-", "--", ":", "-.")
# The columns plot_regret needs besides the plotted one.
KEY_COLUMNS = ("agent", "seed", "step")


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
          labels: dict[str, str] | None) -> tuple[list, list[tuple[float, float, float]]]:
    """Each (run,) agent of ``metrics`` as a line and band on ``ax``; returns the lines
    in ranking order (lowest at the last step first) and, in the same order, each line's
    band and line at its last step (low, middle, high)."""
    has_run = "run" in metrics.columns
    agents = list(dict.fromkeys(metrics["agent"].astype(str)))
    colors = _agent_colors(agents)
    runs = list(dict.fromkeys(metrics["run"].astype(str))) if has_run else [None]
    # an agent in one run only keeps its own line style, as in every other figure; the
    # run's style tells apart the same agent in several runs
    repeated = has_run and metrics[["run", "agent"]].drop_duplicates()["agent"].duplicated().any()
    keys = ["run", "agent"] if has_run else ["agent"]
    handles: list[tuple[float, int, Any, tuple[float, float, float]]] = []
    top = 0.0
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
        style = (LINESTYLES[runs.index(run) % len(LINESTYLES)] if repeated
                 else STYLES.get(agent, "-"))
        (line,) = ax.plot(mid.index, mid, color=colors[agent], ls=style, lw=1.6,
                          label=f"{label} (n={n})", gid=agent)
        ax.fill_between(mid.index, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        end = (float(lo.iloc[-1]), float(mid.iloc[-1]), float(hi.iloc[-1]))
        handles.append((end[1], len(handles), line, end))  # the ranking at the end
        top = max(top, float(mid.max()))
    ax.set_xlabel("step")
    if log_y:
        ax.set_yscale("log")
        if top > 10 * LOG_FLOOR:
            ax.set_ylim(bottom=LOG_FLOOR)
    ax.grid(True, alpha=0.3, which="both" if log_y else "major")
    ranked = sorted(handles, key=lambda t: t[:2])
    return [h[2] for h in ranked], [h[3] for h in ranked]


def _ranking_panel(ax, lines: list, ends: list[tuple[float, float, float]], column: str,
                   last_step: int) -> None:
    """Each line's value at the last step (:func:`_draw`'s ``ends``: the figure's
    statistic), lowest at the top, in its colour: what a crowded figure's curves hide."""
    for y, (line, (lo, mid, hi)) in enumerate(zip(lines, ends)):
        ax.plot([lo, hi], [y, y], color=line.get_color(), lw=2.4, solid_capstyle="butt")
        ax.plot([mid], [y], "o", color=line.get_color(), ms=4)
    lows, highs = [e[0] for e in ends], [e[2] for e in ends]
    ax.set_yticks(range(len(lines)), [ln.get_label().rsplit(" (n=", 1)[0] for ln in lines],
                  fontsize=7)
    ax.set_ylim(len(lines) - 0.5, -0.5)  # lowest at the top
    if min(lows) > 0 and max(highs) > 4 * min(lows):  # far apart (uniform's regret)
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.set_title("at the last step, lowest first\ndot: the curve's line; bar: its band",
                 fontsize=7, color="0.4", loc="left")
    ax.set_xlabel(f"{_ylabel(column)} at step {last_step:,}")
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")


def _off_the_scale(ax, lines: list, ends: list[tuple[float, float, float]],
                   log_y: bool) -> None:
    """On a linear axis, a line ending far above all the others (uniform's) would flatten
    them: the axis stops above the others, and says which line runs off it (the ranking
    panel shows its value)."""
    if log_y or len(ends) < 3:
        return
    others = sorted(e[1] for e in ends)[:-1]
    top = ends[-1][1]  # lines are in ranking order: the highest last
    if others[-1] <= 0 or top <= 3 * others[-1]:
        return
    top = 1.15 * max(e[2] for e in ends[:-1])
    low = min(0.0, min(min(line.get_ydata()) for line in lines[:-1]))
    ax.set_ylim(low - 0.03 * (top - low), top)
    ax.text(0.99, 0.99, f"off the scale: {lines[-1].get_label().rsplit(' (n=', 1)[0]} "
            "(its value: in the panel)", transform=ax.transAxes, ha="right", va="top",
            fontsize=7, color="0.3")


def seed_count(metrics: pd.DataFrame) -> set[int]:
    """The numbers of seeds of the lines of ``metrics`` (one per line: run and agent)."""
    keys = ["run", "agent"] if "run" in metrics.columns else ["agent"]
    return set(metrics.groupby(keys, sort=False)["seed"].nunique().astype(int))


def seeds_text(n: int) -> str:
    return f"{n} seed{'' if n == 1 else 's'}"


def _statistic(log_y: bool, seeds: AbstractSet[int] = frozenset()) -> str:
    """What the lines and bands are, for the figure's subtitle; on a linear axis with the
    number of ``seeds`` the standard errors are over, and that a band is no test of a
    difference (every agent's run ``r`` saw the same draws: compare agents seed by seed)."""
    legend = "; legend: lowest at the end first"
    if log_y:
        return "line: median over seeds; band: 25-75 % of seeds" + legend
    if seeds == {1}:
        return "line: the one seed's regret; no band (one seed has no standard error)" + legend
    over = seeds_text(next(iter(seeds))) if len(seeds) == 1 else "each line's n seeds"
    return (f"line: mean over {over}{legend}\nbands: ±1 standard error over {over}; not a "
            "test of difference (the seeds are paired)")


def _ylabel(column: str) -> str:
    return "cumulative regret" if column == "cumulative_regret" else \
        "cumulative expected regret"


@styled
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
    agent's colour and the run's line style; without it, each agent has its spec's colour
    and line style. On a linear axis the line is the mean over
    seeds with a band of +-1 standard error; on a log axis (which starts at
    :data:`LOG_FLOOR` once the regret passes ten times it) the median with the seeds'
    interquartile range. The legend lists the lines in the order of their values at the
    last step, lowest first (the ranking).
    """
    crowded = "run" not in metrics.columns and metrics["agent"].nunique() > CROWDED
    if crowded:
        rows = math.ceil(metrics["agent"].nunique() / 3)
        fig, (ax, rank) = plt.subplots(1, 2, figsize=(10.0, 4.4 + 0.18 * rows),
                                       width_ratios=(2, 1), constrained_layout=True)
    else:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    lines, ends = _draw(ax, metrics, log_y, column, labels)
    ax.set_ylabel(_ylabel(column))
    if "run" in metrics.columns:  # long run names: below the axes, never over the data
        fig.set_size_inches(6.4, 4.2 + 0.22 * len(lines))
        fig.legend(lines, [h.get_label() for h in lines], frameon=False, loc="outside lower center",
                   fontsize=8, ncol=1)
    elif crowded:  # many agents: a ranking panel beside, the legend below
        _ranking_panel(rank, lines, ends, column, int(metrics["step"].max()))
        _off_the_scale(ax, lines, ends, log_y)
        fig.legend(lines, [h.get_label() for h in lines], frameon=False,
                   loc="outside lower center", fontsize=8, ncol=3)
    else:
        ax.legend(lines, [h.get_label() for h in lines], frameon=False, loc="best", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    # what the line and band are: above the axes, never under the legend or the data
    ax.set_title(_statistic(log_y, seed_count(metrics)), fontsize=7, color="0.4", loc="left")
    return fig


@styled
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
    seeds = set().union(*map(seed_count, frames))
    fig.suptitle(_statistic(log_y, seeds), fontsize=8, color="0.4")
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
    (:func:`bandits.records.tables.read_run_table`; one-line :class:`ValueError` otherwise)."""
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
    return f"{env}: {seeds_text(metrics['seed'].nunique())}, {int(metrics['step'].max())} steps"


def combined_name(dirs: Sequence[Path], stem: str) -> Path:
    """The default file of several runs' figure: beside the first, named for the runs
    (``regret_a+b.png``; long lists of names end in ``+N-more``)."""
    names = [d.resolve().name for d in dirs]
    joined = "+".join(names)
    if len(joined) > 120:
        kept = [n for k, n in enumerate(names) if len("+".join(names[:k + 1])) <= 100]
        joined = "+".join(kept or names[:1]) + f"+{len(names) - max(len(kept), 1)}-more"
    return dirs[0].resolve().parent / f"{stem}_{joined}.png"


def draw_run(out: Path, env: str, log_y: bool = False, act_samples: int = 1) -> None:
    """``out/regret.png`` (and ``.pdf``) of a run from its ``metrics.csv``, titled
    ``ENV: N seeds, T steps``: what the simulator draws after a run (one process or
    workers alike). Nothing when no step was recorded."""
    path = out / "metrics.csv"
    if not path.is_file() or not path.read_bytes().strip():
        return
    metrics = pd.read_csv(path)
    if metrics.empty:
        return
    title = f"{env}: {seeds_text(metrics['seed'].nunique())}, {int(metrics['step'].max())} steps"
    plot_regret(metrics, out / "regret.png", log_y=bool(log_y), title=title,
                labels=run_labels({"act_samples": act_samples}))
