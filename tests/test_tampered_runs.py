"""``bandits.plot`` and ``bandits.diagnose`` read a run's files through the one checked
reader (:mod:`bandits.records.reader`): a tampered ``metrics.csv`` or ``phases.csv`` (a
cell that is not a finite number, a column gone, a row twice or lost) is one line naming
the file, exit status 2, and no figure or table drawn from it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bandits.analysis import diagnose, plot
from bandits.run import main as run

TINY = ["--env", "wheel", "--seeds", "2", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "1", "--no-progress", "--agent", "greedy", "uniform",
        "--steps", "60"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tampered") / "run"
    assert run([*TINY, "--out", str(out)]) == 0
    return out


def _tampered(src: Path, dst: Path, name: str, how: str, column: str) -> Path:
    """A copy of the run ``src`` in ``dst`` with its file ``name`` changed by hand."""
    shutil.copytree(src, dst)
    path = dst / name
    lines = path.read_text().splitlines(keepends=True)
    at = lines[0].rstrip("\n").split(",").index(column)

    def cell(value: str) -> None:
        cells = lines[3].rstrip("\n").split(",")
        cells[at] = value
        lines[3] = ",".join(cells) + "\n"

    if how in ("text", "inf", "nan", "empty"):
        cell({"text": "abc", "inf": "inf", "nan": "nan", "empty": ""}[how])
    elif how == "column gone":
        lines = [",".join(c for k, c in enumerate(line.rstrip("\n").split(",")) if k != at)
                 + "\n" for line in lines]
    elif how == "row twice":
        lines.append(lines[3])
    elif how == "row lost":
        del lines[3]
    path.write_text("".join(lines))
    return path


SAID = {"text": "line 4: {c} is 'abc', not a finite number",
        "inf": "line 4: {c} is inf, not a finite number",
        "nan": "line 4: {c} is empty, not a finite number",
        "empty": "line 4: {c} is empty, not a finite number",
        "column gone": "no column '{c}'",
        "row twice": "is there twice (line 4 too)",
        "row lost": ""}


def _one_line(capsys, prog: str, path: Path, said: str) -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"{prog}: error: {path}") and said in err, err
    return err


@pytest.mark.parametrize("how", list(SAID))
def test_plot_refuses_a_tampered_metrics_file_in_one_line(how, tiny_run, tmp_path, capsys):
    path = _tampered(tiny_run, tmp_path / "run", "metrics.csv", how, "cumulative_regret")
    figure = tmp_path / "regret.png"
    capsys.readouterr()
    assert plot.main([str(path.parent), "--out", str(figure)]) == 2
    err = _one_line(capsys, "bandits.plot", path, SAID[how].format(c="cumulative_regret"))
    if how == "row lost":
        assert "has no row at step" in err
    assert not figure.exists()


@pytest.mark.parametrize("how", list(SAID))
def test_diagnose_refuses_a_tampered_phases_file_in_one_line(how, tiny_run, tmp_path, capsys):
    path = _tampered(tiny_run, tmp_path / "run", "phases.csv", how, "regret")
    capsys.readouterr()
    assert diagnose.main([str(path.parent)]) == 2
    err = _one_line(capsys, "bandits.diagnose", path, SAID[how].format(c="regret"))
    if how == "row lost":
        assert "a phase starts at step" in err
    assert not list(path.parent.glob("diagnosis*")) and not (path.parent / "exploration.csv"
                                                             ).exists()


def test_a_column_the_figure_does_not_draw_is_checked_too(tiny_run, tmp_path, capsys):
    path = _tampered(tiny_run, tmp_path / "run", "metrics.csv", "inf", "expected_regret")
    capsys.readouterr()
    assert plot.main([str(path.parent), "--out", str(tmp_path / "regret.png")]) == 2
    _one_line(capsys, "bandits.plot", path, "expected_regret is inf")


def test_the_untampered_run_is_drawn_and_diagnosed(tiny_run, tmp_path):
    shutil.copytree(tiny_run, tmp_path / "run")
    assert plot.main([str(tmp_path / "run"), "--out", str(tmp_path / "regret.png")]) == 0
    assert diagnose.main([str(tmp_path / "run")]) == 0
    assert (tmp_path / "regret.png").is_file() and (tmp_path / "run" / "diagnosis.png").is_file()
