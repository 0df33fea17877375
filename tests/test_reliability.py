"""Results that never lie (issue: sweeps, checkpoints and output files): every case
a careless user ran into gives the right result or one line with exit status 2."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from bandits.core import checkpoint, claims, files, outputs
from bandits.core.command_line import with_flags
from bandits.run import main

TINY = ["--env", "wheel", "--seeds", "2", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "1", "--no-progress", "--agent", "bbb", "greedy"]
ROOT = Path(__file__).parents[1]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


# ------------------------------------------------------------------ checkpoints


def test_a_checkpoint_copied_from_another_run_is_refused(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([*TINY, "--steps", "5", "--out", str(a)]) == 0
    assert main([*TINY, "--steps", "5", "--lr", "0.003", "--out", str(b)]) == 0
    config_b = (b / "config.json").read_bytes()
    metrics_b = (b / "metrics.csv").read_bytes()
    shutil.copy(a / "checkpoint.pt", b / "checkpoint.pt")
    capsys.readouterr()
    assert main(["--resume", str(b), "--steps", "8"]) == 2
    assert "belongs to another run" in _one_line(capsys)
    assert (b / "config.json").read_bytes() == config_b  # nothing of b was touched
    assert (b / "metrics.csv").read_bytes() == metrics_b


def test_a_checkpoint_without_its_config_is_refused(tmp_path, capsys):
    a = tmp_path / "a"
    assert main([*TINY, "--steps", "5", "--out", str(a)]) == 0
    (a / "config.json").unlink()
    capsys.readouterr()
    assert main(["--resume", str(a)]) == 2
    assert "config.json is missing" in _one_line(capsys)


def test_a_checkpoint_that_lacks_a_key_is_one_line(tmp_path, capsys):
    a = tmp_path / "a"
    assert main([*TINY, "--steps", "5", "--out", str(a)]) == 0
    cfg = json.loads((a / "config.json").read_text())
    state = checkpoint.load(a / "checkpoint.pt", "bandits.run")
    del state["populations"][0]["buffer"]
    checkpoint.save(a / "checkpoint.pt", "bandits.run", state, identity=cfg["identity"])
    capsys.readouterr()
    assert main(["--resume", str(a), "--steps", "8"]) == 2
    assert "does not hold the state this run needs" in _one_line(capsys)


def test_torch_writer_errors_become_one_line_and_leave_no_temporary_file(tmp_path,
                                                                         monkeypatch):
    p = tmp_path / "checkpoint.pt"
    checkpoint.save(p, "k", {"step": 1})

    def failing_save(obj, f, *a, **k):
        raise RuntimeError("[enforce fail at inline_container.cc] file write failed")

    monkeypatch.setattr(checkpoint.torch, "save", failing_save)
    with pytest.raises(checkpoint.CheckpointError, match="file write failed; the previous"):
        checkpoint.save(p, "k", {"step": 2})
    monkeypatch.undo()
    assert checkpoint.load(p, "k")["step"] == 1
    assert sorted(x.name for x in tmp_path.iterdir()) == ["checkpoint.pt"]


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB file system of its own (tmpfs), where the test machine allows mounting."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small file system here")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_disk_during_a_checkpoint(small_disk, capsys):
    out = small_disk / "run"
    assert main([*TINY, "--steps", "5", "--out", str(out)]) == 0
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as f:  # fill the disk to the last byte
        for size in (4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass
    capsys.readouterr()
    code = main(["--resume", str(out), "--steps", "10", "--checkpoint-every", "0"])
    assert code == 2
    assert "No space left on device" in capsys.readouterr().err
    assert checkpoint.load(out / "checkpoint.pt", "bandits.run")["steps_done"] == 5
    assert not [x for x in out.iterdir() if x.name.endswith(".tmp")]  # nothing left behind
    filler.unlink()
    assert main(["--resume", str(out), "--steps", "10"]) == 0


@pytest.mark.slow
def test_a_full_disk_while_gathering_the_workers_files_is_one_line(tmp_path, capsys,
                                                                    monkeypatch):
    from bandits.simulator import parallel

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "metrics.csv"))

    monkeypatch.setattr(parallel, "merge_csv", full)
    assert main([*TINY, "--steps", "3", "--workers", "2", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0] and "Traceback" not in err[0]


# ------------------------------------------------------------------ output files


def test_csvs_are_written_atomically(tmp_path, monkeypatch):
    f = tmp_path / "metrics.csv"
    files.write_csv(pd.DataFrame({"a": [1, 2]}), f)
    before = f.read_bytes()

    def dying_fsync(fd):
        raise KeyboardInterrupt  # killed after part of the file went to disk

    monkeypatch.setattr(files.os, "fsync", dying_fsync)
    with pytest.raises(KeyboardInterrupt):
        files.write_csv(pd.DataFrame({"a": range(10_000)}), f)
    monkeypatch.undo()
    assert f.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["metrics.csv"]


def test_a_failed_run_leaves_no_empty_directory(tmp_path, capsys):
    out = tmp_path / "new"
    (tmp_path / "data" / "mushroom").mkdir(parents=True)
    (tmp_path / "data" / "mushroom" / "agaricus-lepiota.data").write_text("p,x\n")  # cut short
    code = main([*TINY[2:], "--env", "mushroom", "--data-dir", str(tmp_path / "data"),
                 "--out", str(out)])
    assert code == 2 and not out.exists()
    assert "agaricus-lepiota.data, line 1" in capsys.readouterr().err


def test_the_config_records_a_command_that_reruns_it(tmp_path):
    out = tmp_path / "run"
    argv = [*TINY, "--steps", "4", "--out", str(out)]
    assert main(argv) == 0
    command = json.loads((out / "config.json").read_text())["command"]
    # the tests run in exact mode (BANDITS_EXACT=1, conftest.py): the command says so,
    # so that copying it reproduces the bytes
    from bandits.core import kernels

    exact = " --exact" if kernels.in_force() else ""
    assert command == "python -m bandits.run " + " ".join(argv) + exact


@pytest.mark.slow
def test_two_runs_started_at_once_into_one_directory(tmp_path):
    out = tmp_path / "shared"
    cmd = [sys.executable, "-m", "bandits.run", *TINY, "--steps", "30", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    done = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in done)
    assert codes == [0, 2], done
    err = next(e for code, e in done if code == 2).strip()
    assert ("another run is writing" in err or "not empty" in err) and len(err.splitlines()) == 1
    from bandits.core.outputs import LOCK

    assert not (out / LOCK).exists()


def test_a_claimed_directory_is_refused_even_with_overwrite(tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from bandits.core.outputs import claim_dir; "
         f"claim_dir({str(out)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main([*TINY, "--steps", "3", "--overwrite", "--out", str(out)]) == 2
        assert "another run is writing" in _one_line(capsys)
    finally:
        holder.kill()
        holder.wait()
    assert main([*TINY, "--steps", "3", "--overwrite", "--out", str(out)]) == 0  # freed by death


def test_resume_of_a_read_only_directory_is_one_line(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    assert main([*TINY, "--steps", "3", "--out", str(out)]) == 0
    capsys.readouterr()
    real_open = os.open

    def read_only(path, flags, *a, **k):  # as a read-only mount answers (root ignores chmod)
        if str(path).startswith(str(out)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(13, "Read-only file system")
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(outputs.os, "open", read_only)
    assert main(["--resume", str(out), "--steps", "6"]) == 2
    assert "Read-only file system" in _one_line(capsys)


# ------------------------------------------------------------------ bad settings


@pytest.mark.parametrize("args, message", [
    (["--prior-pi", "0"], "--prior-pi must be in (0, 1), got 0"),
    (["--prior-pi", "1"], "--prior-pi must be in (0, 1), got 1"),
    (["--seed", "-1"], "--seed must be in [0, "),
    (["--noise-sigma", "1e-200"], "--noise-sigma must be in [0.001, 1000]"),
    (["--prior-sigma2", "1e-320"], "--prior-sigma2 must be in [1e-08, 10000]"),
    (["--init-sigma", "1e300"], "--init-sigma must be in [1e-08, 10000]"),
    (["--steps", "100000000000"], "--steps must be a positive integer (at most"),
    (["--seeds", "100000000000"], "--seeds must be a positive integer (at most"),
    (["--steps", "900000000"], "GiB of memory"),
    (["--seeds", "50000000"], "GiB of memory"),
    (["--hidden", "90000", "90000"], "GiB of memory"),
    (["--hidden", "10000000"], "--hidden must be in [1, 100,000]"),
    (["--threads", "100000"], "--threads must be in [0, 1,024]"),
    (["--agent", "bootstrap", "--heads", "9000", "--seeds", "1000"], "GiB of memory"),
    (["--heads", "100000"], "--heads must be in [1, 10,000]"),
    (["--lr", "nan"], "--lr must be a finite number in (0, inf)"),
])
def test_out_of_range_settings_are_one_line(tmp_path, capsys, args, message):
    out = tmp_path / "x"
    assert main(with_flags(TINY, [*args, "--out", str(out)])) == 2
    assert message in _one_line(capsys)
    assert not out.exists()


def test_a_very_long_output_name_is_one_line(tmp_path, capsys):
    assert main([*TINY, "--out", str(tmp_path / ("x" * 5000))]) == 2
    assert "cannot write to output directory" in _one_line(capsys)


def test_argparse_and_usage_errors_share_one_prefix(capsys):
    assert main(["--steps", "ten"]) == 2  # argparse's error, reported by main as one line
    a = capsys.readouterr().err
    assert main(["--steps", "0"]) == 2
    b = capsys.readouterr().err
    assert a.startswith("bandits.run: error:") and b.startswith("bandits.run: error:")


# ------------------------------------------------------------------ Ctrl-C


def test_a_second_ctrl_c_during_the_final_writes_keeps_every_output(tmp_path, monkeypatch):
    from bandits.simulator import loop

    out = tmp_path / "run"
    original = loop.write_outputs

    def interrupted_writes(*a, **k):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the results are written
        time.sleep(0.05)
        return original(*a, **k)

    monkeypatch.setattr(loop, "write_outputs", interrupted_writes)
    assert main([*TINY, "--steps", "4", "--out", str(out)]) == 0
    for name in ("metrics.csv", "summary.csv", "config.json", "regret.png", "regret.pdf"):
        assert (out / name).is_file(), name


def test_overwrite_clears_the_previous_outputs_and_keeps_a_users_files(tmp_path):
    from bandits.run import main

    out = tmp_path / "run"
    assert main([*TINY, "--steps", "20", "--out", str(out)]) == 0
    (out / "diagnosis.csv").write_text("an old diagnosis\n")  # an output of bandits.diagnose
    (out / ".lock").write_text("a user's file")
    (out / "notes.txt").write_text("a user's notes")
    assert main([*TINY, "--steps", "10", "--out", str(out), "--overwrite"]) == 0
    assert not (out / "diagnosis.csv").exists()
    assert (out / ".lock").read_text() == "a user's file"
    assert (out / "notes.txt").read_text() == "a user's notes"
    assert pd.read_csv(out / "summary.csv")["steps"].eq(10).all()


def test_a_users_lock_file_survives_a_refused_run(tmp_path, capsys):
    from bandits.run import main

    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").write_text("mine")
    assert main([*TINY, "--steps", "10", "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (out / ".lock").read_text() == "mine"


def test_a_temporary_left_by_a_killed_write_is_removed_on_the_next_start(tmp_path):
    from bandits.run import main

    out = tmp_path / "run"
    assert main([*TINY, "--steps", "10", "--out", str(out)]) == 0
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = out / f".checkpoint.pt.{dead}.tmp"
    stale.write_bytes(b"x" * 1000)
    (out / claims.LOCK).write_text(f"{claims.CLAIM}{dead}\n")  # a killed run's claim
    assert main(["--resume", str(out), "--steps", "15"]) == 0
    assert not stale.exists()


def test_a_users_file_named_like_a_temporary_stays_when_the_folder_is_refused(tmp_path,
                                                                              capsys):
    from bandits.run import main

    out = tmp_path / "mine"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    users = out / f".metrics.csv.{dead}.tmp"  # no killed run's claim beside it: the user's
    users.write_text("mine")
    assert main([*TINY, "--steps", "3", "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert users.read_text() == "mine"


@pytest.mark.parametrize("module", ["run", "sweep", "plot", "diagnose", "bench", "regression",
                                    "gradient_variance", "mnist"])
def test_every_help_starts_with_a_whole_sentence(module):
    done = subprocess.run([sys.executable, "-m", f"bandits.{module}", "--help"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0
    text = done.stdout.split("\n\n")[1]  # the description, after the usage
    first = " ".join(text.split())
    assert first[0].isupper() and first.rstrip().endswith((".", "?", ")", "3")), first
    assert "(default: None)" not in done.stdout


def test_bench_writes_outside_the_shipped_results_by_default(tmp_path, monkeypatch):
    from bandits.tools import bench

    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "bench").mkdir(parents=True)
    assert bench.main(["--runs", "1", "--updates", "1", "--rounds", "1"]) == 0
    assert list((tmp_path / "results" / "bench").iterdir()) == []
    made = list((tmp_path / "runs").iterdir())
    assert len(made) == 1 and (made[0] / "bench.json").is_file()
    out = tmp_path / "named"
    assert bench.main(["--runs", "1", "--updates", "1", "--rounds", "1", "--out", str(out)]) == 0
    with pytest.raises(SystemExit) as err:  # refuses to overwrite without --overwrite
        bench.main(["--runs", "1", "--updates", "1", "--rounds", "1", "--out", str(out)])
    assert err.value.code == 2


def test_a_sweep_directory_is_claimed_and_workers_are_bounded_by_memory(tmp_path, capsys):
    from bandits.sweep import main

    out = tmp_path / "s"
    out.mkdir()
    holder = subprocess.Popen(  # another sweep is writing here
        [sys.executable, "-c", "import sys; from pathlib import Path; from bandits.core.outputs "
         f"import claim_dir; claim_dir(Path({str(out)!r})); print('held', flush=True); "
         "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["--set", "lr=0.001", "--out", str(out), "--no-progress", "--",
                     "--agent", "uniform", "--env", "wheel", "--steps", "5"]) == 2
        assert "another run is writing" in capsys.readouterr().err
    finally:
        holder.communicate("", timeout=60)
    assert main(["--set", "lr=0.001", "--out", str(out), "--workers", "100000",
                 "--no-progress", "--", "--agent", "uniform", "--env", "wheel"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--workers 100000" in err and "give at most" in err and len(err.splitlines()) == 1


STARTING = {
    "bandits.run": [*TINY, "--steps", "50"],
    "bandits.sweep": ["--set", "lr=0.001", "--no-progress", "--", *TINY, "--steps", "50"],
    "bandits.mnist": ["--epochs", "1", "--no-progress"],
}


@pytest.mark.parametrize("ignored", [False, True], ids=["ctrl-c", "sigint-ignored-at-start"])
@pytest.mark.parametrize("module", list(STARTING))
def test_an_interrupt_while_starting_is_one_line_and_exit_130(tmp_path, module, ignored):
    """Ctrl-C during the imports: one line, no traceback, nothing left behind; and a process
    started with SIGINT ignored (a script's `cmd &`) still stops."""
    out = tmp_path / "out"
    args = [*STARTING[module], "--out", str(out)]
    if module == "bandits.sweep":  # --out is the sweep's flag, before the --
        args = ["--out", str(out), *STARTING[module]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored else None
    proc = subprocess.Popen([sys.executable, "-m", module, *args], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=pre)
    time.sleep(0.4)  # inside the imports of torch and pandas
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert "interrupted" in stderr
    assert not out.exists() or not any(p.name != claims.LOCK for p in out.iterdir())


def test_an_interrupt_while_building_the_run_is_one_line_and_leaves_no_directory(
        tmp_path, capsys, monkeypatch):
    from bandits.simulator import loop
    from bandits.simulator import run as runner

    def interrupted(cfg):
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "build", interrupted)
    out = tmp_path / "out"
    assert runner.main([*TINY, "--steps", "10", "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "interrupted while starting" in err
    assert not out.exists()


def test_an_interrupt_right_after_config_json_leaves_the_folder_to_run_again(
        tmp_path, capsys, monkeypatch):
    from bandits.simulator import loop
    from bandits.simulator import run as runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    out = tmp_path / "out"
    with monkeypatch.context() as m:
        m.setattr(loop, "Progress", interrupted)  # config.json written, no step run yet
        assert runner.main([*TINY, "--steps", "10", "--out", str(out)]) == 130
    assert "interrupted while starting" in capsys.readouterr().err
    assert not out.exists()
    assert runner.main([*TINY, "--steps", "10", "--out", str(out)]) == 0  # the same command


def test_an_interrupt_as_the_figure_is_drawn_says_the_records_are_whole(
        tmp_path, capsys, monkeypatch):
    from bandits.simulator import run as runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "draw_run", interrupted)
    out = tmp_path / "out"
    assert runner.main([*TINY, "--steps", "10", "--out", str(out), "--workers", "1"]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "interrupted as the run ended" in err, err
    assert f"python -m bandits.plot {out}" in err
    assert json.loads((out / "config.json").read_text())["steps_completed"] == 10
    assert (out / "metrics.csv").is_file() and (out / "summary.csv").is_file()


def test_a_sweep_starts_with_a_line_saying_what_runs(tmp_path, capsys):
    from bandits.experiments.sweep import main as sweep_main

    out = tmp_path / "s"
    assert sweep_main(["--set", "lr=0.001,0.002", "--out", str(out), "--workers", "1",
                       "--no-progress", "--", "--agent", "greedy", "--env", "wheel",
                       "--steps", "5", "--seeds", "2", "--hidden", "4"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"bandits.sweep: 2 points over lr (2), 2 seeds, 5 steps each, 1 worker -> {out}"


def test_sigterm_leaves_no_claim_behind(tmp_path):
    out = tmp_path / "reg"
    proc = subprocess.Popen([sys.executable, "-m", "bandits.regression", "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while not (out / claims.LOCK).exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "the command never claimed its folder"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    assert "stopped by signal SIGTERM" in err
    assert not (out / claims.LOCK).exists()


@pytest.mark.parametrize("work, said", [
    ("", "interrupted while starting; nothing was written"),
    ("with processes.ctrl_c_on():\n    pass\n",
     "interrupted as it ended; every output written is whole"),
])
def test_a_ctrl_c_as_a_command_ends_says_what_is_true(work, said):
    code = ("import os, signal, time\nfrom bandits.core import processes, startup\n"
            "startup.interruptible('bandits.bench')\n" + work +
            "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 130
    assert done.stderr.strip() == f"bandits.bench: {said}"
