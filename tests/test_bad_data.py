"""A data file that is not what it should be (a label flipped, cut to half, empty, an
extra column; an MNIST file cut short) is the same one line, exit status 2, in every
command that loads it: the one handler of :class:`bandits.core.startup.Command`. No
traceback, no output folder left behind, the user's file and cache untouched."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from bandits.core.data import DataError
from envs.mushroom_data import MUSHROOM_FILE

ROOT = Path(__file__).parents[1]
TINY_RUN = ["--agent", "greedy", "--seeds", "1", "--steps", "10", "--no-progress"]
TINY_SCREEN = ["--learner", "greedy", "--draws-per-item", "2", "--buffers", "2"]


def _flipped(rows: list[str]) -> list[str]:
    return [("e" if rows[0][0] == "p" else "p") + rows[0][1:], *rows[1:]]


# what is done to the file -> what the one line says of it
MUSHROOM_CASES = {
    "labels flipped": (_flipped, "is not the published UCI Mushroom file"),
    "truncated to half": (lambda rows: rows[:len(rows) // 2],
                          "line 4062: the file ends after 4062 rows, expected 8124"),
    "empty": (lambda rows: [], "line 0: the file is empty"),
    "an extra column": (lambda rows: [r + ",x" for r in rows], "line 1: 24 columns, expected 23"),
}


@pytest.fixture(scope="module")
def bad_mushroom(tmp_path_factory, mushroom_data_dir) -> dict[str, Path]:
    """Case -> a data directory whose ``mushroom/agaricus-lepiota.data`` is damaged so."""
    rows = (mushroom_data_dir / "mushroom" / MUSHROOM_FILE.name).read_text().splitlines()
    dirs = {}
    for case, (damage, _) in MUSHROOM_CASES.items():
        root = tmp_path_factory.mktemp("bad-mushroom")
        (root / "mushroom").mkdir()
        changed = damage(rows)
        (root / "mushroom" / MUSHROOM_FILE.name).write_text(
            "".join(r + "\n" for r in changed))
        dirs[case] = root
    return dirs


def _listing(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its sha256: what a command must leave as it was."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(main, argv, data: Path, out: Path, capsys, prog: str, said: str) -> str:
    """Run ``main(argv)``: exit 2, one stderr line from ``prog`` naming the file and
    ``said``, ``out`` not made, ``data`` (and the cache) as they were."""
    before = _listing(data)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"{prog}: error: ") and said in err, err
    assert str(data) in err, err  # the file is named
    assert not out.exists(), sorted(out.rglob("*"))
    assert _listing(data) == before
    return err


def _cache_is_empty():
    import os

    cache = Path(os.environ["BANDITS_CACHE_DIR"])
    assert not cache.exists() or not any(cache.rglob("*"))


@pytest.mark.parametrize("case", list(MUSHROOM_CASES))
def test_the_learner_screen_says_a_bad_mushroom_file_in_one_line(case, bad_mushroom,
                                                                   tmp_path, capsys):
    from bandits.learner_screen import main

    data, out = bad_mushroom[case], tmp_path / "screen"
    _refused(main, [*TINY_SCREEN, "--data-dir", str(data), "--out", str(out)], data, out,
             capsys, "bandits.learner_screen", MUSHROOM_CASES[case][1])
    _cache_is_empty()


@pytest.mark.parametrize("case", list(MUSHROOM_CASES))
def test_run_says_a_bad_mushroom_file_as_the_learner_screen_does(case, bad_mushroom, tmp_path,
                                                                 capsys, monkeypatch):
    from bandits.learner_screen import main as screen
    from bandits.run import main as run

    data = bad_mushroom[case]
    said = MUSHROOM_CASES[case][1]
    screen_err = _refused(screen, [*TINY_SCREEN, "--data-dir", str(data), "--out",
                                   str(tmp_path / "s")], data, tmp_path / "s", capsys,
                          "bandits.learner_screen", said)
    run_err = _refused(run, [*TINY_RUN, "--env", "mushroom", "--data-dir", str(data), "--out",
                             str(tmp_path / "r")], data, tmp_path / "r", capsys, "bandits.run",
                       said)
    assert run_err.partition(": ")[2] == screen_err.partition(": ")[2]  # the same words
    monkeypatch.setenv("BANDITS_DATA_DIR", str(data))  # the data directory of the environment
    _refused(run, [*TINY_RUN, "--env", "mushroom-classes", "--out", str(tmp_path / "c")], data,
             tmp_path / "c", capsys, "bandits.run", said)
    _cache_is_empty()


def test_a_run_in_workers_and_a_sweep_say_a_bad_mushroom_file_before_any_starts(
        bad_mushroom, tmp_path, capsys, monkeypatch):
    from bandits.run import main as run
    from bandits.sweep import main as sweep

    case = "truncated to half"
    data, said = bad_mushroom[case], MUSHROOM_CASES[case][1]
    monkeypatch.setenv("BANDITS_WORKERS", "2")
    _refused(run, ["--agent", "greedy", "uniform", "--seeds", "1", "--steps", "10",
                   "--no-progress", "--env", "mushroom", "--data-dir", str(data), "--out",
                   str(tmp_path / "r")], data, tmp_path / "r", capsys, "bandits.run", said)
    _refused(sweep, ["--set", "lr=0.001,0.003", "--out", str(tmp_path / "sw"), "--workers", "1",
                     "--no-progress", "--", *TINY_RUN, "--env", "mushroom", "--data-dir",
                     str(data)], data, tmp_path / "sw", capsys, "bandits.sweep", said)


def test_python_m_says_a_bad_file_in_one_line_by_either_module_name(bad_mushroom, tmp_path):
    data = bad_mushroom["an extra column"]
    for module in ("bandits.learner_screen", "bandits.studies.learner_screen"):
        out = tmp_path / module
        done = subprocess.run([sys.executable, "-m", module, *TINY_SCREEN, "--data-dir",
                               str(data), "--out", str(out)], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [
            f"bandits.learner_screen: error: {data / 'mushroom' / MUSHROOM_FILE.name}, line 1: "
            "24 columns, expected 23 (class + 22 attributes); not the UCI file?"], done.stderr
        assert not out.exists()


# --------------------------------------------------------------------------- MNIST

MNIST_CASES = {
    "labels cut short": ("t10k-labels-idx1-ubyte.gz", lambda raw: gzip.compress(
        gzip.decompress(raw)[:5008]), "truncated: dimensions (10000,) need 10000 bytes of "
                                      "data, the file has 5000"),
    "gzip stream cut": ("train-images-idx3-ubyte.gz", lambda raw: raw[:len(raw) // 2],
                        "cannot be decompressed"),
}


@pytest.fixture
def bad_mnist(request, tmp_path, mnist_data_dir) -> tuple[Path, str]:
    """A data directory of MNIST with one file damaged as ``request.param`` says (the
    others linked to the user's copies, which stay as they are), and what the line says."""
    name, damage, said = MNIST_CASES[request.param]
    root = tmp_path / "data"
    (root / "mnist").mkdir(parents=True)
    source = mnist_data_dir / "mnist" if (mnist_data_dir / "mnist").is_dir() else mnist_data_dir
    for path in sorted(source.glob("*.gz")):
        if path.name == name:
            (root / "mnist" / name).write_bytes(damage(path.read_bytes()))
        else:
            (root / "mnist" / path.name).symlink_to(path)
    return root, said


@pytest.mark.parametrize("bad_mnist", list(MNIST_CASES), indirect=True)
@pytest.mark.parametrize("command", ["bandits.mnist", "bandits.gradient_variance", "bandits.run"])
def test_a_bad_mnist_file_is_one_line_in_every_command_that_reads_it(command, bad_mnist, tmp_path,
                                                                      capsys):
    import importlib

    data, said = bad_mnist
    out = tmp_path / "out"
    argv = {"bandits.mnist": ["--quick", "--epochs", "1"],
            "bandits.gradient_variance": ["--batch", "8", "--draws", "2"],
            "bandits.run": [*TINY_RUN, "--env", "mnist"]}[command]
    main = importlib.import_module(command).main
    _refused(main, [*argv, "--data-dir", str(data), "--out", str(out)], data, out, capsys,
             command, said)
    _cache_is_empty()


def test_every_data_file_error_is_a_data_error():
    from bandits.core.data import ChecksumError, DataNotFoundError
    from bandits.core.idx import IDXError
    from envs.mushroom_data import MushroomFormatError

    for kind in (ChecksumError, DataNotFoundError, IDXError, MushroomFormatError):
        assert issubclass(kind, DataError)
    # and each still what its callers catch it as
    assert issubclass(DataNotFoundError, FileNotFoundError)
    assert issubclass(MushroomFormatError, ValueError) and issubclass(IDXError, ValueError)
