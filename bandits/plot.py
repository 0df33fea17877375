"""Regret plots, drawn from ``metrics.csv`` alone.

    python -m bandits.plot DIR [DIR ...] [--log-y] [--out FILE]

With one DIR this redraws ``DIR/regret.png`` and ``DIR/regret.pdf``; with
several, or with ``--out``, all their agents go in one figure written to ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

# Stable colours per agent so every figure of the project reads the same way.
COLORS = {"bbb": "tab:blue", "greedy": "tab:red", "eps1": "tab:orange", "eps5": "tab:green",
          "uniform": "tab:gray", "bbb-lrt": "tab:cyan", "linfullpost": "tab:purple",
          "neurallinear": "tab:brown", "dropout": "tab:pink", "bootstrap": "tab:olive"}
LABELS = {"bbb": "Bayes by Backprop (Thompson)", "greedy": "greedy", "eps1": "1% greedy",
          "eps5": "5% greedy", "uniform": "uniform", "bbb-lrt": "BBB, local reparam.",
          "linfullpost": "LinFullPost", "neurallinear": "NeuralLinear",
          "dropout": "Dropout TS", "bootstrap": "Bootstrapped NN"}


def plot_regret(
    metrics: pd.DataFrame,
    path: Path,
    log_y: bool = False,
    column: str = "cumulative_regret",
    title: str | None = None,
) -> None:
    """Cumulative regret against step: per agent the mean over seeds, with a +-1 std band.

    Args:
        metrics: Rows of ``metrics.csv`` (columns ``agent, seed, step, <column>``).
        path: Output image; a ``.pdf`` twin is written beside a ``.png``.
        log_y: Logarithmic y axis (as the paper's Figure 6).
        column: Which cumulative quantity to draw.
        title: Figure title.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    for agent, df in metrics.groupby("agent", sort=False):
        wide = df.pivot(index="step", columns="seed", values=column)
        mean, std = wide.mean(axis=1), wide.std(axis=1, ddof=1).fillna(0.0)
        color = COLORS.get(str(agent))
        n = wide.shape[1]
        ax.plot(mean.index, mean, color=color, lw=1.6, label=f"{LABELS.get(agent, agent)} (n={n})")
        lo = (mean - std).clip(lower=1e-1) if log_y else mean - std
        ax.fill_between(mean.index, lo, mean + std, color=color, alpha=0.2, lw=0)
    ax.set_xlabel("step")
    ax.set_ylabel("cumulative regret" if column == "cumulative_regret"
                  else "cumulative expected regret")
    if log_y:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    ax.text(0.99, 0.01, "line: mean over seeds; band: ±1 std", transform=ax.transAxes,
            ha="right", va="bottom", fontsize=7, color="0.4")
    fig.savefig(path, dpi=150)
    if path.suffix == ".png":
        fig.savefig(path.with_suffix(".pdf"))
    plt.close(fig)


def read_metrics(run_dir: Path) -> pd.DataFrame:
    """Read ``run_dir/metrics.csv``, with a clear error when it is not there."""
    f = Path(run_dir) / "metrics.csv"
    if not f.is_file():
        raise FileNotFoundError(f"no metrics.csv in {run_dir}: pass a run's output directory")
    return pd.read_csv(f)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bandits.plot", description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+", type=Path, help="run output directories (with metrics.csv)")
    p.add_argument("--log-y", action="store_true", help="logarithmic y axis (default: linear)")
    p.add_argument("--expected", action="store_true",
                   help="plot cumulative expected regret instead of realised regret")
    p.add_argument("--out", type=Path, default=None,
                   help="write one combined figure here (default: DIR/regret.png for one DIR)")
    args = p.parse_args(argv)
    column = "cumulative_expected_regret" if args.expected else "cumulative_regret"
    try:
        frames = [read_metrics(d) for d in args.dirs]
    except (FileNotFoundError, pd.errors.ParserError) as e:
        print(f"bandits.plot: error: {e}", file=sys.stderr)
        return 2
    if len(frames) == 1 and args.out is None:
        out = args.dirs[0] / "regret.png"
        plot_regret(frames[0], out, args.log_y, column)
    else:
        if args.out is None:
            print("bandits.plot: error: several DIRs need --out FILE for the combined figure",
                  file=sys.stderr)
            return 2
        names = [d.resolve().name for d in args.dirs]
        for i, (name, f) in enumerate(zip(names, frames)):
            if len(frames) > 1:  # tell the runs apart; the index where names repeat
                tag = name if names.count(name) == 1 else f"{i + 1}:{name}"
                f["agent"] = f["agent"].astype(str) + f" [{tag}]"
        out = args.out
        plot_regret(pd.concat(frames, ignore_index=True), out, args.log_y, column)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
