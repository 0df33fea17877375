"""The run's tidy outputs: ``metrics.csv``, ``summary.csv`` and ``config.json``.

The runner records every step in memory (:class:`RegretLog`, preallocated) and
writes a bounded number of rows; plotting and analysis read only these files
(as bsuite does), so a plot can be redrawn without rerunning.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
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


class RegretLog:
    """Per-step records of every (agent, run), preallocated for the whole horizon."""

    _ARRAYS = ("action", "reward", "regret", "expected_regret")

    def __init__(self, agents: list[str], seeds: list[int], steps: int) -> None:
        self.agents, self.seeds, self.steps = agents, seeds, steps
        shape = (len(agents), len(seeds), steps)
        self.action = np.zeros(shape, dtype=np.int64)
        self.reward = np.zeros(shape)
        self.regret = np.zeros(shape)
        self.expected_regret = np.zeros(shape)
        self.done = 0  # steps completed by every agent

    def record(self, k: int, t: int, actions, rewards, info: dict) -> None:
        """Store step ``t`` (0-based) of agent ``k``; regret comes from the env's ``info``."""
        self.action[k, :, t] = actions
        self.reward[k, :, t] = rewards
        self.regret[k, :, t] = info["regret"]
        self.expected_regret[k, :, t] = info["expected_regret"]

    def state_dict(self) -> dict:
        """The records of the completed steps (for checkpoints)."""
        n = self.done
        return {"done": n, **{k: torch.from_numpy(getattr(self, k)[:, :, :n].copy())
                              for k in self._ARRAYS}}

    def load_state_dict(self, state: dict) -> None:
        """Restore the records of ``state["done"]`` steps (the horizon may have grown)."""
        n = int(state["done"])
        if n > self.steps:
            raise ValueError(f"the state holds {n} steps, more than this log's {self.steps}")
        for k in self._ARRAYS:
            getattr(self, k)[:, :, :n] = state[k].numpy()
        self.done = n

    def final_cumulative(self) -> tuple[np.ndarray, np.ndarray]:
        """Cumulative regret and expected regret at the last completed step: ``(agents, seeds)``."""
        n = self.done
        return self.regret[:, :, :n].sum(-1), self.expected_regret[:, :, :n].sum(-1)

    def metrics_frame(self, max_points: int) -> pd.DataFrame:
        """Tidy rows at :func:`logged_steps` of the completed steps."""
        n = self.done
        if n == 0:
            return pd.DataFrame(columns=METRICS_COLUMNS)
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
        })

    def summary_frame(self, losses: dict[str, float] | None = None) -> pd.DataFrame:
        """Per agent: final cumulative regret (mean, std, min, max over seeds) and the
        training loss at the last update (mean over seeds; empty if it never learned).

        Only results: the same run gives the same bytes (wall times go to config.json)."""
        losses = losses or {}
        cum_r, cum_e = self.final_cumulative()
        return pd.DataFrame({
            "agent": self.agents,
            "steps": self.done,
            "seeds": len(self.seeds),
            "cumulative_regret_mean": cum_r.mean(1),
            "cumulative_regret_std": cum_r.std(1, ddof=1) if len(self.seeds) > 1 else 0.0,
            "cumulative_regret_min": cum_r.min(1),
            "cumulative_regret_max": cum_r.max(1),
            "cumulative_expected_regret_mean": cum_e.mean(1),
            "cumulative_expected_regret_std": cum_e.std(1, ddof=1) if len(self.seeds) > 1 else 0.0,
            "train_loss": [losses.get(a, np.nan) for a in self.agents],
        })


class OutputDirError(ValueError):
    """The output directory cannot be used (exists with data, is a file, is not writable)."""


def output_dir(out: Path | str | None, name: str, overwrite: bool = False) -> Path:
    """Create or check an entry point's output directory.

    Args:
        out: The directory asked for, or ``None`` for a new one,
            ``results/runs/<timestamp>-<name>``.
        name: Suffix of the new directory's name.
        overwrite: Allow an existing non-empty directory (only the entry point's own
            files in it are replaced; nothing else is deleted).

    Raises:
        OutputDirError: ``out`` is a file, a non-empty directory without
            ``overwrite``, or cannot be written to.
    """
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path, i = Path("results/runs") / f"{stamp}-{name}", 1
        while path.exists():
            i += 1
            path = Path("results/runs") / f"{stamp}-{name}-{i}"
    else:
        path = Path(out)
    if path.exists() and not path.is_dir():
        raise OutputDirError(f"output path {path} exists and is not a directory; "
                             "choose another --out")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise OutputDirError(f"output directory {path} exists and is not empty; "
                             "pass --overwrite or choose another --out")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise OutputDirError(f"cannot write to output directory {path}: {e.strerror}") from None
    return path


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write a tidy CSV with a fixed float format (same data -> same bytes)."""
    frame.to_csv(path, index=False, float_format="%.6g", lineterminator="\n")


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages a result depends on."""
    import gymnasium
    import matplotlib
    import torch

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "gymnasium": gymnasium.__version__,
        "matplotlib": matplotlib.__version__,
    }


def write_json(data: dict, path: Path) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
