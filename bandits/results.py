"""The run's tidy outputs: ``metrics.csv``, ``summary.csv`` and ``config.json``.

The runner records every step in memory (:class:`RegretLog`, preallocated) and
writes a bounded number of rows; plotting and analysis read only these files
(as bsuite does), so a plot can be redrawn without rerunning.
"""

from __future__ import annotations

import datetime
import io
import json
import os
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


def phase_length(steps: int) -> int:
    """Steps per phase of ``phases.csv``: a round number (1, 2 or 5 times a power of ten)
    giving about 20 to 50 phases."""
    target = max(steps / 25, 1)
    base = 10 ** int(np.floor(np.log10(target)))
    return int(min((m * base for m in (1, 2, 5, 10) if m * base >= target), default=base))


class RegretLog:
    """Per-step records of every (agent, run), preallocated for the whole horizon."""

    _ARRAYS = ("action", "reward", "regret", "expected_regret", "optimal_action")

    def __init__(self, agents: list[str], seeds: list[int], steps: int) -> None:
        self.agents, self.seeds, self.steps = agents, seeds, steps
        shape = (len(agents), len(seeds), steps)
        self.action = np.zeros(shape, dtype=np.int64)
        self.reward = np.zeros(shape)
        self.regret = np.zeros(shape)
        self.expected_regret = np.zeros(shape)
        self.optimal_action = np.zeros(shape, dtype=np.int64)
        self.done = 0  # steps completed by every agent

    def record(self, k: int, t: int, actions, rewards, info: dict) -> None:
        """Store step ``t`` (0-based) of agent ``k``; regret comes from the env's ``info``."""
        self.action[k, :, t] = actions
        self.reward[k, :, t] = rewards
        self.regret[k, :, t] = info["regret"]
        self.expected_regret[k, :, t] = info["expected_regret"]
        if "optimal_action" in info:
            self.optimal_action[k, :, t] = info["optimal_action"]

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
                    s1 = min(s0 + w, n)
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
    """The output directory cannot be used (exists with data, is a file, is not writable,
    another run is writing into it)."""


LOCK = ".lock"  # the claim file in an output directory (held while a run writes into it)
_claims: dict[Path, int] = {}  # directory -> open file descriptor holding its lock


def claim_dir(path: Path) -> None:
    """Claim ``path`` for this process: an exclusive lock on ``path/.lock``, held until
    :func:`release_dir` or the process ends (a killed process releases it at once).

    Raises:
        OutputDirError: Another process holds the claim, or the lock cannot be taken.
    """
    key = Path(path).resolve()
    if key in _claims:
        return
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: nothing to claim with
        return
    try:
        fd = os.open(key / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    except OSError as e:
        raise OutputDirError(f"cannot write to output directory {path}: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise OutputDirError(f"another run is writing into {path} right now; wait for it to "
                             "finish or choose another --out") from None
    _claims[key] = fd


def release_dir(path: Path) -> None:
    """Give up the claim of :func:`claim_dir` and remove its lock file (no-op when not
    held); a run's directory holds only its outputs afterwards."""
    key = Path(path).resolve()
    fd = _claims.pop(key, None)
    if fd is not None:
        try:
            (key / LOCK).unlink(missing_ok=True)
        except OSError:
            pass
        os.close(fd)  # closing the descriptor releases the lock


def output_dir(out: Path | str | None, name: str, overwrite: bool = False) -> Path:
    """Create or check an entry point's output directory, and claim it (:func:`claim_dir`).

    Args:
        out: The directory asked for, or ``None`` for a new one,
            ``results/runs/<timestamp>-<name>``.
        name: Suffix of the new directory's name.
        overwrite: Allow an existing non-empty directory (only the entry point's own
            files in it are replaced; nothing else is deleted).

    The claim makes the check atomic: of two runs started at once into the same new
    directory, exactly one gets it; the other gets an error (see :func:`claim_dir`).

    Raises:
        OutputDirError: ``out`` is a file, a non-empty directory without
            ``overwrite``, cannot be written to, or is claimed by another run.
    """
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path, i = Path("results/runs") / f"{stamp}-{name}", 1
        while path.exists():
            i += 1
            path = Path("results/runs") / f"{stamp}-{name}-{i}"
    else:
        path = Path(out)
    try:
        if path.exists() and not path.is_dir():
            raise OutputDirError(f"output path {path} exists and is not a directory; "
                                 "choose another --out")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # not a directory on the way, permissions, a name too long
        raise OutputDirError(f"cannot write to output directory {_short(path)}: "
                             f"{e.strerror or e}") from None
    claim_dir(path)
    if not overwrite and any(p.name != LOCK for p in path.iterdir()):
        release_dir(path)
        raise OutputDirError(f"output directory {path} exists and is not empty; "
                             "pass --overwrite or choose another --out")
    try:
        probe = path / f".write-test.{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        release_dir(path)
        raise OutputDirError(f"cannot write to output directory {path}: {e.strerror}") from None
    return path


def _short(path: Path, limit: int = 120) -> str:
    """A path for a one-line message: cut in the middle when it is very long."""
    text = str(path)
    return text if len(text) <= limit else text[:limit // 2] + "..." + text[-limit // 2:]


def remove_if_unused(path: Path) -> None:
    """Release ``path`` and remove it if it holds nothing but its claim (a run that failed
    before writing anything leaves no empty directory behind)."""
    release_dir(path)
    try:
        path.rmdir()  # only succeeds when empty
    except OSError:
        pass


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` so that a kill at any instant leaves either the old file
    or the new one, never a partial file: a temporary file in the same directory (named
    for this process, so two writers never share it), flushed and fsynced, then renamed
    over ``path``. Every output file of the project is written through here.

    Raises:
        OSError: The file cannot be written (full disk, permissions); the temporary file
            is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    raw = data.encode() if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write a tidy CSV with a fixed float format (same data -> same bytes), atomically."""
    write_atomic(path, frame.to_csv(index=False, float_format="%.6g", lineterminator="\n"))


def save_figure(fig, path: Path, **kwargs) -> None:
    """``fig.savefig(path)``, atomically (the format from the file's suffix)."""
    path = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lstrip(".") or "png", **kwargs)
    write_atomic(path, buf.getvalue())


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
    """Write ``data`` as indented JSON, atomically."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
