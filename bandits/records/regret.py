"""The regret record of a run: every step of every agent and seed, in memory
(:class:`RegretLog`, preallocated), and the tables made from it: ``metrics.csv`` (a
bounded number of rows per run; plotting and analysis read only the files, as bsuite
does, so a plot can be redrawn without rerunning), ``summary.csv`` and ``phases.csv``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

METRICS_COLUMNS = [
    "agent", "seed", "step", "action", "reward", "regret", "expected_regret",
    "cumulative_regret", "cumulative_expected_regret",
]


def logged_steps(steps: int, max_points: int) -> np.ndarray:
    """The steps (1-based) written to ``metrics.csv``.

    Every step when ``steps <= max_points``; otherwise about ``max_points``
    steps, half evenly spaced and half log-spaced (so both linear and log
    plots are smooth), always including the first and the last step.
    """
    if steps <= max_points:
        return np.arange(1, steps + 1)
    half = max(max_points // 2, 2)
    lin = np.linspace(1, steps, half)
    log = np.geomspace(1, steps, half)
    return np.unique(np.concatenate([lin, log, [1, steps]]).round().astype(np.int64))


def phase_length(steps: int) -> int:
    """Steps per phase of ``phases.csv``: a round number (1, 2 or 5 times a power of ten)
    giving about 20 to 50 phases."""
    target = max(steps / 25, 1)
    base = 10 ** int(np.floor(np.log10(target)))
    return int(min((m * base for m in (1, 2, 5, 10) if m * base >= target), default=base))


class RegretLog:
    """Per-step records of every (agent, run), preallocated for the whole horizon."""

    _ARRAYS = ("action", "reward", "regret", "expected_regret", "optimal_action", "item")

    def __init__(self, agents: list[str], seeds: list[int], steps: int,
                 columns: Sequence[str] = ()) -> None:
        self.agents, self.seeds, self.steps = agents, seeds, steps
        shape = (len(agents), len(seeds), steps)
        self.action = np.zeros(shape, dtype=np.int64)
        self.reward = np.zeros(shape)
        self.regret = np.zeros(shape)
        self.expected_regret = np.zeros(shape)
        self.optimal_action = np.zeros(shape, dtype=np.int64)
        self.item = np.full(shape, -1, dtype=np.int32)  # the data item shown (-1: none)
        # the env's and the agents' declared columns (NaN where an agent has none)
        self.columns = {c: np.full(shape, np.nan) for c in columns}
        self.done = 0  # steps completed by every agent

    def record(self, k: int, t: int, actions, rewards, info: dict) -> None:
        """Store step ``t`` (0-based) of agent ``k``; regret comes from the env's ``info``."""
        self.action[k, :, t] = actions
        self.reward[k, :, t] = rewards
        self.regret[k, :, t] = info["regret"]
        self.expected_regret[k, :, t] = info["expected_regret"]
        if "optimal_action" in info:
            self.optimal_action[k, :, t] = info["optimal_action"]
        if "item" in info:
            self.item[k, :, t] = info["item"]
        for c, values in self.columns.items():
            if c in info:
                values[k, :, t] = info[c]

    def state_dict(self) -> dict:
        """The records of the completed steps (for checkpoints)."""
        n = self.done
        return {"done": n, **{k: torch.from_numpy(getattr(self, k)[:, :, :n].copy())
                              for k in self._ARRAYS},
                **{f"column:{c}": torch.from_numpy(v[:, :, :n].copy())
                   for c, v in self.columns.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore the records of ``state["done"]`` steps (the horizon may have grown)."""
        n = int(state["done"])
        if n > self.steps:
            raise ValueError(f"the state holds {n} steps, more than this log's {self.steps}")
        for k in self._ARRAYS:
            if k in state:  # a checkpoint of an earlier version may lack "item"
                getattr(self, k)[:, :, :n] = state[k].numpy()
        for c, values in self.columns.items():
            if f"column:{c}" in state:
                values[:, :, :n] = state[f"column:{c}"].numpy()
        self.done = n

    def final_cumulative(self) -> tuple[np.ndarray, np.ndarray]:
        """Cumulative regret and expected regret at the last completed step: ``(agents, seeds)``."""
        n = self.done
        return self.regret[:, :, :n].sum(-1), self.expected_regret[:, :, :n].sum(-1)

    def metrics_frame(self, max_points: int) -> pd.DataFrame:
        """Tidy rows at :func:`logged_steps` of the completed steps."""
        n = self.done
        if n == 0:
            return pd.DataFrame(columns=[*METRICS_COLUMNS, *self.columns])
        steps = logged_steps(n, max_points)
        i = steps - 1
        cum_r = np.cumsum(self.regret[:, :, :n], axis=-1)[:, :, i]
        cum_e = np.cumsum(self.expected_regret[:, :, :n], axis=-1)[:, :, i]
        A, S, L = len(self.agents), len(self.seeds), len(steps)
        return pd.DataFrame({
            "agent": np.repeat(self.agents, S * L),
            "seed": np.tile(np.repeat(self.seeds, L), A),
            "step": np.tile(steps, A * S),
            "action": self.action[:, :, i].reshape(-1),
            "reward": self.reward[:, :, i].reshape(-1),
            "regret": self.regret[:, :, i].reshape(-1),
            "expected_regret": self.expected_regret[:, :, i].reshape(-1),
            "cumulative_regret": cum_r.reshape(-1),
            "cumulative_expected_regret": cum_e.reshape(-1),
            **{c: v[:, :, i].reshape(-1) for c, v in self.columns.items()},
        })

    def phases_frame(self, n_actions: int) -> pd.DataFrame:
        """Per agent, seed and phase (a window of :func:`phase_length` steps): the regret
        and expected regret paid in it and how often each action was taken when each
        action was the best (``a{i}_best{j}``: action i taken, action j optimal). Exact
        counts over every step, whatever ``metrics.csv`` keeps."""
        n = self.done
        if n == 0:
            return pd.DataFrame()
        w = phase_length(n)
        starts = np.arange(0, n, w)
        rows = []
        for k, agent in enumerate(self.agents):
            for r, seed in enumerate(self.seeds):
                for s0 in starts:
                    s1 = min(int(s0) + w, n)
                    a = self.action[k, r, s0:s1]
                    b = self.optimal_action[k, r, s0:s1]
                    row = {"agent": agent, "seed": seed, "start": int(s0) + 1, "end": int(s1),
                           "regret": self.regret[k, r, s0:s1].sum(),
                           "expected_regret": self.expected_regret[k, r, s0:s1].sum()}
                    counts = np.bincount(a * n_actions + b, minlength=n_actions**2)
                    for i in range(n_actions):
                        for j in range(n_actions):
                            row[f"a{i}_best{j}"] = int(counts[i * n_actions + j])
                    rows.append(row)
        return pd.DataFrame(rows)

    def summary_frame(self, losses: dict[str, float] | None = None) -> pd.DataFrame:
        """Per agent: final cumulative regret (mean, std, min, max over seeds; the std
        empty for one seed) and the training loss at the last update (mean over seeds;
        empty if it never learned).

        Only results: the same run gives the same bytes (wall times go to config.json)."""
        losses = losses or {}
        cum_r, cum_e = self.final_cumulative()
        # a standard deviation over one seed is undefined: an empty cell, not 0
        several = len(self.seeds) > 1
        return pd.DataFrame({
            "agent": self.agents,
            "steps": self.done,
            "seeds": len(self.seeds),
            "cumulative_regret_mean": cum_r.mean(1),
            "cumulative_regret_std": cum_r.std(1, ddof=1) if several else np.nan,
            "cumulative_regret_min": cum_r.min(1),
            "cumulative_regret_max": cum_r.max(1),
            "cumulative_expected_regret_mean": cum_e.mean(1),
            "cumulative_expected_regret_std": cum_e.std(1, ddof=1) if several else np.nan,
            "train_loss": [losses.get(a, np.nan) for a in self.agents],
        })


def ranking(metrics: pd.DataFrame, column: str = "cumulative_regret") -> pd.DataFrame:
    """Agents ranked by their mean ``column`` at the last step of ``metrics.csv`` rows
    (every agent at that step): mean, standard error, min and max over the seeds, and
    ``next``: the seed-by-seed (paired: every agent's run ``r`` saw the same contexts and
    reward draws) difference to the next agent in the ranking with its standard error, or
    "not separated at N seeds" when that difference is within two standard errors."""
    last = metrics[metrics["step"] == metrics["step"].max()]
    wide = last.pivot(index="seed", columns="agent", values=column)
    order = wide.mean().sort_values(kind="stable").index.tolist()
    n = len(wide)
    rows = []
    for i, agent in enumerate(order):
        x = wide[agent]
        row = {"agent": agent, "mean": x.mean(),
               "s.e.": x.std(ddof=1) / np.sqrt(n) if n > 1 else float("nan"),
               "min": x.min(), "max": x.max(), "next": ""}
        if i + 1 < len(order):
            d = wide[order[i + 1]] - x
            se = d.std(ddof=1) / np.sqrt(n) if n > 1 else float("nan")
            row["next"] = (f"{d.mean():.0f} +- {se:.0f} lower than {order[i + 1]}"
                           if n > 1 and d.mean() > 2 * se else
                           f"not separated from {order[i + 1]} at {n} seed{'s' if n > 1 else ''}")
        rows.append(row)
    return pd.DataFrame(rows)


def summary_text(out: Path) -> str:
    """The cumulative regret of each agent at one common step, from the run's
    ``summary.csv``, ``metrics.csv`` and ``config.json``: lowest mean first, with its
    standard error over the seeds and whether the seeds separate it from the next agent
    (:func:`bandits.records.regret.ranking`); agents stopped at different steps are listed each
    with its step, not ranked. Empty when the files are not there."""
    try:
        summary = pd.read_csv(out / "summary.csv")
        record = json.loads((out / "config.json").read_text())
    except (OSError, ValueError):
        return ""
    if summary.empty:
        return ""
    wall = record.get("wall_seconds_per_agent", {})
    summary = summary.assign(wall_seconds=[wall.get(a, float("nan")) for a in summary["agent"]])
    steps = dict(zip(summary["agent"], summary["steps"]))
    if len(set(steps.values())) > 1:
        cols = ["agent", "steps", "cumulative_regret_mean", "cumulative_regret_std",
                "wall_seconds"]
        return (f"The agents stopped at different steps "
                f"({', '.join(f'{a} {s}' for a, s in steps.items())}); cumulative regret of "
                f"each at its own step, not comparable until resumed to one step:\n"
                + _shown(summary[cols]))
    try:
        metrics = pd.read_csv(out / "metrics.csv")
    except (OSError, ValueError):
        return ""
    table = ranking(metrics).merge(summary[["agent", "wall_seconds"]], on="agent")
    seeds = int(summary["seeds"].iloc[0])
    error = ("standard error over the seeds" if seeds > 1
             else "n/a: one seed has no standard error")
    return (f"Cumulative regret after {summary['steps'].iloc[0]} steps "
            f"({seeds} seed{'s' if seeds > 1 else ''}, env {record['env']}), lowest mean "
            f"first; s.e.: {error}; next: the paired difference to the next agent over the "
            "same seeds:\n" + _shown(table))


def _shown(table: pd.DataFrame) -> str:
    """A table as :func:`summary_text` prints it: one decimal, an undefined value (the
    standard error or deviation over one seed) as n/a."""
    return table.to_string(index=False, na_rep="n/a", float_format=lambda v: f"{v:.1f}")
