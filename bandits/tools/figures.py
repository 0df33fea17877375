"""Every figure the project's pages show, redrawn from its shipped files by the current
drawing rules, and a check that each one was (:data:`bandits.core.style.STAMP`, which
every figure carries in its metadata):

    python -m bandits.tools.figures            # redraw every figure that its files allow
    python -m bandits.tools.figures --check    # list those not drawn by the current rules

A run's ``regret.png`` is drawn from its ``metrics.csv``, or, where that is not shipped,
from ``phases.csv`` (a point at the end of every phase, which the title says). The
figures of :data:`RERUN` are made again by their (short) commands, and those of
:data:`NOT_REDRAWN` need files that only a long rerun makes; each says which.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from bandits.analysis import plot
from bandits.analysis.diagnose import draw, read_phases, read_probes
from bandits.core.command_line import Parser
from bandits.core.startup import handled
from bandits.core.style import STAMP
from bandits.experiments.sweep_results import redraw
from bandits.records import reader
from bandits.records.figures import plot_regret, read_metrics, run_labels, run_title

REPO = Path(__file__).resolve().parents[2]

RUNS = ("results/mushroom/quick", "results/mushroom/quick-10k", "results/mushroom/showdown",
        "results/mushroom/showdown-10k", "results/mushroom/paper-horizon",
        "results/mushroom/paper-horizon-kl-seen", "results/mushroom/paper-preset-h100",
        "results/mushroom/memory-20k/decay-0.3-50k",
        "results/mushroom/memory-20k/decay-0.3-50k-greedy", "results/mnist-bandit",
        "results/neural-bandits/mnist-reference", "results/neural-bandits/mushroom-reference",
        "results/neural-bandits/mushroom-reference/nu-lambda-1e-5")
"""Runs whose ``regret.png`` is the simulator's own figure of the run."""

PANELS = {  # the commands on the runs' pages
    "results/mushroom/memory-decay-0.3/figure6.png": [
        "results/mushroom/paper-horizon", "results/mushroom/memory-decay-0.3", "--panels",
        "--titles", "the paper's set-up: buffer 4,096, no decay",
        "the learner with a memory: buffer 50,000, decay 0.3", "--log-y"],
    "results/mushroom/memory-horizon/figure6.png": [
        "results/mushroom/paper-horizon", "results/mushroom/memory-horizon", "--panels",
        "--titles", "the paper's set-up: buffer 4,096, no decay",
        "the learner with a memory: buffer 50,000, decay 1", "--log-y"],
    "results/neural-bandits/mushroom-grid/regret.png": [
        "results/neural-bandits/mushroom-grid/final/neuralucb",
        "results/neural-bandits/mushroom-grid/final/neuralts",
        "results/neural-bandits/mushroom-grid/final/baselines"],
}
"""Figures of several runs (``python -m bandits.plot ARGS --out FIGURE``)."""

SWEEPS = ("results/mushroom/sweeps/bbb-open-settings", "results/mushroom/sweeps/fig6-bbb",
          "results/mushroom/sweeps/fig6-bbb-noise", "results/mushroom/sweeps/fig6-eps",
          "results/mushroom/sweeps/fig6-eps-wd", "results/mushroom/sweeps/fig6-ts",
          "results/mushroom/sweeps/neural-nu", "results/wheel/showdown")
"""Sweeps whose ``sweep.png`` is redrawn from ``sweep.csv`` (``bandits.sweep --redraw``)."""

DIAGNOSED = ("results/mushroom/paper-horizon", "results/mushroom/paper-horizon-kl-seen")
"""Runs whose ``diagnosis.png`` is redrawn from ``diagnosis.csv`` and ``probes.csv``."""

_MNIST = ("each model's per-epoch history (epochs.csv) and weight histograms "
          "(weights_hist.csv, snr_hist.csv) are not shipped; a rerun of the page's "
          "commands writes them")
NOT_REDRAWN = {f"results/mnist/2x1200/{f}": _MNIST
               for f in ("fig2_test_error.png", "fig3_weights.png", "fig4_snr.png")}
"""Figures the shipped files cannot redraw, each with what is missing."""

JOINED = {"results/mushroom/heldout/analysis/regret.png": (
    "results/mushroom/heldout/runs", "mushroom, held-out seeds")}
"""Figures of runs on other seeds joined agent by agent (each agent's rows are the bytes it
gives alone): the figure, the folder of its runs and the title's start."""

RERUN = {"results/regression/regression.png":
         "python -m bandits.regression --exact --out results/regression --overwrite",
         **{f"results/mnist/{d}/{f}": f"the four commands of results/mnist/{d}/README.md, "
            f"then python -m bandits.mnist report results/mnist/{d}"
            for d in ("lenet5", "2x400-retrained")
            for f in ("fig2_test_error.png", "fig3_weights.png", "fig4_snr.png")}}
"""Figures whose data are not shipped but that a CPU makes again (minutes for the toy
regression, minutes to a little over an hour for the MNIST retrainings): the commands that
remade them (each is checked to carry the current stamp, as the redrawn ones are)."""


def metrics_from_phases(phases: pd.DataFrame) -> pd.DataFrame:
    """A run's cumulative regret at the end of every phase (rows of ``metrics.csv``'s
    ``agent, seed, step, cumulative_regret``), from its ``phases.csv``."""
    phases = phases.sort_values(["agent", "seed", "end"], kind="stable")
    out = phases[["agent", "seed"]].copy()
    out["step"] = phases["end"]
    out["cumulative_regret"] = phases.groupby(["agent", "seed"], sort=False)["regret"].cumsum()
    return out.reset_index(drop=True)


def phase_length(phases: pd.DataFrame) -> int:
    """The steps of a run's usual phase (``phases.csv``): the spacing of its points."""
    return int((phases["end"] - phases["start"] + 1).mode().iloc[0])


def draw_run(run: Path) -> Path:
    """``run/regret.png`` as the simulator draws it, from ``metrics.csv`` or else from
    ``phases.csv``."""
    record = json.loads((run / "config.json").read_text())
    if (run / "metrics.csv").is_file():
        metrics, note = read_metrics(run), ""
    else:
        phases = reader.read(run / "phases.csv")
        metrics = metrics_from_phases(phases)
        note = f" (from phases.csv: a point every {phase_length(phases):,} steps)"
    title = (run_title(run, metrics) or run.name) + note
    plot_regret(metrics, run / "regret.png", log_y=bool(record.get("log_y")), title=title,
                pdf_twin=False, labels=run_labels(record))
    return run / "regret.png"


def draw_joined(figure: Path, runs: Path, name: str) -> Path:
    """``figure``: the cumulative regret of every run below ``runs`` (each with a
    ``phases.csv``), joined agent by agent, as the simulator draws one run."""
    folders = sorted(p for p in runs.iterdir() if (p / "phases.csv").is_file())
    phases = reader.joined([p / "phases.csv" for p in folders])  # each agent's seed once
    records = [reader.run_of(p).config for p in folders]
    metrics = metrics_from_phases(phases)
    title = (f"{name}: {metrics['seed'].nunique()} seeds, {int(metrics['step'].max()):,} "
             f"steps (a point every {phase_length(phases):,})")
    labels = {k: v for r in records for k, v in run_labels(r).items()}
    plot_regret(metrics, figure, log_y=all(r.get("log_y") for r in records), title=title,
                pdf_twin=False, labels=labels)
    return figure


def draw_panels(figure: Path, args: Sequence[str]) -> Path:
    if plot.main([*args, "--out", str(figure)]) != 0:
        raise RuntimeError(f"bandits.plot could not draw {figure}")
    return figure


def draw_sweep(sweep: Path) -> Path:
    redraw(sweep)
    return sweep / "sweep.png"


def draw_diagnosis(run: Path) -> Path:
    record = json.loads((run / "config.json").read_text())
    phases = read_phases(run)
    table = pd.read_csv(run / "diagnosis.csv")
    title = f"{record.get('env') or 'bandit'}: {phases['seed'].nunique()} seeds, " \
            f"{int(phases['end'].max())} steps"
    draw(table, read_probes(run), record.get("env"), run / "diagnosis.png", title,
         run_labels(record))
    return run / "diagnosis.png"


def redraws(root: Path = REPO) -> dict[str, Callable[[], Path]]:
    """Each figure the shipped files can redraw, by its path below ``root``."""
    # (misc: mypy infers no type for a lambda with default arguments)
    jobs: dict[str, Callable[[], Path]] = {}
    for run in RUNS:
        jobs[f"{run}/regret.png"] = lambda run=run: draw_run(root / run)  # type: ignore[misc]
    for figure, args in PANELS.items():
        jobs[figure] = lambda figure=figure, args=args: draw_panels(  # type: ignore[misc]
            root / figure, [str(root / a) if a.startswith("results/") else a for a in args])
    for figure, (runs, name) in JOINED.items():
        jobs[figure] = lambda figure=figure, runs=runs, name=name: draw_joined(  # type: ignore[misc]
            root / figure, root / runs, name)
    for sweep in SWEEPS:
        jobs[f"{sweep}/sweep.png"] = lambda sweep=sweep: draw_sweep(root / sweep)  # type: ignore[misc]
    for run in DIAGNOSED:
        jobs[f"{run}/diagnosis.png"] = lambda run=run: draw_diagnosis(root / run)  # type: ignore[misc]
    return jobs


def stamp(png: Path) -> str | None:
    """The drawing rules a PNG says it was drawn by (None: no stamp)."""
    from PIL import Image

    with Image.open(png) as image:
        return getattr(image, "text", {}).get("Style")


def stale(root: Path = REPO) -> list[str]:
    """The redrawable figures not drawn by the current rules, below ``root``."""
    return [f for f in [*redraws(root), *RERUN] if stamp(root / f) != STAMP]


def main(argv: Sequence[str] | None = None) -> int:
    """The command: a bad flag is one line, exit status 2, as in every command."""
    return handled("bandits.tools.figures", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bandits.tools.figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="list the figures not drawn by the current rules; exit 1 if any")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for f in old:
            print(f"{f}: not drawn by the current rules; python -m bandits.tools.figures "
                  "redraws it")
        return 1 if old else 0
    for figure, job in redraws().items():
        job()
        print(f"redrawn: {figure}")
    for figure, command in RERUN.items():
        print(f"made by a rerun: {figure}: {command}")
    for figure, why in NOT_REDRAWN.items():
        print(f"not redrawn: {figure}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
