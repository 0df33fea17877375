"""End-to-end timings of whole commands for ``python -m bandits.bench``: the paper
preset's seconds per step with each number of workers (``--scaling``), the default
command's wall time (``--default-command``) and an MNIST training command's
(``--mnist-workers``), each checked to give the same bytes for every worker count, and
what the pinned kernels cost (``--kernels``)."""

from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bandits.core import kernels
from bandits.core.command_line import with_flags
from bandits.core.processes import die_with_parent
from bandits.tools import bench_worktree as worktrees

# every command this benchmark starts is killed with it (a kill -9 of the benchmark leaves
# nothing computing; Linux, elsewhere as before)
ORPHANS_DIE = die_with_parent if sys.platform.startswith("linux") else None


def _child(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, **kwargs)``, the command killed with this process."""
    return subprocess.run(cmd, preexec_fn=ORPHANS_DIE, **kwargs)

PAPER_STEPS = 50_000  # the paper's horizon (Blundell et al. 2015, section 5.3)


class NotMeasured(Exception):
    """A timing came out as noise (one line says which and what to change)."""


def scaling(workers: list[int], steps: tuple[int, int], rounds: int, device: str,
            out: Path) -> pd.DataFrame:
    """End to end: ``bandits.run --preset paper`` (the paper's four agents, 64 updates per
    step) with each number of ``workers``, at two horizons; the difference between the
    two wall times is the time of the steps alone (start-up, data loading and output
    writing cancel). Interleaved over ``rounds``, median taken. Returns one row per
    number of workers with the seconds per step, the speed-up over one worker and the
    projection of the paper protocol (50,000 steps)."""
    times: dict[tuple[int, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for w in workers:
                for n in steps:
                    d = Path(tmp) / f"w{w}-s{n}-r{r}"
                    cmd = [sys.executable, "-m", "bandits.run", "--preset", "paper", "--steps",
                           str(n), "--workers", str(w), "--device", device, "--no-progress",
                           "--checkpoint-every", "1e9", "--out", str(d)]
                    tic = time.perf_counter()
                    _child(cmd, check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "BANDITS_WORKERS": str(w)})
                    times.setdefault((w, n), []).append(time.perf_counter() - tic)
    rows = []
    for w in workers:
        per_step = (np.median(times[(w, steps[1])]) - np.median(times[(w, steps[0])])) / (
            steps[1] - steps[0])
        if per_step <= 0:  # start-up noise larger than the steps' time: nothing measured
            raise NotMeasured(
                f"with {w} worker(s) the {steps[1]}-step run took no longer than the "
                f"{steps[0]}-step one ({np.median(times[(w, steps[1])]):.2f} s against "
                f"{np.median(times[(w, steps[0])]):.2f} s): the machine is too busy to time "
                "it; give --scaling-steps further apart or more --rounds")
        rows.append({"workers": w, "seconds_per_step": per_step,
                     "paper_protocol_hours_projected": per_step * PAPER_STEPS / 3600})
    df = pd.DataFrame(rows)
    df["speedup_over_1_worker"] = df["seconds_per_step"].iloc[0] / df["seconds_per_step"]
    return df


def default_command(workers: list[int], rounds: int, extra: Sequence[str] = ()
                    ) -> pd.DataFrame:
    """End to end: the default ``python -m bandits.run`` (the ``quick`` preset) with each
    number of ``workers``, interleaved over ``rounds``; the wall time of the whole
    command (start-up, data, training, outputs), its median, and whether every CSV is
    the same bytes as with one worker. ``extra``: flags added to the command (tests)."""
    return _timed_by_workers(with_flags(["bandits.run", "--no-progress"], extra),
                             ["metrics.csv", "summary.csv", "phases.csv", "memory.csv",
                              "probes.csv"],
                             workers, rounds)


# A grid of two BBB settings (each a batch of two seeds) on part of MNIST: the unit
# that --workers splits.
MNIST_WORKERS_COMMAND = ["bandits.mnist", "--prior", "mixture", "gaussian", "--seeds", "2",
                         "--hidden", "400", "--epochs", "3", "--train-size", "20000",
                         "--no-progress"]


def mnist_workers(workers: list[int], rounds: int, extra: Sequence[str] = ()
                  ) -> pd.DataFrame:
    """End to end: ``python -m bandits.mnist`` training two settings (two seeds each) with
    each number of ``workers``, interleaved over ``rounds``; whether ``models.csv`` and
    ``settings.csv`` are the same bytes as with one worker. ``extra``: flags added."""
    return _timed_by_workers(with_flags(MNIST_WORKERS_COMMAND, extra),
                             ["models.csv", "settings.csv"],
                             workers, rounds)


def _timed_by_workers(command: list[str], files: list[str], workers: list[int], rounds: int
                      ) -> pd.DataFrame:
    """``python -m <command> --workers W --out DIR`` for each W, interleaved over
    ``rounds``: the median wall time and whether ``files`` are the bytes of one worker."""
    times: dict[int, list[float]] = {}
    same: dict[int, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for w in workers:
                d = Path(tmp) / f"w{w}-r{r}"
                cmd = [sys.executable, "-m", *command, "--workers", str(w), "--out", str(d)]
                tic = time.perf_counter()
                _child(cmd, check=True, stdout=subprocess.DEVNULL)
                times.setdefault(w, []).append(time.perf_counter() - tic)
                base = Path(tmp) / "w1-r0"
                same[w] = same.get(w, True) and all(
                    (d / f).read_bytes() == (base / f).read_bytes() for f in files)
    rows = [{"workers": w, "wall_seconds_median": float(np.median(times[w])),
             "wall_seconds": " ".join(f"{t:.1f}" for t in times[w]),
             "same_bytes_as_1_worker": same[w]} for w in workers]
    df = pd.DataFrame(rows)
    df["speedup_over_1_worker"] = df["wall_seconds_median"].iloc[0] / df["wall_seconds_median"]
    return df


KERNEL_MODES: dict[str, dict[str, str]] = {
    "pinned": {kernels.EXACT: "1"},  # exact mode: ATen and oneDNN at AVX2, MKL compatible
    "native": {},  # the libraries' own kernels: the default
    "mkl_strict": {kernels.EXACT: "1", "MKL_CBWR": "AVX2,STRICT"},  # MKL's AVX2 code, strict
    "mkl_auto": {kernels.EXACT: "1", "MKL_CBWR": "AUTO"},  # the pin but MKL's own choice
}
"""The kernel modes ``--kernels`` can time (``--kernel-modes``), each as the environment
variables it sets: exact mode's pin, the libraries' own kernels, and two candidates for a
cheaper exact mode (the pin with MKL's ``AVX2,STRICT`` mode, or with MKL's automatic
choice: what the pin costs beyond MKL's compatible mode)."""


def kernels_cost(rounds: int, extra: Sequence[str] = (),
                 modes: Sequence[str] = ("pinned", "native")) -> pd.DataFrame:
    """What each kernel mode of ``modes`` (:data:`KERNEL_MODES`; ``pinned``: exact mode,
    :mod:`bandits.core.kernels`) costs against the libraries' own kernels: the default
    ``python -m bandits.run`` end to end, and the fused training step (``python -m
    bandits.bench``'s seconds per run-update), interleaved over ``rounds``, median taken.
    One row per command with each mode's median (column ``MODE``), its rounds
    (``MODE_each``) and, but for ``native``, ``MODE_over_native``; the default command's
    CSVs are compared too (``same_bytes``: whether the pin gives the native bytes on this
    processor; ``MODE_same_as_pinned`` for the other candidates). ``extra``: flags added
    to the default command (tests)."""
    modes = list(dict.fromkeys(["pinned", "native", *modes]))
    native_env = {k: v for k, v in os.environ.items()
                  if k not in (*kernels.PIN, kernels.EXACT)}
    envs = {m: {**native_env, **KERNEL_MODES[m]} for m in modes}
    files = ["metrics.csv", "summary.csv", "phases.csv"]
    run_times: dict[str, list[float]] = {m: [] for m in modes}
    step_times: dict[str, list[float]] = {m: [] for m in modes}
    same = {m: True for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for name, env in envs.items():
                d = Path(tmp) / f"{name}-{r}"
                cmd = [sys.executable, "-m", *with_flags(["bandits.run", "--no-progress"],
                                                         extra), "--out", str(d)]
                tic = time.perf_counter()
                _child(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
                run_times[name].append(time.perf_counter() - tic)
                b = Path(tmp) / f"bench-{name}-{r}"
                _child([sys.executable, "-m", "bandits.bench", "--rounds", "3",
                        "--out", str(b)], check=True, stdout=subprocess.DEVNULL, env=env)
                bench = json.loads((b / "bench.json").read_text())
                step_times[name].append(bench["per_run_update_seconds_fused"])
            first = Path(tmp) / f"pinned-{r}"
            for m in modes[1:]:  # each against the pin
                same[m] = same[m] and all((first / f).read_bytes() == (
                    Path(tmp) / f"{m}-{r}" / f).read_bytes() for f in files)
    rows = []
    for what, times, unit in (("python -m bandits.run (the default command)", run_times,
                               "wall seconds"),
                              ("fused training step (bandits.bench)", step_times,
                               "seconds per run-update")):
        median = {m: float(np.median(times[m])) for m in modes}
        row: dict[str, object] = {"command": what, "unit": unit, **median}
        for m in modes:
            if m != "native":
                row[f"{m}_over_native"] = median[m] / median["native"]
            row[f"{m}_each"] = " ".join(f"{t:.4g}" for t in times[m])
        rows.append(row)
    df = pd.DataFrame(rows)
    df["same_bytes"] = [same["native"], None]
    for m in modes[2:]:
        df[f"{m}_same_as_pinned"] = [same[m], None]
    return df


THREADS_COMMAND = ["bandits.mnist", "--quick", "--epochs", "1", "--no-progress"]
"""What ``--threads-under-load`` times: one epoch of the MNIST quick model."""

THREAD_VARIANTS = {  # name: (torch threads, OMP_WAIT_POLICY)
    "2 threads, active wait": (2, "ACTIVE"),
    "2 threads, passive wait": (2, "PASSIVE"),
    "1 thread": (1, "PASSIVE"),
}


def _numbers(epochs: Path) -> bytes:
    """An ``epochs.csv`` without its timing columns (``seconds``, ``eval_seconds``), as
    bytes: what must not depend on the wait policy."""
    table = pd.read_csv(epochs)
    return table.drop(columns=[c for c in table if c.endswith("seconds")]).to_csv(
        index=False).encode()


def threads_under_load(busy: Sequence[int], rounds: int, extra: Sequence[str] = ()
                       ) -> pd.DataFrame:
    """One epoch of ``bandits.mnist --quick`` (:data:`THREADS_COMMAND`) with each of
    :data:`THREAD_VARIANTS`, beside each number of ``busy`` processes (each a Python loop
    spinning on one core), interleaved over ``rounds``, median taken; the two 2-thread
    variants' ``epochs.csv`` compared less their timing columns (the wait policy changes
    no other byte). One row per
    number of busy processes and variant, with the load average before each group.
    ``extra``: flags added to the command (tests)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for b in busy:
            spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                        preexec_fn=ORPHANS_DIE)
                        for _ in range(b)]
            try:
                load = os.getloadavg()[0]
                times: dict[str, list[float]] = {v: [] for v in THREAD_VARIANTS}
                same = True
                for r in range(rounds):
                    outs = {}
                    for name, (threads, policy) in THREAD_VARIANTS.items():
                        out = Path(tmp) / f"b{b}-r{r}-{threads}-{policy}"
                        cmd = [sys.executable, "-m", *THREADS_COMMAND, *extra, "--threads",
                               str(threads), "--out", str(out)]
                        tic = time.perf_counter()
                        _child(cmd, check=True, stdout=subprocess.DEVNULL,
                               env={**os.environ, "OMP_WAIT_POLICY": policy})
                        times[name].append(time.perf_counter() - tic)
                        outs[name] = out
                    pair = [_numbers(outs[n] / "epochs.csv") for n in THREAD_VARIANTS
                            if "2 threads" in n]
                    same = same and pair[0] == pair[1]
            finally:
                for s in spinners:
                    s.kill()
                    s.wait()
            for name, seconds in times.items():
                rows.append({"busy_processes": b, "variant": name,
                             "torch_threads": THREAD_VARIANTS[name][0],
                             "omp_wait_policy": THREAD_VARIANTS[name][1],
                             "seconds": float(np.median(seconds)),
                             "load_before": round(load, 2),
                             "wait_policy_same_bytes": same})
    return pd.DataFrame(rows)


AB_COMMANDS = {"python -m bandits.run (the default command)": ["bandits.run", "--no-progress"],
               "python -m bandits.mnist --quick": ["bandits.mnist", "--quick", "--no-progress"],
               "python -m bandits.run --steps 1 (the fixed cost)": [
                   "bandits.run", "--steps", "1", "--no-progress"]}
"""What ``--against`` times at both commits, each with its own defaults."""


def against(rev: str, rounds: int, commands: dict[str, list[str]] | None = None,
            commit: str | None = None, repo: Path = worktrees.REPO) -> pd.DataFrame:
    """An A/B of :data:`AB_COMMANDS` end to end: this checkout (``repo``) in its native and
    its exact mode against commit ``rev`` (its own default mode; ``commit``: its sha, else
    resolved here), run from a temporary ``git worktree`` of it
    (:func:`bandits.tools.bench_worktree.worktree`, removed however this ends),
    interleaved over ``rounds``, median taken. One row per command and side with its
    seconds and its ratio to ``rev``'s. ``commands``: others to time (tests)."""
    commands = AB_COMMANDS if commands is None else commands
    commit = worktrees.resolve(rev, repo) if commit is None else commit
    clean = {k: v for k, v in os.environ.items()
             if k not in (*kernels.PIN, kernels.EXACT, "PYTHONPATH")}
    times: dict[tuple[str, str], list[float]] = {}
    made_runs = itertools.count()
    try:
        with worktrees.worktree(commit, repo) as old:
            sides = {"this commit, native": (repo, {}),
                     "this commit, exact": (repo, {kernels.EXACT: "1"}),
                     f"{rev}, its default": (old, {})}
            for _ in range(rounds):
                for what, cmd in commands.items():
                    for side, (root, env) in sides.items():
                        out = old.parent / f"run-{next(made_runs)}"
                        tic = time.perf_counter()
                        done = worktrees.run([sys.executable, "-m", *cmd, "--out", str(out)],
                                             cwd=root, stdout=subprocess.DEVNULL,
                                             preexec_fn=ORPHANS_DIE,
                                             env={**clean, **env, "PYTHONPATH": str(root)})
                        if done.returncode != 0:
                            why = (done.stderr.strip().splitlines() or ["no message"])[-1]
                            raise NotMeasured(f"--against {rev}: "
                                              f"{shlex.join(['python', '-m', *cmd])} "
                                              f"({side}) failed: {why}")
                        times.setdefault((what, side), []).append(time.perf_counter() - tic)
    except RuntimeError as e:  # the checkout failed
        raise NotMeasured(f"--against {rev}: {e}") from None
    rows = []
    for what in commands:
        base = float(np.median(times[(what, f"{rev}, its default")]))
        for side in sides:
            each = times[(what, side)]
            rows.append({"command": what, "side": side, "seconds": float(np.median(each)),
                         f"over_{rev}": float(np.median(each)) / base,
                         "each": " ".join(f"{t:.4g}" for t in each)})
    return pd.DataFrame(rows)


# what bench writes into --out, each mode its own two files (an --overwrite replaces the
# files of the mode run, nothing else: another mode's results in the same --out stay)
MODES = ("bench", "scaling", "default_command", "mnist_workers", "agents_per_step", "kernels",
         "threads_under_load", "floor", "against")
OUTPUTS = tuple(f"{mode}.{ext}" for mode in MODES for ext in ("csv", "json"))


def mode_outputs(args) -> tuple[str, str]:
    """The files the mode ``args`` asks for writes: ``bench.csv`` and ``bench.json`` for
    the default timing, else those named for its flag (``scaling.csv``, ...)."""
    # one mode at a time (bench refuses two): the flag that is on, else the default timing
    mode = next((m for m in MODES[1:] if getattr(args, m)), "bench")
    return f"{mode}.csv", f"{mode}.json"
