"""The command line ``python -m bandits.mnist COMMAND``: ``train`` (the default: flags
without a command train), ``report DIR``, ``redraw DIR``, ``bench`` and ``adam-probe``,
each with its own settings (``python -m bandits.mnist COMMAND --help``). Bad flags or
settings, missing data and unwritable files end in one line ``bandits.mnist: error: ...``
and exit status 2; Ctrl-C in one line and status 130.

``train --quick`` is a few-minute check, ``bench`` times BBB against the plain MLP (and
R batched models against R single ones), and ``report DIR`` gathers every model under
``DIR`` into ``DIR/models.jsonl`` and builds the tables (and the figures it has the
files for) from it. The older flag forms ``--report DIR``, ``--redraw DIR``, ``--bench``
and ``--adam-probe`` still work, with a one-line note naming the command.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from bandits.core import checkpoint, kernels
from bandits.core.command_line import Parser
from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.conditions import refuse_settings_without_effect
from bandits.core.config import UsageError
from bandits.core.data import DataError
from bandits.core.processes import ctrl_c_on
from bandits.core.runner import DIVERGED_STATUS, Diverged
from bandits.core.version import VERSION_LINE
from bandits.mnist.evaluation.model_files import OLD_DATA_DIR
from bandits.mnist.models.config import BENCH_SETTINGS, PROBE_SETTINGS, QUICK, BenchConfig, Config
from bandits.mnist.models.priors import unreachable_spikes
from bandits.mnist.reports.figures import redraw
from bandits.mnist.reports.report import report
from bandits.mnist.training.adam_probe import probe
from bandits.mnist.training.speed import bench
from bandits.mnist.training.train import Interrupted, run, threads
from bandits.mnist.training.training_state import CHECKPOINTS, TRAINING

PROG = "bandits.mnist"  # the prefix of every error message: "bandits.mnist: error: ..."


# the commands, each with the line that describes it in the help
COMMANDS = {
    "train": "train and evaluate models: every combination of the grid settings, times "
             "--seeds seeds (the default: flags without a command train)",
    "report": "gather every model under DIR into DIR/models.jsonl and build the tables "
              "(tables.md, table1.csv) and the figures it has the files for",
    "redraw": "rewrite a model directory's histograms and plots from its saved model",
    "bench": "time epochs of BBB and the plain MLP, interleaved, and R models batched "
             "against R single ones; writes speed.csv and speed.json",
    "adam-probe": "train each setting (one seed) and record, per epoch, Adam's per-weight "
                  "step scale sqrt(v) against the data's gradient (adam_probe.csv)",
}
# the older forms: a flag that chose the command
OLD_FLAGS = {"--report": "report", "--redraw": "redraw", "--bench": "bench",
             "--adam-probe": "adam-probe"}
DESCRIPTION = "MNIST benchmark of Bayes by Backprop (Blundell et al. 2015, Tables 1-2)."


def _parser_of(cls: type, names: Sequence[str] | None, command: str
               ) -> argparse.ArgumentParser:
    """The parser of ``command``: one kebab-case flag per field of ``cls`` (only those in
    ``names``, if given) by :func:`bandits.core.command_line.build_parser`: a setting that is on by
    default (``download``, ``progress``) becomes a ``--no-...`` flag whose help says what
    giving it does, one that is off by default (``plots``, ``quick``) a ``--...`` switch,
    a grid setting takes one or more values. Only the flags given are in the parsed
    namespace; parse errors raise :class:`bandits.core.config.UsageError`."""
    if names is not None:
        cls = dataclasses.make_dataclass(cls.__name__, [
            (f.name, f.type, dataclasses.field(default=f.default,
                                               default_factory=f.default_factory,
                                               metadata=f.metadata))
            for f in dataclasses.fields(cls) if f.name in names])
    return build_settings_parser(cls, f"python -m bandits.mnist {command}",
                                 f"{COMMANDS[command]}. {DESCRIPTION}",
                                 argument_default=argparse.SUPPRESS, parse_choices=False)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``train``: a flag per :class:`Config` field."""
    return _parser_of(Config, None, "train")


def _settings(cls: type, given: dict[str, Any], preset: dict[str, Any] | None = None) -> Any:
    """``cls`` from the flags ``given`` (a grid setting's one value as itself) over
    ``preset``, checked."""
    values = dict(preset or {})
    values.update({k: v[0] if isinstance(v, list) and len(v) == 1 else v
                   for k, v in given.items()})
    cfg = cls(**values)
    cfg.validate()
    return cfg


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse ``train``'s flags into a :class:`Config`; ``--quick`` fills in what was not
    given."""
    given = vars(build_parser().parse_args(argv))
    preset = QUICK if given.get("quick") else None
    cfg = _settings(Config, given, preset)
    refuse_settings_without_effect(Config, dataclasses.asdict(cfg), preset)
    cfg.exact = kernels.settle(cfg.exact)  # --exact, or BANDITS_EXACT=1 pinned this process
    return cfg


def parse_bench(argv: Sequence[str]) -> BenchConfig:
    """Parse ``bench``'s flags (:data:`~bandits.mnist.models.config.BENCH_SETTINGS`)."""
    return _settings(BenchConfig,
                     vars(_parser_of(BenchConfig, BENCH_SETTINGS, "bench").parse_args(argv)))


def parse_probe(argv: Sequence[str]) -> Config:
    """Parse ``adam-probe``'s flags (:data:`~bandits.mnist.models.config.PROBE_SETTINGS`)."""
    return _settings(Config,
                     vars(_parser_of(Config, PROBE_SETTINGS, "adam-probe").parse_args(argv)))


def _directory_parser(command: str) -> argparse.ArgumentParser:
    """The parser of ``report`` and ``redraw``: one directory."""
    p = Parser(prog=f"python -m bandits.mnist {command}",
               description=f"{COMMANDS[command]}. {DESCRIPTION}")
    p.add_argument("dir", help="the directory")
    return p


def split_command(argv: Sequence[str]) -> tuple[str, list[str], str | None]:
    """The command of ``argv``, its arguments, and for an older flag form (``--report
    DIR``, ``--redraw DIR``, ``--bench``, ``--adam-probe``) a note naming the command.
    Flags without a command are ``train``'s."""
    argv = list(argv)
    if argv and argv[0] in COMMANDS:
        return argv[0], argv[1:], None
    for i, a in enumerate(argv):
        name, eq, value = a.partition("=")
        if name not in OLD_FLAGS:
            continue
        command, rest = OLD_FLAGS[name], argv[:i] + argv[i + 1:]
        usage = command
        if command in ("report", "redraw"):
            if not eq:
                if i + 1 >= len(argv):
                    raise UsageError(f"argument {name}: expected one argument (see --help)")
                value, rest = argv[i + 1], argv[:i] + argv[i + 2:]
            rest = [value, *rest]
            usage += " DIR"
        else:
            usage += " [its flags]"
        return command, rest, (f"{PROG}: note: {name} is the older form of the command "
                               f"'python -m bandits.mnist {usage}'")
    return "train", argv, None


def help_text() -> str:
    """``python -m bandits.mnist --help``: the commands, and the version (the last line, as
    every command's help ends)."""
    width = max(map(len, COMMANDS)) + 2
    lines = ["usage: python -m bandits.mnist [COMMAND] [flags]", "", DESCRIPTION, "",
             "commands:"]
    lines += [f"  {name:<{width}}{text}" for name, text in COMMANDS.items()]
    lines += ["", "python -m bandits.mnist COMMAND --help lists a command's flags; flags "
              "without a command are train's.", "", VERSION_LINE]
    return "\n".join(lines)


def config_and_checkpoint_to_resume(argv: Sequence[str]) -> tuple[Config, dict[str, Any]]:
    """The settings of the run to resume (from its checkpoint) and the checkpoint's state."""
    given = vars(build_parser().parse_args(argv))
    TRAINING.refuse_changes(given, Config)  # the one check of what a --resume adds
    out = Path(given["resume"])
    try:  # the checkpoints must be this directory's own, and intact
        state = _latest_checkpoint(out)
    except checkpoint.CheckpointError as e:
        raise UsageError(str(e)) from None
    settings = {**state["config"], "out": str(out), "overwrite": True}
    if settings.get("data_dir") == OLD_DATA_DIR:  # a run made before it was recorded
        settings["data_dir"] = None
    settings.pop("run_id", None)  # the run's, not a setting (kept by run())
    settings.update({k: v for k, v in given.items() if k != "resume"})
    # the run's mode; a run made before --exact existed ran in this process's mode if it
    # was made with BANDITS_EXACT=1, which it did not record
    settings["exact"] = bool(state["config"].get("exact", kernels.in_force()))
    cfg = Config(**settings)
    cfg.validate()
    if (why := kernels.problem(cfg.exact)) is not None:  # this process's mode must be it
        raise UsageError(why)
    # schedules laid out over the epochs the run started with
    schedules = [flag for flag, on in (("--lr-schedule cosine", cfg.lr_schedule == "cosine"),
                                       ("--kl-factor-final", cfg.kl_factor_final is not None))
                 if on]
    if cfg.epochs != state["config"]["epochs"] and schedules:
        raise ValueError(f"--epochs cannot change with --resume under {' and '.join(schedules)}"
                         ": the schedule is laid out over the epochs the run started with")
    TRAINING.check_continues("epochs", cfg.epochs, state["epoch"], "epochs", out, "trained")
    return cfg, state


def _latest_checkpoint(out: Path) -> dict[str, Any]:
    """The state of ``out``'s checkpoint (one batch), or of its batches' checkpoints the
    one furthest on (several batches: ``out/checkpoints/``); each must be intact and
    belong to the run ``out/config.json`` describes."""
    batches = sorted((out / CHECKPOINTS).glob("batch-*.pt"))
    if (out / checkpoint.NAME).is_file() or not batches:
        return checkpoint.load_own(out, TRAINING.checkpoint_kind, TRAINING.identity)
    try:
        on_disk = json.loads((out / "config.json").read_text())
        own = TRAINING.identity(on_disk)
    except (OSError, ValueError):
        raise checkpoint.CheckpointError(
            f"{out / 'config.json'} is missing or unreadable: cannot tell whether the "
            f"checkpoints in {out / CHECKPOINTS} belong to this directory's run") from None
    states = [checkpoint.load(p, TRAINING.checkpoint_kind, own) for p in batches]
    mine = on_disk.get("run_id")
    for p, st in zip(batches, states, strict=True):
        its = st["config"].get("run_id")
        if mine is not None and its is not None and mine != its:
            raise checkpoint.CheckpointError(
                f"{p} (after epoch {st['epoch']}) belongs to another run with the same "
                f"settings, not to the one whose outputs are in {out}; copy back its own "
                "checkpoint or start again with --overwrite")
    return max(states, key=lambda st: st["epoch"])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bandits.mnist``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with ctrl_c_on():
            return _run_command(argv)
    except DataError:  # missing or damaged data: said as every command says it
        raise  # (bandits.core.startup.Command)
    except (UsageError, ValueError, OSError, checkpoint.CheckpointError) as e:
        # bad flags or settings, a file that cannot be written
        return _error(str(e))
    except (MemoryError, torch.cuda.OutOfMemoryError):
        return _error("out of memory; use a smaller --hidden, --layers, --batch-size, "
                      "--seeds or grid")
    except Interrupted as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 130
    except Diverged as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return DIVERGED_STATUS
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
             _percent(best.get("test_error_mean")) + (f" (epoch {best['epoch']})"
                                                  if "epoch" in best else "")),
            ("test error, last epoch", _percent(final.get("test_error_mean"))),
            ("validation error, last epoch", _percent(final.get("val_error_mean"))),
            ("predictive entropy, test / noise images",
             f"{ood.get('entropy_test', float('nan')):.3f} / "
             f"{ood.get('entropy_noise', float('nan')):.3f} nats" if ood else "-"),
            ("wall time", f"{summary.get('wall_seconds', float('nan')):.0f} s")]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _percent(x) -> str:
    """A percentage as ``1.23 %``, or ``-`` when there is none."""
    return "-" if x is None or x != x else f"{x:.2f} %"


def _error(message: str) -> int:
    """Print ``bandits.mnist: error: <message>`` as one line on stderr; return status 2."""
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _run_command(argv: list[str]) -> int:
    """Run the command of ``argv`` (see :func:`split_command`); returns the exit status."""
    if argv in (["-h"], ["--help"]):
        print(help_text())
        return 0
    if argv == ["--version"]:
        print(VERSION_LINE)
        return 0
    command, args, note = split_command(argv)
    if note is not None:
        print(note, file=sys.stderr)
    if command in ("report", "redraw"):
        return _in_directory(command, args)
    cfg, resume = _command_settings(command, args)
    n_threads = _threads_and_device(cfg)
    if command in ("bench", "adam-probe"):
        default = " (torch's default)" if not n_threads else ""
        print(f"torch threads: {torch.get_num_threads()}{default}; --threads N changes it",
              flush=True)
        if command == "bench":
            assert isinstance(cfg, BenchConfig)  # bench's settings
            bench(cfg, argv)
        else:
            probe(cfg, argv)
        print(f"outputs in {cfg.out}")
        return 0
    return _train(cfg, argv, resume)


def _in_directory(command: str, args: list[str]) -> int:
    """``report DIR`` or ``redraw DIR``."""
    where = Path(_directory_parser(command).parse_args(args).dir)
    if not where.is_dir():
        raise ValueError(f"{command} {where}: no such directory")
    if command == "report":
        print(report(where))
    else:
        redraw(where)
    print(f"outputs in {where}")
    return 0


def _command_settings(command: str, args: list[str]
                      ) -> tuple[Config | BenchConfig, dict[str, Any] | None]:
    """The settings of ``command`` from its flags ``args``, and the checkpoint a training
    run resumes from (None: none)."""
    if command == "bench":
        return parse_bench(args), None
    if command == "adam-probe":
        return parse_probe(args), None
    if "resume" in vars(build_parser().parse_args(args)):
        return config_and_checkpoint_to_resume(args)
    return parse_config(args), None


def _threads_and_device(cfg: Config | BenchConfig) -> int:
    """Set torch's threads to the settings' ``--threads`` (returned; 0: torch's default)
    and check that their device is there."""
    n_threads = threads(cfg)
    if n_threads > 0:
        torch.set_num_threads(n_threads)
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available to this torch "
                         f"{torch.__version__}; use --device cpu")
    return n_threads


def _train(cfg: Config, argv: list[str], resume: dict[str, Any] | None) -> int:
    """``train``: every model of the settings, then its summary table."""
    argv = kernels.recorded(argv, cfg.exact)
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
