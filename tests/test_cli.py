"""One CLI style: every entry point declares its settings as a dataclass of
bandits.core.config.setting fields; sweep, bench, plot and diagnose keep their flags and
defaults; sweep's and bench's errors are argparse's own, plot's and diagnose's one line
(UsageError, said by bandits.core.startup.handled)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from bandits.analysis import diagnose, plot
from bandits.core.command_line import build_parser
from bandits.core.config import UsageError, setting
from bandits.experiments import sweep
from bandits.tools import bench


@dataclass
class Example:
    dirs: list[Path] | None = setting(None, "directories", positional=True, nargs="+",
                                      type=Path)
    tags: list[str] = setting([], "a tag (repeatable)", action="append", type=str)
    pair: list[int] = setting([1, 2], "two numbers", nargs=2, type=int)
    quiet: bool = setting(False, "say less (default: chatty)")
    level: int = setting(3, "how much (default: three)")


def test_positional_and_list_settings():
    p = build_parser(Example, "example", "An example.", parser_class=argparse.ArgumentParser)
    args = Example(**vars(p.parse_args(["a", "b", "--tags", "x", "--tags", "y"])))
    assert args == Example([Path("a"), Path("b")], ["x", "y"], [1, 2], False, 3)
    assert Example().tags == [] and Example().tags is not Example().tags
    text = p.format_help()
    assert "dirs [dirs ...]" in text and "(default: 1 2)" in text
    # a help that states its default in its own words gets no second one
    assert "(default: chatty)" in text and "(default: three)" in text
    assert "(default: off)" not in text and "(default: 3)" not in text
    with pytest.raises(SystemExit):  # argparse's own error: usage, one line, exit 2
        p.parse_args([])
    with pytest.raises(SystemExit):
        p.parse_args(["a", "--pair", "1", "2", "--pair", "3", "4"])


# Every flag of the four commands, with its default, as they were written by hand.
FLAGS = {
    sweep: {"grid": None, "set": [], "out": None, "backend": "local", "address": None,
            "cpus_per_point": 1.0, "gpus_per_point": 0.0, "retries": 2, "redraw": None,
            "no_progress": False, "overwrite": False},
    bench: {"runs": 5, "updates": 64, "rounds": 5, "device": "cpu", "threads": None,
            "matmul_precision": "highest", "out": None, "overwrite": False, "scaling": False,
            "scaling_steps": [10, 60], "mnist_workers": False, "default_command": False},
    plot: {"log_y": False, "expected": False, "out": None},
    diagnose: {"last": None},
}


@pytest.mark.parametrize("module", list(FLAGS), ids=lambda m: m.__name__)
def test_the_hand_written_flags_and_defaults_are_kept(module):
    fields = {f.name for f in dataclasses.fields(module.Settings)}
    assert set(FLAGS[module]) <= fields
    defaults = module.Settings()
    for name, value in FLAGS[module].items():
        assert getattr(defaults, name) == value, name
    options = {s for a in module.build_parser()._actions for s in a.option_strings}
    for name in FLAGS[module]:
        assert "--" + name.replace("_", "-") in options


def test_positional_arguments_and_choices():
    assert plot.build_parser().parse_args(["a", "b"]).dirs == [Path("a"), Path("b")]
    assert diagnose.build_parser().parse_args(["a", "--last", "5"]).last == 5
    assert sweep.build_parser().parse_args(["--workers", "3"]).workers == 3
    for module, argv in ((bench, ["--device", "tpu"]), (sweep, ["--backend", "slurm"]),
                         (bench, ["--scaling-steps", "1"])):
        with pytest.raises(UsageError):
            module.build_parser().parse_args(argv)
    for module, argv in ((plot, []), (diagnose, []), (diagnose, ["a", "--last", "x"])):
        with pytest.raises(UsageError, match="required: dirs?|invalid int value"):
            module.build_parser().parse_args(argv)


def test_a_bad_flag_of_the_sweep_and_the_bench_is_one_line(capsys):
    from bandits.bench import main as bench_main
    from bandits.sweep import main as sweep_main
    for main, argv in ((bench_main, ["--frobnicate"]), (bench_main, ["--rounds", "abc"]),
                       (sweep_main, ["--backend", "slurm"])):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(("bandits.bench: error:",
                                                    "bandits.sweep: error:")), err


def test_a_network_setting_in_a_run_without_a_network_is_refused_in_one_line(capsys):
    from bandits.simulator.run import main
    # --lr, --hidden, --weight-decay: read by the neural agents only
    for flags in (["--lr", "0.01"], ["--hidden", "8", "8"], ["--weight-decay", "0.5"]):
        assert main(["--agent", "linucb", "uniform", *flags, "--steps", "5",
                     "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert f"{' '.join(flags)} is read by --agent bbb" in err
        assert "none of which this run lists (linucb uniform)" in err
