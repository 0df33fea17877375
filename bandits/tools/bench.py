"""Training-speed benchmark of the bandit agents: the fused population step against the
per-agent loop it replaced.

    python -m bandits.bench [--runs 5] [--updates 64] [--device cpu|cuda] [--out results/bench]

Both train the paper's four agents (bbb, greedy, eps1, eps5) with ``--runs`` seeds each on
the Mushroom reward network (117 context features + 2 one-hot actions, 2 x 100 ReLU,
minibatch 64, a full buffer of 4096):

* **per-agent loop** (the simulator's training step before the fused one, kept here as
  the baseline): four populations, one after another, each update through the library's
  layers (:func:`bandits.bayes.make_mlp`, the Monte Carlo complexity cost by autograd,
  fused Adam) with the minibatch drawn per update and the loss read back to the host
  after every update;
* **fused step** (:meth:`agents.neural.NeuralAgent.update`, what ``bandits.run`` does):
  four populations, one per agent, ``--updates`` updates per call without waiting for
  the device, as one captured CUDA graph on a GPU.

Both are measured in the same process, interleaved in rounds (median), so machine noise
hits both alike: the ratios are the result (:mod:`bandits.tools.bench_fused`). The
projection of the paper protocol (50,000 steps x 64 updates, 4 agents x ``--runs`` seeds;
the paper's 5 by default) uses the measured fused rate and counts training only (acting
and the environment add little; the runner reports its own wall time). Writes
``bench.csv`` and ``bench.json`` to ``--out``.

``--agents-per-step`` instead times one step (act, store, ``--updates`` updates) of every
agent alone on MNIST-shaped random contexts (784 features, 10 actions, ``--runs`` seeds),
interleaved over ``--rounds`` rounds, and writes ``agents_per_step.csv`` and ``.json``;
with ``--papers-setup`` under the NeuralUCB and NeuralTS papers' MNIST set-up, with the
projected minutes of a 10,000-round run of their training schedule.

``--against REV`` is the A/B of the default command and ``bandits.mnist --quick`` at this
checkout (native and exact) against commit ``REV``, interleaved, and writes
``against.csv`` and ``against.json``.

``--floor`` measures the distance to the floor (:mod:`bandits.tools.bench_floor`): one
update of BBB and of greedy at 1 and 3 runs against its own matrix products replayed
alone, and the default command's CPU seconds against its products' FLOP at the measured
rate, and writes ``floor.csv`` and ``floor.json``.

``--kernels`` times what the pinned kernels (:mod:`bandits.core.kernels`) cost: the default
command and the fused step, each under the pin and with the libraries' own kernels,
interleaved over ``--rounds``, and writes ``kernels.csv`` and ``kernels.json``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from agents import SPECS
from bandits.core import kernels
from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.command_line import first_paragraph
from bandits.core.conditions import refuse_settings_without_effect
from bandits.core.config import UsageError, check_ranges, flag, setting
from bandits.core.files import machine, package_versions, write_csv, write_json
from bandits.core.outputs import OutputDirError, output_dir, remove_if_unused
from bandits.core.processes import available_cores, stop_on_ctrl_c
from bandits.core.startup import on_stop
from bandits.tools import bench_worktree as worktrees
from bandits.tools.bench_agents import agents_per_step, refused
from bandits.tools.bench_commands import (
    AB_COMMANDS,
    KERNEL_MODES,
    MNIST_WORKERS_COMMAND,
    MODES,
    PAPER_STEPS,
    THREADS_COMMAND,
    NotMeasured,
    against,
    default_command,
    kernels_cost,
    mnist_workers,
    mode_outputs,
    scaling,
    threads_under_load,
)
from bandits.tools.bench_floor import DEFAULT_JOB, floor
from bandits.tools.bench_fused import PAPER_AGENTS, PAPER_UPDATES, measure

# the flags' ranges: beyond them a run of the benchmark would not fit in memory (every run
# of every agent keeps full buffers of 4,096 items) or would not end in hours
MAX_RUNS, MAX_UPDATES, MAX_ROUNDS = 100, 10_000, 1_000


def _with(mode: str) -> tuple[Callable[[dict], bool], str]:
    """A setting of one mode of the benchmark acts only with that mode (``acts_when``)."""
    return (lambda c: bool(c[mode]), f"add {flag(mode)}")


@dataclass
class Settings:
    """The settings of the benchmark; each field is a flag of ``python -m bandits.bench``."""

    runs: int = setting(5, "runs (seeds) per agent", range=(1, MAX_RUNS))
    updates: int = setting(64, "updates per fused call (the paper's updates per step), timed "
                           "per round", range=(1, MAX_UPDATES))
    rounds: int = setting(5, "interleaved rounds (median taken)", range=(1, MAX_ROUNDS))
    device: str = setting("cpu", "torch device", choices=["cpu", "cuda"])
    threads: int | None = setting(None, "torch CPU threads (0: torch's default)", type=int,
                                  range=(0, 1024))
    matmul_precision: str = setting(
        "highest", "torch.set_float32_matmul_precision for the timed updates ('medium' lets "
        "a CPU with AVX-512 BF16 multiply in bfloat16)", choices=["highest", "high", "medium"])
    out: Path | None = setting(None, "output directory (default: a new directory under runs/; "
                               "the shipped reference results are rewritten only when named "
                               "here)", type=Path)
    overwrite: bool = setting(False, "allow writing into an existing non-empty --out (the "
                              "earlier files of the mode run are replaced, nothing else: "
                              "another mode's stay)")
    scaling: bool = setting(False, "instead: time `bandits.run --preset paper` end to end "
                            "with 1, 2, ... workers (up to the cores) and project the paper "
                            "protocol; writes scaling.csv and scaling.json")
    scaling_steps: list[int] = setting([10, 60], "the two horizons whose difference is timed "
                                       "(--scaling)", nargs=2, type=int,
                                       range=(1, PAPER_STEPS), acts_when=_with("scaling"))
    mnist_workers: bool = setting(False, "instead: time `python -m bandits.mnist` training "
                                  "two settings (two seeds each, 3 epochs on 20,000 images) "
                                  "end to end with 1, 2, ... workers and check its tables are "
                                  "the same bytes; writes mnist_workers.csv and .json (needs "
                                  "the MNIST data)")
    default_command: bool = setting(False, "instead: time the default `python -m bandits.run` "
                                    "end to end with 1, 2, ... workers and check its CSVs are "
                                    "the same bytes; writes default_command.csv and .json")
    agents_per_step: bool = setting(False, "instead: time one step (act, then --updates "
                                    "updates) of every agent alone on MNIST-shaped random "
                                    "contexts (784 features, 10 actions, --runs seeds); "
                                    "writes agents_per_step.csv and .json")
    threads_under_load: bool = setting(
        False, "instead: time one epoch of `bandits.mnist --quick` with 2 threads (active "
        "and passive OpenMP wait) and 1 thread, alone and beside --busy processes spinning "
        "on a core each; writes threads_under_load.csv and .json")
    busy: list[int] = setting([0, 1, 2], "with --threads-under-load: the numbers of busy "
                              "processes to time beside", nargs="+", type=int, range=(0, 64),
                              acts_when=_with("threads_under_load"))
    kernels: bool = setting(False, "instead: time what the pinned math kernels cost, the "
                            "default command and the fused step each with and without the pin "
                            "(bandits.core.kernels), interleaved over --rounds")
    floor: bool = setting(False, "instead: the distance to the floor, on the CPU: one update "
                          "of BBB and of greedy (1 and 3 runs) against its own matrix products "
                          "replayed alone at the same shapes, and the default `python -m "
                          "bandits.run` end to end against its products' FLOP at the measured "
                          "rate, in CPU time, interleaved over --rounds; writes floor.csv and "
                          ".json")
    kernel_modes: list[str] = setting(
        ["pinned", "native"], "with --kernels: the kernel modes timed (pinned: exact mode; "
        "native: the libraries' own; mkl_strict: the pin with MKL_CBWR=AVX2,STRICT; "
        "mkl_auto: the pin with MKL's own choice)", nargs="+", type=str,
        choices=list(KERNEL_MODES), acts_when=_with("kernels"))
    against: str | None = setting(
        None, "instead: an A/B of the default `python -m bandits.run` and `python -m "
        "bandits.mnist --quick`, each end to end, at this checkout in its native and its "
        "exact mode against the commit REV with its own defaults (a temporary git worktree), "
        "interleaved over --rounds; writes against.csv and .json (needs the data sets)",
        type=str, metavar="REV")
    papers_setup: bool = setting(False, "with --agents-per-step: the NeuralUCB and NeuralTS "
                                 "papers' MNIST set-up (disjoint inputs, one hidden layer of "
                                 "100, nu = lambda = 1e-5, unit-norm contexts, a buffer of "
                                 "10,000 holding 2,000 rounds), and the projected minutes of "
                                 "a 10,000-round run of their schedule",
                                 acts_when=_with("agents_per_step"))


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m bandits.bench``; a bad flag is one line, exit status 2,
    as every command says it."""
    return build_settings_parser(Settings, "python -m bandits.bench", first_paragraph(__doc__))


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.bench", lambda: _bench(argv))


def _bench(argv: Sequence[str] | None) -> int:
    p = build_parser()
    args = Settings(**vars(p.parse_args(argv)))
    try:  # before the output directory is touched
        check_ranges(args)
        refuse_settings_without_effect(Settings, vars(args))  # a mode's own, without it
        chosen = [m for m in MODES[1:] if getattr(args, m)]
        if len(chosen) > 1:
            raise UsageError(f"{' and '.join('--' + m.replace('_', '-') for m in chosen)} "
                             "are different benchmarks; give one at a time")
        if args.scaling_steps[0] >= args.scaling_steps[1]:
            raise UsageError("--scaling-steps takes two horizons, the shorter first, got "
                             f"{' '.join(map(str, args.scaling_steps))}")
        commit = None if args.against is None else worktrees.resolve(args.against)
    except UsageError as e:
        p.exit(2, f"bandits.bench: error: {e}\n")
    try:
        # each of the mode's two files is replaced atomically once measured: an interrupted
        # bench leaves the earlier ones as they were
        args.out = output_dir(args.out, "bench", args.overwrite, mode_outputs(args),
                              kind="bandits.bench", clear=False)
    except OutputDirError as e:
        p.exit(2, f"bandits.bench: error: {e}\n")
    on_stop(lambda: remove_if_unused(args.out))  # SIGTERM before any output
    try:
        code = _main(p, args, argv, commit)
    except NotMeasured as e:
        print(f"bandits.bench: error: {e}", file=sys.stderr)
        return 1
    finally:
        remove_if_unused(args.out)
    print(f"outputs in {args.out}")
    return code


def _command(argv: Sequence[str] | None) -> str:
    """The command as it was given, quoted so that it can be pasted back (a folder with a
    space in its name stays one argument)."""
    return "python -m bandits.bench " + shlex.join(sys.argv[1:] if argv is None else argv)


def _written(args: Settings, argv: Sequence[str] | None, name: str, df: pd.DataFrame,
             start: float, machine_of: str = "cpu", **what) -> int:
    """A mode's table into ``--out`` (``NAME.csv``, and ``NAME.json`` with the command,
    the machine, ``what`` was timed, the wall time and the versions), printed."""
    assert args.out is not None  # main's output_dir has made it
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(df, args.out / f"{name}.csv")
    write_json({"command": _command(argv), "machine": machine(machine_of), **what,
                "wall_seconds": round(time.perf_counter() - start, 1),
                "versions": package_versions()}, args.out / f"{name}.json")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _main(p: argparse.ArgumentParser, args: Settings, argv: Sequence[str] | None,
          commit: str | None = None) -> int:
    start = time.perf_counter()
    if args.kernels:
        return _written(args, argv, "kernels",
                        kernels_cost(args.rounds, modes=args.kernel_modes), start,
                        pin=kernels.PIN, modes={m: KERNEL_MODES[m] for m in args.kernel_modes})
    if args.floor:  # CPU time: the load beside it is recorded, for the cache it shares
        load = os.getloadavg()[0]
        table = floor(args.rounds)
        return _written(args, argv, "floor", table, start, threads=1,
                        timed=shlex.join(["python", *DEFAULT_JOB]),
                        load_average={"start": load, "end": os.getloadavg()[0]})
    if commit is not None:  # resolved before the folder was made
        return _against(args, argv, commit, start)
    if args.threads_under_load:
        return _written(args, argv, "threads_under_load",
                        threads_under_load(args.busy, args.rounds), start,
                        timed=shlex.join(["python", "-m", *THREADS_COMMAND]))
    if args.default_command or args.mnist_workers or args.scaling:
        return _with_workers(args, argv, start)
    # the timings of the training step in this process
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.set_float32_matmul_precision(args.matmul_precision)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.exit(2, "bandits.bench: error: --device cuda but torch has no CUDA device here\n")
    start = time.perf_counter()
    if args.agents_per_step:
        return _agents_per_step(args, argv, start)
    return _fused_against_loop(args, argv, start)


def _against(args: Settings, argv: Sequence[str] | None, commit: str, start: float) -> int:
    """``--against REV``: this checkout's commands against those of ``commit``."""
    assert args.against is not None  # commit is what it names
    if dirty := worktrees.uncommitted():
        print(f"bandits.bench: note: this checkout has uncommitted changes: its side runs "
              f"them, {args.against}'s does not", file=sys.stderr)
    return _written(args, argv, "against", against(args.against, args.rounds, commit=commit),
                    start, commit=commit, uncommitted_changes=dirty,
                    timed=[shlex.join(["python", "-m", *c]) for c in AB_COMMANDS.values()])


def _with_workers(args: Settings, argv: Sequence[str] | None, start: float) -> int:
    """``--default-command``, ``--mnist-workers`` or ``--scaling``: a command end to end
    with 1, 2, ... workers, up to the cores."""
    workers = list(range(1, available_cores() + 1))
    if args.mnist_workers:
        return _written(args, argv, "mnist_workers", mnist_workers(workers, args.rounds),
                        start, timed=shlex.join(["python", "-m", *MNIST_WORKERS_COMMAND]))
    if args.default_command:
        return _written(args, argv, "default_command", default_command(workers, args.rounds),
                        start, preset="quick (the default)")
    assert args.out is not None  # main's output_dir has made it
    short, long = args.scaling_steps
    df = scaling(workers, (short, long), args.rounds, args.device, args.out)
    return _written(args, argv, "scaling", df, start, args.device, device=args.device,
                    preset="paper (4 agents x 5 seeds, 64 updates)")


def _agents_per_step(args: Settings, argv: Sequence[str] | None, start: float) -> int:
    """``--agents-per-step``: one step of every agent alone."""
    assert args.out is not None  # main's output_dir has made it
    df = agents_per_step(args.runs, args.updates, args.rounds, args.device,
                         papers_setup=args.papers_setup)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(df, args.out / "agents_per_step.csv")
    write_json({"command": _command(argv), "device": args.device,
                "device_name": machine(args.device),
                "threads": torch.get_num_threads(), "runs_per_agent": args.runs,
                "updates_per_step": args.updates, "rounds": args.rounds,
                "setup": "papers" if args.papers_setup else "this project's defaults",
                "left_out": refused(list(SPECS), args.papers_setup),
                "wall_seconds": round(time.perf_counter() - start, 1),
                "versions": package_versions()}, args.out / "agents_per_step.json")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _fused_against_loop(args: Settings, argv: Sequence[str] | None, start: float) -> int:
    """The default timing: the fused step against the per-agent loop
    (:mod:`bandits.tools.bench_fused`), with the speed-ups and the paper protocol's
    projected minutes."""
    assert args.out is not None  # main's output_dir has made it
    df = measure(args.runs, args.updates, args.rounds, args.device)
    t = dict(zip(df["variant"], df["seconds_per_update"]))
    before, now = t["per-agent loop (all agents)"], t["fused (all agents)"]
    run_updates = args.runs * len(PAPER_AGENTS)  # run-updates per update of all agents
    agents_in = df["variant"].str.count(r"\+") + 1
    agents_in[df["variant"].str.endswith("(all agents)")] = len(PAPER_AGENTS)
    df["seconds_per_run_update"] = df["seconds_per_update"] / (agents_in * args.runs)
    populations = [v[len("fused "):] for v in t if v.startswith("fused ")
                   and not v.endswith("(all agents)")]  # one per agent since neighbour-free
    speedups = {f"speedup_{k}": t[f"per-agent loop {k}"] / t[f"fused {k}"]
                for k in populations}
    summary = {
        **speedups,
        "per_run_update_seconds_before": before / run_updates,
        "per_run_update_seconds_fused": now / run_updates,
        "speedup_fused_over_per_agent_loop": before / now,
        # 50,000 steps x 64 updates of the 4 agents with --runs seeds (the paper: 5)
        "paper_protocol_minutes_projected": PAPER_STEPS * PAPER_UPDATES * now / 60,
        "paper_protocol_minutes_projected_before": PAPER_STEPS * PAPER_UPDATES * before / 60,
    }
    device_name = machine(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(df, args.out / "bench.csv")
    write_json({"command": _command(argv),
                "device": args.device, "device_name": device_name,
                "threads": torch.get_num_threads(), "runs_per_agent": args.runs,
                "updates_per_call": args.updates,
                "wall_seconds": round(time.perf_counter() - start, 1), **summary,
                "versions": package_versions()}, args.out / "bench.json")
    print(f"device: {device_name}")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
    for k, v in summary.items():
        print(f"{k}: {v:.4g}")
    return 0

