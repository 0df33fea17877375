"""A user's files are never the project's to delete: an --overwrite replaces only the files
its own command wrote (never another command's, nor another bench mode's), a claim or a
cleanup removes only what the project wrote, a plot writes only the file it is given, and
bad numbers of workers, threads, runs and updates are one line with exit status 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bandits import mnist as mnist_cli
from bandits.analysis import plot
from bandits.core import claims, outputs
from bandits.simulator.run import OUTPUTS, main
from bandits.tools import bench

ROOT = Path(__file__).parents[1]
TINY = ["--env", "wheel", "--seeds", "1", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "1", "--no-progress", "--steps", "10"]
MNIST = ["--train-size", "64", "--test-size", "32", "--hidden", "8", "--epochs", "1",
         "--threads", "1", "--no-progress", "--ood-images", "8", "--prune", "0"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _one_line(err: str) -> str:
    err = err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _files(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*"))
            if p.is_file()}


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def _no_network(monkeypatch):
    import urllib.request

    def fail(*a, **k):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", fail)


# ------------------------------------------------------------- 1. only the project's files


@pytest.mark.slow
def test_overwrite_of_a_run_in_workers_keeps_a_users_files_in_its_parts(tmp_path):
    out = tmp_path / "X"
    assert main([*TINY, "--agent", "greedy", "bbb", "--workers", "2", "--out", str(out)]) == 0
    assert (out / "parts" / "0" / "metrics.csv").is_file()  # the workers' own runs
    (out / "parts" / "my-notes.txt").write_text("a user's notes")
    (out / "parts" / "0" / "mine.txt").write_text("mine")
    assert main([*TINY, "--agent", "greedy", "--workers", "1", "--overwrite",
                 "--out", str(out)]) == 0
    left = sorted(p.relative_to(out / "parts").as_posix() for p in (out / "parts").rglob("*"))
    assert left == ["0", "0/mine.txt", "my-notes.txt"]  # parts/1 held only the project's
    assert (out / "parts" / "my-notes.txt").read_text() == "a user's notes"
    assert "parts" not in json.loads((out / "config.json").read_text())  # the new run's


def test_overwrite_removes_a_folder_of_the_project_only_when_it_holds_nothing_else(tmp_path):
    out = tmp_path / "run"
    (out / "parts" / "3").mkdir(parents=True)
    (out / "parts" / "3" / "metrics.csv").write_text("old")
    (out / "parts" / "worker-3.log").write_text("old")
    (out / "parts" / "mine").mkdir()
    (out / "parts" / "mine" / "metrics.csv").write_text("a user's table, not a worker's")
    (out / "notes.txt").write_text("notes")
    removed = outputs.clear_outputs(out, OUTPUTS)
    assert sorted(removed) == ["parts/3/", "parts/3/metrics.csv", "parts/worker-3.log"]
    assert (out / "parts" / "mine" / "metrics.csv").is_file() and (out / "notes.txt").is_file()


def test_an_overwrite_never_follows_a_link_out_of_the_directory(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "0").mkdir(parents=True)
    (elsewhere / "0" / "metrics.csv").write_text("not in the run's directory")
    (elsewhere / "worker-0.log").write_text("not in the run's directory")
    out = tmp_path / "run"
    out.mkdir()
    (out / "parts").symlink_to(elsewhere, target_is_directory=True)
    assert outputs.clear_outputs(out, OUTPUTS) == []
    assert (elsewhere / "0" / "metrics.csv").is_file() and (elsewhere / "worker-0.log").is_file()


def test_mnist_overwrite_keeps_a_users_files_in_model_raw_and_checkpoint_folders(
        mnist_data_dir, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    base = [*MNIST, "--data-dir", str(mnist_data_dir)]
    out = tmp_path / "exp" / "grid"
    assert mnist_cli.main([*base, "--prior", "mixture", "gaussian", "--out", str(out)]) == 0
    models = sorted(p.parent for p in out.glob("*/summary.json"))
    assert len(models) == 2 and sorted(out.glob("checkpoints/batch-*.pt"))
    kept, gone = models
    (kept / "notes.txt").write_text("a")
    (kept / "raw" / "notes.txt").write_text("b")
    (out / "checkpoints" / "notes.txt").write_text("c")
    assert mnist_cli.main([*base, "--prior", "gaussian", "--out", str(out), "--overwrite"]) == 0
    assert _files(kept) == {"notes.txt": b"a", "raw/notes.txt": b"b"}  # the rest was its run's
    assert not gone.exists()  # held nothing but the earlier run's files
    assert _files(out / "checkpoints") == {"notes.txt": b"c"}
    assert json.loads((out / "summary.json").read_text())["label"]  # the new single model


# ------------------------------------------------ 2. never another command's outputs


def test_run_and_mnist_never_overwrite_each_others_outputs(mnist_data_dir, tmp_path,
                                                           monkeypatch):
    _no_network(monkeypatch)
    run_dir, mnist_dir = tmp_path / "run", tmp_path / "mnist"
    assert main([*TINY, "--agent", "greedy", "--out", str(run_dir)]) == 0
    assert mnist_cli.main([*MNIST, "--data-dir", str(mnist_data_dir),
                           "--out", str(mnist_dir)]) == 0
    before = {d: _files(d) for d in (run_dir, mnist_dir)}
    done = subprocess.run([sys.executable, "-m", "bandits.run", *TINY, "--agent", "greedy",
                           "--overwrite", "--out", str(mnist_dir)],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    err = _one_line(done.stderr)
    assert "bandits.mnist" in err and "choose another --out" in err
    done = subprocess.run([sys.executable, "-m", "bandits.mnist", *MNIST, "--data-dir",
                           str(mnist_data_dir), "--overwrite", "--out", str(run_dir)],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    err = _one_line(done.stderr)
    assert "bandits.run" in err and "choose another --out" in err
    assert {d: _files(d) for d in (run_dir, mnist_dir)} == before
    assert main(["--resume", str(run_dir), "--steps", "12"]) == 0  # resumes as before


def test_written_by_tells_the_command_from_its_files(tmp_path):
    from bandits.core import checkpoint

    (tmp_path / "a.json").write_text(json.dumps({"command": "python -m bandits.bench --x"}))
    (tmp_path / "b.json").write_text(json.dumps({"model": "bbb", "arch": "mlp",
                                                 "estimator": "reparam", "seed": 0}))
    (tmp_path / "c.json").write_text("[1, 2]")
    checkpoint.save(tmp_path / "d.pt", "bandits.mnist/3", {"x": 1})
    (tmp_path / "e.pt").write_bytes(b"\x00\x01 not a checkpoint")
    assert [outputs.written_by(tmp_path / n) for n in ("a.json", "b.json", "c.json", "d.pt",
                                                       "e.pt")] == [
        "bandits.bench", "bandits.mnist", None, "bandits.mnist", None]


# ------------------------------------------------------- 3. only the bench mode's files


def test_bench_overwrite_replaces_only_the_files_of_the_mode_it_runs(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    others = {}
    for mode in ("scaling", "default_command", "mnist_workers"):
        others[f"{mode}.csv"] = b"workers,seconds\n1,2\n"
        others[f"{mode}.json"] = json.dumps(
            {"command": f"python -m bandits.bench --{mode.replace('_', '-')}"}).encode()
    others["gradient_variance.csv"] = b"another command's table\n"
    for name, data in others.items():
        (out / name).write_bytes(data)
    (out / "bench.csv").write_text("an earlier bench\n")
    assert bench.main(["--runs", "1", "--updates", "1", "--rounds", "1", "--out", str(out),
                       "--overwrite"]) == 0
    assert {n: (out / n).read_bytes() for n in others} == others
    assert (out / "bench.csv").read_text() != "an earlier bench\n"
    assert json.loads((out / "bench.json").read_text())["runs_per_agent"] == 1


@pytest.mark.parametrize("flag, files", [
    ([], ("bench.csv", "bench.json")),
    (["--scaling"], ("scaling.csv", "scaling.json")),
    (["--default-command"], ("default_command.csv", "default_command.json")),
    (["--mnist-workers"], ("mnist_workers.csv", "mnist_workers.json")),
])
def test_each_bench_mode_names_its_own_files(flag, files):
    args = bench.Settings(**vars(bench.build_parser().parse_args(flag)))
    assert bench.mode_outputs(args) == files


# ------------------------------------------------- 4. the claim and cleanup are the project's


def _run_here_or_in_a_process(args: list[str], in_process: bool) -> tuple[int, str]:
    if in_process:
        return main(args), ""
    done = subprocess.run([sys.executable, "-m", "bandits.run", *args], env=ENV,
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr


@pytest.mark.parametrize("content, in_process", [("mine", False), ("", True)])
def test_a_users_lock_and_temporary_survive_a_refused_and_an_overwriting_run(
        tmp_path, capsys, content, in_process):
    out = tmp_path / "run"
    out.mkdir()
    (out / claims.LOCK).write_text(content)
    draft = out / f".draft.{_dead_pid()}.tmp"  # named like a temporary of a dead process
    draft.write_text("a user's draft")
    args = [*TINY, "--agent", "greedy", "--out", str(out)]
    code, err = _run_here_or_in_a_process(args, in_process)
    assert code == 2 and "not empty" in _one_line(err or capsys.readouterr().err)
    assert (out / claims.LOCK).read_text() == content and draft.read_text() == "a user's draft"
    code, err = _run_here_or_in_a_process([*args, "--overwrite"], in_process)
    assert code == 0, err
    assert (out / claims.LOCK).read_text() == content and draft.read_text() == "a user's draft"
    assert (out / "metrics.csv").is_file()


def test_a_claim_records_its_process_and_a_killed_ones_is_taken_over_and_removed(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from bandits.core.outputs import claim_dir; "
         f"claim_dir({str(out)!r}); print('held', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert (out / claims.LOCK).read_text() == f"{claims.CLAIM}{holder.pid}\n"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    dead = _dead_pid()
    stale = out / f".metrics.csv.{dead}.tmp"  # what a killed write of the project left
    stale.write_text("partial")
    draft = out / f".draft.{dead}.tmp"
    draft.write_text("a user's draft")
    assert main([*TINY, "--agent", "greedy", "--overwrite", "--out", str(out)]) == 0
    assert not (out / claims.LOCK).exists()  # the killed claim was the project's: removed
    assert not stale.exists() and draft.read_text() == "a user's draft"


# ----------------------------------------------------- 5. a plot writes only its file


def test_plot_out_writes_only_the_file_named(tmp_path, capsys):
    run = tmp_path / "run"
    assert main([*TINY, "--agent", "greedy", "--out", str(run)]) == 0
    pu = tmp_path / "pu"
    pu.mkdir()
    (pu / "report.pdf").write_bytes(b"%PDF a user's report")
    assert plot.main([str(run), "--out", str(pu / "report.png")]) == 0
    assert (pu / "report.pdf").read_bytes() == b"%PDF a user's report"
    assert sorted(p.name for p in pu.iterdir()) == ["report.pdf", "report.png"]
    assert "report.pdf" not in capsys.readouterr().out


# ------------------------------------------------ 6. workers, threads, runs, updates


@pytest.mark.parametrize("args, flag", [
    (["--threads", "-2"], "--threads"),
    (["--runs", "10000000"], "--runs"),
    (["--runs", "0"], "--runs"),
    (["--updates", "1000000000000"], "--updates"),
    (["--rounds", "0"], "--rounds"),
    (["--scaling-steps", "60", "10"], "--scaling-steps"),
])
def test_bench_flags_out_of_range_are_one_line(tmp_path, monkeypatch, capsys, args, flag):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as err:
        bench.main(args)
    assert err.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"bandits.bench: error: {flag}"), line
    assert not (tmp_path / "runs").exists()  # refused before any directory was made


def test_bench_threads_minus_two_is_one_line_from_a_real_process(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bandits.bench", "--threads", "-2"],
                          env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "--threads must be in [0, 1,024], got -2" in _one_line(done.stderr)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["abc", "-1", "0", "1.5", "5000"])
def test_a_bad_bandits_workers_is_one_line_and_touches_nothing(tmp_path, monkeypatch,
                                                               capsys, value):
    out = tmp_path / "run"
    assert main([*TINY, "--agent", "greedy", "--out", str(out)]) == 0
    before = _files(out)
    capsys.readouterr()
    monkeypatch.setenv("BANDITS_WORKERS", value)
    assert main([*TINY, "--agent", "greedy", "--overwrite", "--out", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "BANDITS_WORKERS" in line and repr(value) in line and "from 1 to 1,024" in line
    assert _files(out) == before  # the earlier outputs were not cleared
    assert main([*TINY, "--agent", "greedy", "--out", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()


def test_bandits_workers_abc_from_a_real_process(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bandits.run", *TINY, "--agent", "greedy",
                           "--out", str(tmp_path / "run")],
                          env={**ENV, "BANDITS_WORKERS": "abc"}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2
    line = _one_line(done.stderr)
    assert line.startswith("bandits.run: error: environment variable BANDITS_WORKERS='abc'")
    assert not (tmp_path / "run").exists()


def test_an_empty_bandits_workers_is_unset(monkeypatch):
    from bandits.core.processes import requested_workers

    monkeypatch.setenv("BANDITS_WORKERS", "")
    assert requested_workers(None, 7) == 7
    monkeypatch.setenv("BANDITS_WORKERS", "3")
    assert requested_workers(None, 7) == 3 and requested_workers(2, 7) == 2


def test_mnist_refuses_a_bad_bandits_workers_in_one_line(mnist_data_dir, tmp_path,
                                                         monkeypatch, capsys):
    _no_network(monkeypatch)
    monkeypatch.setenv("BANDITS_WORKERS", "abc")
    out = tmp_path / "m"
    assert mnist_cli.main([*MNIST, "--data-dir", str(mnist_data_dir), "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "BANDITS_WORKERS='abc'" in lines[0]
    assert not out.exists()


def test_a_bandit_run_never_overwrites_the_learner_screens_outputs(tmp_path):
    screen = tmp_path / "screen"
    screen.mkdir()
    (screen / "screen.json").write_text(json.dumps(
        {"command": "python -m bandits.studies.learner_screen --out screen"}))
    (screen / "summary.csv").write_text("learner,never_eaten\n")
    (screen / "table.md").write_text("| learner |\n")
    before = _files(screen)
    done = subprocess.run([sys.executable, "-m", "bandits.run", *TINY, "--agent", "greedy",
                           "--overwrite", "--out", str(screen)],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    err = _one_line(done.stderr)
    assert "bandits.studies.learner_screen" in err and "choose another --out" in err
    assert _files(screen) == before
    with pytest.raises(outputs.OutputDirError, match="learner_screen"):  # mnist's table.md
        outputs.output_dir(screen, "x", True, ("table.md",), kind="bandits.mnist")
    assert _files(screen) == before


def test_a_files_twin_record_names_its_writer_where_commands_share_a_folder(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps({"command": "python -m bandits.bench"}))
    (tmp_path / "bench.csv").write_text("a\n")
    (tmp_path / "gradient_variance.json").write_text(
        json.dumps({"command": "python -m bandits.gradient_variance"}))
    (tmp_path / "gradient_variance.csv").write_text("b\n")
    (tmp_path / "notes.csv").write_text("c\n")
    assert outputs.foreign_outputs(tmp_path, "bandits.bench", ("bench.csv",)) is None
    assert outputs.foreign_outputs(tmp_path, "bandits.bench", ("gradient_variance.csv",)) == (
        "bandits.gradient_variance", ["gradient_variance.csv"])
    assert outputs.foreign_outputs(tmp_path, "bandits.bench", ("notes.csv",)) is None


def test_mnist_overwrite_keeps_a_users_copy_of_a_model_folder(mnist_data_dir, tmp_path,
                                                              monkeypatch):
    import shutil

    _no_network(monkeypatch)
    base = [*MNIST, "--data-dir", str(mnist_data_dir)]
    out = tmp_path / "grid"
    assert mnist_cli.main([*base, "--seeds", "2", "--out", str(out)]) == 0
    model = out / "seed=1"
    assert (model / "config.json").is_file()
    shutil.copytree(model, out / "my-backup")
    backup = _files(out / "my-backup")
    assert mnist_cli.main([*base, "--seeds", "2", "--out", str(out), "--overwrite"]) == 0
    assert _files(out / "my-backup") == backup


@pytest.mark.slow
@pytest.mark.parametrize("copied, over", [(1, 0), (0, 1)])
def test_a_batch_checkpoint_copied_over_another_is_refused_on_resume(mnist_data_dir, tmp_path,
                                                                     monkeypatch, capsys,
                                                                     copied, over):
    import shutil

    _no_network(monkeypatch)
    out = tmp_path / "grid"
    base = [*MNIST, "--data-dir", str(mnist_data_dir), "--workers", "1"]
    assert mnist_cli.main([*base, "--prior", "mixture", "gaussian", "--out", str(out)]) == 0
    batches = sorted((out / "checkpoints").glob("batch-*.pt"))
    assert len(batches) == 2
    shutil.copy(batches[copied], batches[over])
    before = _files(out)
    capsys.readouterr()
    code = mnist_cli.main(["--resume", str(out), "--epochs", "2"])
    assert code != 0
    err = capsys.readouterr().err
    assert "holds the models" in err and "copy back its own checkpoint" in err
    assert _files(out) == before  # refused before any batch trained or any file changed


@pytest.mark.slow
def test_an_interrupted_bench_overwrite_keeps_the_earlier_files(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "scaling.csv").write_text("workers,seconds_per_step\n1,0.5\n")
    (out / "scaling.json").write_text(json.dumps({"command": "python -m bandits.bench --scaling"}))
    before = _files(out)
    proc = subprocess.Popen([sys.executable, "-m", "bandits.bench", "--scaling",
                             "--scaling-steps", "400", "800", "--rounds", "3", "--out", str(out),
                             "--overwrite"], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    import time

    time.sleep(8)  # started, still measuring
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, err  # stopped while measuring
    assert {k: v for k, v in _files(out).items() if k.startswith("scaling")} == before


# ------------------------------------------ round 5: copies named like the project's files


@pytest.mark.slow
def test_overwrite_keeps_a_users_copies_of_a_worker_part_and_log(tmp_path):
    out = tmp_path / "run"
    assert main([*TINY, "--agent", "greedy", "eps1", "--workers", "2", "--out", str(out)]) == 0
    parts = out / "parts"
    backup = parts / "0-backup"
    backup.mkdir()
    (backup / "metrics.csv").write_bytes((parts / "0" / "metrics.csv").read_bytes())
    (parts / "worker-0-old.log").write_text("an old log\n")
    assert main([*TINY, "--agent", "greedy", "--workers", "1", "--out", str(out),
                 "--overwrite"]) == 0
    assert (backup / "metrics.csv").is_file() and (parts / "worker-0-old.log").is_file()


def test_the_patterns_name_numbers_only_where_the_command_puts_them():
    assert claims.name_matches("worker-12.log", "worker-<n>.log")
    for other in ("worker-0-old.log", "worker-.log", "worker-0.log.bak", "xworker-0.log"):
        assert not claims.name_matches(other, "worker-<n>.log"), other
    assert claims.name_matches("batch-3.pt", "checkpoints/batch-<n>.pt".split("/")[-1])
    assert not claims.name_matches("batch-0-good.pt", "batch-<n>.pt")
    assert not claims.name_matches("batch-1 (copy).pt", "batch-<n>.pt")
    assert claims.name_matches("a.csv", "*.csv") and not claims.name_matches("a.csvx", "*.csv")


def test_an_mnist_model_folder_copied_under_another_name_is_not_the_grids(tmp_path):
    from bandits.mnist.training.train import is_model_dir

    record = {"model": "bbb", "arch": "mlp", "estimator": "reparam", "seed": 0,
              "prior": "mixture", "pi": 0.25}
    for name, own in (("prior=mixture__seed=0", True), ("seed=0", True),
                      ("pi=0.25__seed=0", True), ("best_prior=mixture__seed=0", False),
                      ("prior=gaussian__seed=0", False), ("prior=mixture__seed=1", False),
                      ("copy of seed=0", False)):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps(record))
        assert is_model_dir(d) is own, name
