"""The command line ``python -m bandits.mnist``: flags into a :class:`Config`, then
training (:func:`bandits.mnist.train.run`), resuming a run, ``--bench``, ``--report`` or
``--redraw``. Bad flags or settings, missing data and unwritable files end in one line
``bandits.mnist: error: ...`` and exit status 2; Ctrl-C in one line and status 130.

Run ``python -m bandits.mnist --help`` for the flags, ``--quick`` for a few-minute
check, ``--bench`` to time BBB against the plain MLP (and R batched models against R
single ones), and ``--report DIR`` to gather every model under ``DIR`` into
``DIR/models.jsonl`` and build the tables (and the figures it has the files for) from it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from bandits import checkpoint
from bandits.config import UsageError, refuse_with_resume
from bandits.config import build_parser as build_settings_parser
from bandits.mnist.adam_probe import probe
from bandits.mnist.config import QUICK, Config, unreachable_spikes
from bandits.mnist.report import redraw, report
from bandits.mnist.speed import bench
from bandits.mnist.train import (
    CHECKPOINT_KIND,
    CHECKPOINTS,
    RESUME_FLAGS,
    Diverged,
    Interrupted,
    identity,
    run,
    threads,
)
from bandits.processes import ctrl_c_on

PROG = "bandits.mnist"  # the prefix of every error message: "bandits.mnist: error: ..."


def build_parser() -> argparse.ArgumentParser:
    """An argparse parser with one kebab-case flag per :class:`Config` field
    (:func:`bandits.config.build_parser`): a setting that is on by default (``download``,
    ``progress``) becomes a ``--no-...`` flag whose help says what giving it does, one
    that is off by default (``plots``, ``quick``) a ``--...`` switch, a grid setting takes
    one or more values. Only the flags given are in the parsed namespace; parse errors
    raise :class:`bandits.config.UsageError` instead of printing the usage and exiting."""
    return build_settings_parser(
        Config, "python -m bandits.mnist",
        "MNIST benchmark of Bayes by Backprop (Blundell et al. 2015, Tables 1-2).",
        argument_default=argparse.SUPPRESS)


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse flags into a :class:`Config`; ``--quick`` fills in what was not given."""
    given = vars(build_parser().parse_args(argv))
    values: dict[str, Any] = dict(QUICK) if given.get("quick") else {}
    values.update({k: v[0] if isinstance(v, list) and len(v) == 1 else v
                   for k, v in given.items()})
    cfg = Config(**values)
    cfg.validate()
    return cfg


def resume_config(argv: Sequence[str]) -> tuple[Config, dict[str, Any]]:
    """The settings of the run to resume (from its checkpoint) and the checkpoint's state."""
    given = vars(build_parser().parse_args(argv))
    refuse_with_resume(given, RESUME_FLAGS, Config)
    out = Path(given["resume"])
    try:  # the checkpoints must be this directory's own, and intact
        state = _latest_checkpoint(out)
    except checkpoint.CheckpointError as e:
        raise ValueError(str(e)) from None
    settings = {**state["config"], "data_dir": None, "out": str(out), "overwrite": True}
    settings.update({k: v for k, v in given.items() if k != "resume"})
    cfg = Config(**settings)
    cfg.validate()
    # schedules laid out over the epochs the run started with
    schedules = [flag for flag, on in (("--lr-schedule cosine", cfg.lr_schedule == "cosine"),
                                       ("--kl-factor-final", cfg.kl_factor_final is not None))
                 if on]
    if cfg.epochs != state["config"]["epochs"] and schedules:
        raise ValueError(f"--epochs cannot change with --resume under {' and '.join(schedules)}"
                         ": the schedule is laid out over the epochs the run started with")
    if cfg.epochs < state["epoch"]:
        raise ValueError(f"--epochs {cfg.epochs} is fewer than the {state['epoch']} epochs the "
                         f"checkpoint in {out} has trained")
    return cfg, state


def _latest_checkpoint(out: Path) -> dict[str, Any]:
    """The state of ``out``'s checkpoint (one batch), or of its batches' checkpoints the
    one furthest on (several batches: ``out/checkpoints/``); each must be intact and
    belong to the run ``out/config.json`` describes."""
    batches = sorted((out / CHECKPOINTS).glob("batch-*.pt"))
    if (out / checkpoint.NAME).is_file() or not batches:
        return checkpoint.load_own(out, CHECKPOINT_KIND, identity)
    try:
        own = identity(json.loads((out / "config.json").read_text()))
    except (OSError, ValueError):
        raise checkpoint.CheckpointError(
            f"{out / 'config.json'} is missing or unreadable: cannot tell whether the "
            f"checkpoints in {out / CHECKPOINTS} belong to this directory's run") from None
    states = [checkpoint.load(p, CHECKPOINT_KIND, own) for p in batches]
    return max(states, key=lambda st: st["epoch"])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bandits.mnist``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with ctrl_c_on():
            return _main(argv)
    except (UsageError, ValueError, OSError, checkpoint.CheckpointError) as e:
        # bad flags or settings, missing or damaged data, a file that cannot be written
        return _error(str(e))
    except (MemoryError, torch.cuda.OutOfMemoryError):
        return _error("out of memory; use a smaller --hidden, --layers, --batch-size, "
                      "--seeds or grid")
    except Interrupted as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 130
    except Diverged as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:  # outside the epochs: loading data, the final evaluation
        print(f"{PROG}: interrupted outside the training epochs; a run's checkpoints, "
              f"where one was written, stay good (resume with: python -m bandits.mnist "
              f"--resume <its --out directory>)", file=sys.stderr)
        return 130


def summary_table(summary: dict) -> str:
    """One model's closing summary as a small table (the numbers are in summary.json)."""
    final, best = summary.get("final", {}), summary.get("best_validation", {})
    ood = summary.get("ood", {})
    rows = [("model", summary.get("label", "")),
            ("test error, best-validation epoch",
             _pct(best.get("test_error_mean")) + (f" (epoch {best['epoch']})"
                                                  if "epoch" in best else "")),
            ("test error, last epoch", _pct(final.get("test_error_mean"))),
            ("validation error, last epoch", _pct(final.get("val_error_mean"))),
            ("predictive entropy, test / noise images",
             f"{ood.get('entropy_test', float('nan')):.3f} / "
             f"{ood.get('entropy_noise', float('nan')):.3f} nats" if ood else "-"),
            ("wall time", f"{summary.get('wall_seconds', float('nan')):.0f} s")]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{x:.2f} %"


def _error(message: str) -> int:
    """Print ``bandits.mnist: error: <message>`` as one line on stderr; return status 2."""
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _main(argv: list[str]) -> int:
    resume = None
    if "resume" in vars(build_parser().parse_args(argv)):
        cfg, resume = resume_config(argv)
    else:
        cfg = parse_config(argv)
    n_threads = threads(cfg)
    if n_threads > 0:
        torch.set_num_threads(n_threads)
    if cfg.redraw is not None:
        redraw(Path(cfg.redraw))
        print(f"outputs in {cfg.redraw}")
        return 0
    if cfg.report is not None:
        if not Path(cfg.report).is_dir():
            raise ValueError(f"--report {cfg.report}: no such directory")
        print(report(Path(cfg.report)))
        print(f"outputs in {cfg.report}")
        return 0
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available to this torch "
                         f"{torch.__version__}; use --device cpu")
    default = " (torch's default)" if not n_threads else ""
    print(f"torch threads: {torch.get_num_threads()}{default}; --threads N changes it",
          flush=True)
    if cfg.adam_probe:
        probe(cfg, argv)
        print(f"outputs in {cfg.out}")
        return 0
    if cfg.bench:
        bench(cfg, argv)
        print(f"outputs in {cfg.out}")
        return 0
    if resume is None:
        for message in unreachable_spikes(cfg):
            print(f"{PROG}: warning: {message}", file=sys.stderr)
    summary = run(cfg, argv, resume)
    if summary["models"] > 1:
        print((Path(summary["out"]) / "table.md").read_text())
    else:
        print(summary_table(summary))
    print(f"outputs in {summary['out']}")
    return 0
