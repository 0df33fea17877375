"""The results of a sweep: ``sweep.csv`` (per point, agent and seed), its summary over
the seeds and its plot, gathered from the points' own output directories."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from bandits.analysis.diagnose import per_seed
from bandits.core.files import save_figure, write_csv
from bandits.core.style import DPI, styled
from bandits.experiments.sweep_point import Point, SweepError

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
    # a list setting's value (hidden = [50, 50]) groups as it is written in sweep.csv
    ok = ok.assign(**{k: ok[k].map(lambda v: str(v) if isinstance(v, (list, tuple)) else v)
                      for k in keys})
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


@styled
def plot(summary: pd.DataFrame, settings: list[str], path: Path) -> None:
    """Final cumulative regret per point (mean +- 1 standard error over its seeds, with
    their number), best at the top."""
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
    n = summary["seeds"].astype(int)
    labels = [f"{lab} (n={k})" for lab, k in zip(labels, n)]
    se = summary["cumulative_regret_std"].fillna(0.0) / n.clip(lower=1) ** 0.5
    mean = summary["cumulative_regret_mean"]
    # no seed below zero: the bar stops at zero, never below the data's range
    floor = summary["cumulative_regret_min"] >= 0
    low = se.where(~floor, se.clip(upper=mean.clip(lower=0)))
    ax.errorbar(mean, y, xerr=[low, se], fmt="o", capsize=3, color="C0")
    ax.set_yticks(y, labels, fontsize=8)
    clipped = ", stopped at 0" if bool((low < se).any()) else ""
    ax.set_xlabel("final cumulative regret: dot, the mean over the n seeds; "
                  f"bar, ±1 standard error{clipped}")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
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
