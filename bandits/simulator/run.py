"""The bandit simulator: agents act, learn from a replay buffer, and are scored by regret.

    python -m bandits.run --agent bbb [greedy eps1 ...] --env mushroom|wheel|mushroom-classes|mnist
        --seeds N --steps T --preset quick|long|paper --device cpu|cuda --out DIR

One flow per step and population: ``agent.act`` -> ``env.step`` -> ``buffer.add`` ->
``agent.update`` (:func:`interact`); around it, hooks that look at the models
(:class:`Probe`), show progress, watch for divergence (:class:`DivergenceWatch`),
write checkpoints (:class:`Checkpoints`) and stop cleanly on Ctrl-C. The agents are
those of :data:`agents.SPECS`. Every agent's ``--seeds`` runs are one batched model
through the runs dimension, one population per agent, so that no agent's numbers
depend on the agents beside it (see :func:`agents.make_agents`); every run of every
agent sees the same contexts and reward draws for its seed (common random numbers).
Populations may run in worker processes (:mod:`bandits.simulator.parallel`). Outputs:
``metrics.csv``, ``summary.csv``, ``phases.csv``, ``memory.csv``
(:mod:`bandits.records.memory`), ``probes.csv``, ``config.json``, ``regret.png`` (see the
README).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bandits.core import kernels
from bandits.core.command import writing
from bandits.core.config import UsageError
from bandits.core.data import DataError
from bandits.core.outputs import OutputDirError, output_dir
from bandits.core.processes import ctrl_c_on
from bandits.records.figures import draw_run
from bandits.records.regret import summary_text
from bandits.simulator import parallel
from bandits.simulator.loop import Outcome, simulate, write_outputs
from bandits.simulator.resume import (
    RESUME_FLAGS,
    RUN,
    given_flags,
    identity,
    resume_config,
)
from bandits.simulator.settings import (
    PRESETS,
    Config,
    build_parser,
    check_data,
    config_from,
    parse_config,
)

# what a run (and bandits.plot, bandits.diagnose after it) writes into its directory, as
# name patterns (a run in workers also writes into parts/): an --overwrite removes these
# first, so that no output of an earlier run survives, and nothing else (bandits.simulator.resume)
OUTPUTS = RUN.outputs


def prepare_out_dir(cfg: Config) -> Path:
    """Create (or check) the output directory; never overwrite without --overwrite."""
    try:
        return output_dir(cfg.run.out, f"{cfg.run.env}-{cfg.run.preset}", cfg.run.overwrite,
                          OUTPUTS, kind="bandits.run")
    except OutputDirError as e:
        raise UsageError(str(e)) from None


def header(cfg: Config, out: Path, workers: int) -> str:
    """The line a run starts with: what runs, with the numbers that decide its cost."""
    run, net, training = cfg.run, cfg.network, cfg.training
    fits = {"steps": f"{training.updates_per_step} updates of {net.batch_size}",
            "epochs": f"epochs of {net.batch_size}s over the buffer to a loss of "
                      f"{net.fit_tolerance:g} (at most {training.updates_per_step} updates)",
            "full": f"{training.updates_per_step} updates on the whole buffer"}
    when = "per step"
    if training.train_every > 1:
        when += (f" to step {training.train_always_until:,}, then every {training.train_every}"
                 if training.train_always_until else f" (every {training.train_every} steps)")
    updates = f"{fits[net.fit]} {when}"
    return (f"bandits.run: preset {run.preset}: {' '.join(run.agent)} on {run.env}, "
            f"{run.steps:,} steps x {run.seeds} seed{'s' if run.seeds > 1 else ''}, {updates}, "
            f"buffer {training.buffer_size:,}, {workers} worker{'s' if workers > 1 else ''}, "
            f"device {run.device} -> {out}")


def print_summary(out: Path) -> None:
    """Print :func:`summary_text` of the run in ``out`` (nothing if it has no summary)."""
    text = summary_text(out)
    if text:
        print("\n" + text)
        print(f"outputs in {out}")


def start(cfg: Config, command: str) -> Outcome:
    """A new run of ``cfg`` into its output directory, in
    :func:`bandits.simulator.parallel.worker_count` processes; ``command`` is recorded in
    ``config.json``. Bad input raises :class:`UsageError`; a run that fails before it
    wrote a file leaves no folder it made behind (:func:`bandits.core.command.writing`)."""
    workers = parallel.worker_count(cfg)  # a bad $BANDITS_WORKERS: before any file is touched
    check_data(cfg)  # a data file missing, malformed or changed: before any folder is made
    with writing(prepare_out_dir(cfg)) as out:
        print(header(cfg, out, workers), flush=True)
        if workers > 1:
            return parallel.run(cfg, out, command)  # draws the merged run's figure
        return _drawn(cfg, simulate(cfg, out, command=command))


def resume(out: Path, changes: dict[str, Any], command: str) -> Outcome:
    """Continue the run in ``out`` from its checkpoint, with ``changes`` (settings of
    :data:`RESUME_FLAGS` only: ``{"steps": 50000}`` extends it)."""
    RUN.refuse_changes(changes)  # the one check of what a --resume adds
    if parallel.is_parallel_run(out):
        return parallel.resume(out, changes, command)
    cfg, state = resume_config(out, changes)
    with RUN.claimed(out):
        return _drawn(cfg, simulate(cfg, out, state, command))


_WRITTEN: list[Path] = []  # a run whose records are all written (only its figure is left)


def _drawn(cfg: Config, outcome: Outcome) -> Outcome:
    """The step after a run in one process: its regret figure, from its records."""
    if outcome.out is not None:
        _WRITTEN.append(outcome.out)
        draw_run(outcome.out, cfg.run.env, cfg.output.log_y, cfg.agents.act_samples)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = "python -m bandits.run " + shlex.join(argv)
    _WRITTEN.clear()
    try:
        with ctrl_c_on():  # from here on, a Ctrl-C outside the loop's own handling
            return _main(argv, command)
    except KeyboardInterrupt:
        if _WRITTEN:  # the run ended and wrote its records; the figure was being drawn
            print(f"bandits.run: interrupted as the run ended; its records in {_WRITTEN[-1]} "
                  "are whole (draw its figure with: "
                  f"{shlex.join(['python', '-m', 'bandits.plot', str(_WRITTEN[-1])])})",
                  file=sys.stderr)
        else:
            print("bandits.run: interrupted while starting; no step was run (a checkpoint "
                  "already in the directory stays good)", file=sys.stderr)
        return 130


def _main(argv: list[str], command: str) -> int:
    try:
        parser = build_parser()  # argv is parsed once: the flags named, and their values
        args = vars(parser.parse_args(argv))
        if kernels.FLAG in argv and "progress_file" not in parser.given:  # not a worker
            kernels.warn_other_torch("bandits.run")  # another torch than the shipped results'
        if "resume" in parser.given:
            outcome = resume(Path(args["resume"]),
                             {k: args[k] for k in parser.given - {"resume"}}, command)
        else:
            cfg = parse_config(parsed=args)
            if cfg.run.exact and kernels.FLAG not in argv:  # BANDITS_EXACT=1: copying the
                command += f" {kernels.FLAG}"  # recorded command reproduces the bytes
            outcome = start(cfg, command)
    except UsageError as e:
        print(f"bandits.run: error: {e}", file=sys.stderr)
        return 2
    except DataError:  # bad data, not the disk: said as every command says it
        raise  # (bandits.core.startup.Command)
    except OSError as e:  # the disk or the file system, not the settings: one line
        where = f": {e.filename}" if e.filename else ""
        print(f"bandits.run: error: {e.strerror or e}{where} (every file is written whole "
              "or not at all: what was there before stays; free space and run again, or "
              "--resume where a checkpoint was written)", file=sys.stderr)
        return 2
    if outcome.out is not None:
        print_summary(outcome.out)
    if outcome.message:
        print(f"bandits.run: {outcome.message}", file=sys.stderr)
    return outcome.status


__all__ = ["OUTPUTS", "PRESETS", "RESUME_FLAGS", "Config", "Outcome", "UsageError", "build_parser",
           "config_from", "given_flags", "header", "identity", "main", "parse_config",
           "prepare_out_dir", "print_summary", "resume", "simulate", "start", "summary_text",
           "write_outputs"]

