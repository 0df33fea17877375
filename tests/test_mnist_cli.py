"""The command line of ``python -m bandits.mnist``: one-line errors with exit status 2,
refused settings, help texts, the printed threads and outputs, no empty directory left
behind by a run that cannot find its data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request

import pandas as pd
import pytest
import torch

from bandits import mnist
from bandits.bayes import ScaleMixturePrior
from bandits.core.config import UsageError
from bandits.mnist import cli
from bandits.mnist.evaluation.model_files import read_csv_rows
from bandits.mnist.models import config
from bandits.mnist.models.autograd_nets import AutogradNets
from bandits.mnist.models.classifiers import BatchedClassifiers, RunSpec
from bandits.mnist.reports.report import report
from bandits.mnist.training import train

PREFIX = "bandits.mnist: error: "


def _no_network(monkeypatch):
    def fail(*a, **k):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", fail)


def _one_error_line(capsys) -> str:
    """The run's stderr, which must be exactly one line with the error prefix."""
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(PREFIX), lines[0]
    return lines[0]


# --------------------------------------------------------------------------- 1. settings


def test_zero_epochs_refused(capsys):
    assert mnist.main(["--epochs", "0", "--no-progress"]) == 2
    line = _one_error_line(capsys)
    assert "--epochs must be in [1, 1,000,000]" in line and "got 0" in line
    assert "test error" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, flag", [
    (["--seed", "-1"], "--seed"),
    (["--seed", str(2**40)], "--seed"),
    (["--hidden", "0"], "--hidden"),
    (["--hidden", "-5"], "--hidden"),
    (["--layers", "0"], "--layers"),
    (["--batch-size", "0"], "--batch-size"),
    (["--samples", "0"], "--samples"),
    (["--eval-samples", "-1"], "--eval-samples"),
    (["--train-size", "-1"], "--train-size"),
    (["--test-size", "-3"], "--test-size"),
    (["--ood-images", "0"], "--ood-images"),
    (["--seeds", "0"], "--seeds"),
    (["--threads", "-1"], "--threads"),
    (["--threads", "100000"], "--threads"),
    (["--lr", "0"], "--lr"),
    (["--lr", "inf"], "--lr"),
    (["--lr", "nan"], "--lr"),
    (["--lr-min", "-1"], "--lr-min"),
    (["--dropout", "1"], "--dropout"),
    (["--init-rho", "-1000"], "--init-rho"),
    (["--checkpoint-every", "-1"], "--checkpoint-every"),
    (["--checkpoint-every", "nan"], "--checkpoint-every"),
    (["bench", "--bench-rounds", "0"], "--bench-rounds"),
    (["bench", "--bench-runs", "0"], "--bench-runs"),
    (["bench", "--bench-batches", "-1"], "--bench-batches"),
    (["--neg-log-sigma1", "-800"], "--neg-log-sigma1"),
    (["--neg-log-sigma2", "1000"], "--neg-log-sigma2"),
    (["--prune", "0,x"], "--prune"),
    (["--prune", "150"], "--prune"),
    (["bench", "--bench-hidden", "0,16"], "--bench-hidden"),
])
def test_numeric_settings_out_of_range_refused(argv, flag, capsys):
    assert mnist.main([*argv, "--no-progress"]) == 2
    line = _one_error_line(capsys)
    assert f"{flag} must be" in line
    # the allowed range is named
    assert re.search(r"must be (a finite number in |in [\[(]-?[\d.,]+, \S+[\])]"
                     r"|a comma-separated list)", line), line


def test_absurd_sizes_refused_before_allocating(capsys, monkeypatch):
    def no_alloc(*a, **k):
        raise AssertionError("nothing may be built for refused settings")

    monkeypatch.setattr(train, "build_classifiers", no_alloc)
    monkeypatch.setattr(train, "load_splits", no_alloc)
    assert mnist.main(["--hidden", "100000000", "--no-progress"]) == 2
    line = _one_error_line(capsys)
    have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert "--hidden 100000000" in line and "needs about" in line and "PiB" in line
    assert f"{config._bytes_text(have)} of memory" in line
    assert mnist.main(["bench", "--bench-hidden", "400,100000000"]) == 2
    assert "--bench-hidden 100000000" in _one_error_line(capsys)


def test_memory_estimate_counts_every_model(capsys, monkeypatch):
    one = cli.parse_config(["--hidden", "1000"])
    many = cli.parse_config(["--hidden", "1000", "--seeds", "3", "--pi", "0.25", "0.5"])
    need_one, models_one, _ = config.memory_estimate(one)
    need_many, models_many, _ = config.memory_estimate(many)
    assert (models_one, models_many) == (1, 6)
    params = 784 * 1000 + 1000 + 1000 * 1000 + 1000 + 1000 * 10 + 10
    assert need_one == params * 4 * 4 + one.ood_images * 784 * 12
    assert need_many - need_one == 5 * params * 4 * 4
    # a machine with 1 GiB: 6 models of 2 x 1000 fit, 60 seeds of 2 x 5000 do not
    monkeypatch.setattr(config, "machine_memory", lambda device: 2**30)
    cli.parse_config(["--hidden", "1000", "--seeds", "3", "--pi", "0.25", "0.5"])
    assert mnist.main(["--hidden", "5000", "--seeds", "60"]) == 2
    line = _one_error_line(capsys)
    assert "60 model(s)" in line and "1.0 GiB of memory" in line


# --------------------------------------------------------------------------- 2. parse errors


@pytest.mark.parametrize("argv, message", [
    (["--epochs", "abc"], "argument --epochs: invalid int value: 'abc'"),
    (["--lr", "fast"], "argument --lr: invalid float value: 'fast'"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--hidden"], "argument --hidden: expected one argument"),
])
def test_parse_errors_are_one_line(argv, message, capsys):
    assert mnist.main(argv) == 2
    line = _one_error_line(capsys)
    assert line == f"{PREFIX}{message} (see --help)"
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("argv, message", [
    (["--model", "bbb", "--dropout", "0.3"], "--dropout 0.3 has no effect in this run; use "
                                             "--model dropout, or leave --dropout out"),
    (["--prior", "gaussian", "--pi", "0.3"], "--pi 0.3 has no effect in this run"),
    (["--prior", "mixture", "--neg-log-prior-sigma", "1"], "--neg-log-prior-sigma 1 has no"),
    (["--model", "sgd", "--prior", "gaussian"], "--prior gaussian has no effect in this run"),
    (["--model", "sgd", "--kl-factor", "0.1"], "--kl-factor 0.1 has no effect in this run"),
    (["--lr-min", "1e-5"], "--lr-min 1e-05 has no effect in this run; add --lr-schedule "
                           "cosine, or leave --lr-min out"),
])
def test_a_setting_without_effect_is_refused_in_one_line(argv, message, capsys):
    assert mnist.main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    # at its default, or where it acts, it is accepted
    assert cli.parse_config(["--model", "sgd", "--prior", "mixture", "--kl-factor", "1"])
    assert cli.parse_config(["--lr-schedule", "cosine", "--lr-min", "1e-5"]).lr_min == 1e-5


def test_parse_error_from_the_command_line():
    p = subprocess.run([sys.executable, "-m", "bandits.mnist", "--epochs", "abc"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [
        f"{PREFIX}argument --epochs: invalid int value: 'abc' (see --help)"]
    assert "usage:" not in p.stderr and p.stdout == ""


# --------------------------------------------------------------------------- 3. help texts


def _help_of(flag: str) -> str:
    """The help text of one flag in ``--help``, joined into one line."""
    text = cli.build_parser().format_help()
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.match(rf"  {flag}\b", ln))
    body = [lines[start][len(f"  {flag}"):]]
    for ln in lines[start + 1:]:
        if re.match(r"  -", ln) or not ln.strip():
            break
        body.append(ln)
    return " ".join(" ".join(body).split())


def test_help_says_what_the_no_flags_do(capsys):
    with pytest.raises(SystemExit) as e:
        mnist.main(["train", "--help"])
    assert e.value.code == 0
    assert "--no-download" in capsys.readouterr().out
    download = _help_of("--no-download")
    assert download.startswith("never download") and "missing" in download
    assert "(default: missing files are downloaded)" in download
    progress = _help_of("--no-progress")
    assert progress.startswith("hide the progress bar") and "(default: shown)" in progress
    for flag in ("--no-download", "--no-progress"):
        assert "(default: True)" not in _help_of(flag)
    # the per-model plots are drawn only when asked for
    plots = _help_of("--plots")
    assert plots.startswith("draw each model's plots") and "(default: off)" in plots
    with pytest.raises(UsageError):
        cli.build_parser().parse_args(["--no-plots"])


def test_help_states_when_checkpoints_are_written():
    every = _help_of("--checkpoint-every")
    assert "(default: 300.0)" in every and "seconds" in every
    assert "always after the last epoch" in every
    resume = _help_of("--resume")
    assert "--checkpoint-every seconds" in resume
    assert "written after every epoch" not in resume
    assert "every epoch" not in cli.build_parser().format_help().replace(
        "(0: after every epoch)", "")


def _flags(command: str, capsys) -> set[str]:
    """The flags ``python -m bandits.mnist COMMAND --help`` lists."""
    with pytest.raises(SystemExit) as e:
        mnist.main([command, "--help"])
    assert e.value.code == 0
    return set(re.findall(r"^  (?:-h, )?(--[a-z0-9-]+)", capsys.readouterr().out, re.M))


def test_each_command_lists_only_its_own_settings(capsys):
    assert mnist.main(["--help"]) == 0
    top = capsys.readouterr().out
    for command in ("train", "report", "redraw", "bench", "adam-probe"):
        assert f"  {command} " in top
    train = _flags("train", capsys)
    bench = _flags("bench", capsys)
    probe = _flags("adam-probe", capsys)
    report = _flags("report", capsys)
    assert {"--epochs", "--seeds", "--resume", "--quick", "--workers"} <= train
    assert not {"--bench", "--bench-hidden", "--adam-probe", "--report", "--redraw"} & train
    assert {"--bench-hidden", "--bench-runs", "--bench-rounds", "--bench-batches",
            "--prior", "--lr", "--compile"} <= bench
    assert not {"--epochs", "--seeds", "--hidden", "--model", "--resume", "--prune"} & bench
    assert {"--prior", "--kl-weighting", "--kl-factor", "--epochs", "--hidden"} <= probe
    assert not {"--seeds", "--model", "--optimizer", "--estimator", "--bench-hidden",
                "--kl-factor-final", "--resume"} & probe
    assert report == {"--help"}


@pytest.mark.parametrize("argv, command, args", [
    (["--report", "DIR"], "report", ["DIR"]),
    (["--report=DIR"], "report", ["DIR"]),
    (["--redraw", "DIR"], "redraw", ["DIR"]),
    (["--bench", "--bench-hidden", "16"], "bench", ["--bench-hidden", "16"]),
    (["--prior", "gaussian", "--adam-probe", "--epochs", "2"], "adam-probe",
     ["--prior", "gaussian", "--epochs", "2"]),
])
def test_the_older_flag_forms_name_their_command(argv, command, args):
    got, rest, note = cli.split_command(argv)
    assert (got, rest) == (command, args)
    assert note.startswith("bandits.mnist: note: ") and "\n" not in note
    assert f"python -m bandits.mnist {command}" in note


def test_flags_without_a_command_train_silently():
    assert cli.split_command(["--epochs", "2"]) == ("train", ["--epochs", "2"], None)
    assert cli.split_command(["train", "--epochs", "2"]) == ("train", ["--epochs", "2"], None)
    assert cli.split_command(["--bench-hidden", "16"])[0] == "train"  # not --bench


def test_an_older_form_still_runs_with_a_one_line_note(tmp_path, capsys):
    assert mnist.main(["--report", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "python -m bandits.mnist report DIR" in err[0]
    assert err[1].startswith(PREFIX) and "no such directory" in err[1]
    assert mnist.main(["--bench", "--bench-hidden", "0,16"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "python -m bandits.mnist bench" in err[0]
    assert "--bench-hidden must be" in err[1]


# --------------------------------------------------------------------------- 4. printed lines


def test_prints_threads_and_outputs(mnist_data_dir, tmp_path, monkeypatch, capsys):
    _no_network(monkeypatch)
    out = tmp_path / "run"
    threads = torch.get_num_threads()
    try:
        code = mnist.main(["--data-dir", str(mnist_data_dir), "--train-size", "64",
                           "--test-size", "32", "--hidden", "8", "--epochs", "1",
                           "--batch-size", "32", "--eval-samples", "1", "--ood-images", "8",
                           "--prune", "0", "--threads", "1", "--no-progress",
                           "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("bandits.mnist: 1 model (1 batch of seeds: ")
    assert "1 epochs of 64 images" in lines[0] and lines[0].endswith(f"-> {out}")
    assert "device cpu, 1 torch thread (--threads)" in lines[0]
    assert lines[-1] == f"outputs in {out}"
    assert (out / "summary.json").is_file()
    # a readable closing summary, not a JSON dump
    summary = json.loads((out / "summary.json").read_text())
    table = "\n".join(lines)
    assert "{" not in table and "test error, best-validation epoch" in table
    assert f"{summary['best_validation']['test_error_mean']:.2f} %" in table


def test_a_diverged_model_stops_with_exit_3_and_writes_no_nan(mnist_data_dir, tmp_path,
                                                                capsys, monkeypatch):
    from bandits.mnist.models import classifiers

    _no_network(monkeypatch)
    original = classifiers.BatchedClassifiers.train_epoch
    epochs = []

    def train_epoch(self, *args, **kwargs):  # the second epoch's loss becomes NaN
        stats = original(self, *args, **kwargs)
        epochs.append(1)
        if len(epochs) == 2:
            stats["train_loss"][0] = float("nan")
        return stats

    monkeypatch.setattr(classifiers.BatchedClassifiers, "train_epoch", train_epoch)
    out = tmp_path / "run"
    code = mnist.main(["--data-dir", str(mnist_data_dir), "--train-size", "256",
                       "--test-size", "32", "--hidden", "8", "--epochs", "3",
                       "--batch-size", "32", "--eval-samples", "1", "--ood-images", "8",
                       "--prune", "0", "--threads", "1", "--no-progress",
                       "--model", "sgd", "--optimizer", "sgd", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 3, err
    assert "diverged in epoch 2" in err and "--lr" in err and len(err.splitlines()) == 1
    assert not (out / "summary.json").exists()


# --------------------------------------------------------------------------- 5. missing data


@pytest.mark.parametrize("command", [["train"], ["bench"]])
def test_missing_data_leaves_no_directory(tmp_path, monkeypatch, capsys, command):
    _no_network(monkeypatch)
    monkeypatch.delenv("BANDITS_DATA_DIR", raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    base = [*command, "--data-dir", str(empty), "--no-download", "--no-progress"]
    # an explicit --out
    out = tmp_path / "out" / "run"
    assert mnist.main([*base, "--out", str(out)]) == 2
    assert "not found" in _one_error_line(capsys)
    assert not out.exists() and not out.parent.exists()
    # the default directory (results/runs/... or results/mnist) under the working directory
    assert mnist.main(base) == 2
    assert "not found" in _one_error_line(capsys)
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "work"]


def test_other_errors_use_the_same_prefix(tmp_path, capsys):
    assert mnist.main(["report", str(tmp_path / "nowhere")]) == 2
    assert "report " in _one_error_line(capsys)
    if not torch.cuda.is_available():
        assert mnist.main(["--device", "cuda", "--no-progress"]) == 2
        assert "--device cuda" in _one_error_line(capsys)


def test_valid_settings_still_accepted():
    cfg = cli.parse_config(["--epochs", "1", "--seed", "0", "--hidden", "8", "--threads", "0",
                            "--checkpoint-every", "0", "--train-size", "0", "--prune", "0,50"])
    assert (cfg.epochs, cfg.hidden, cfg.seed) == (1, 8, 0)


def test_a_checkpoint_copied_from_another_run_is_refused(mnist_data_dir, tmp_path, capsys):
    import shutil

    base = ["--data-dir", str(mnist_data_dir), "--train-size", "64", "--test-size", "32",
            "--hidden", "8", "--epochs", "1", "--threads", "1", "--no-progress",
            "--checkpoint-every", "0"]
    a, b = tmp_path / "a", tmp_path / "b"
    assert mnist.main([*base, "--seed", "1", "--out", str(a)]) == 0
    assert mnist.main([*base, "--seed", "2", "--out", str(b)]) == 0
    config_b = (b / "config.json").read_bytes()
    shutil.copy(a / "checkpoint.pt", b / "checkpoint.pt")
    capsys.readouterr()
    assert mnist.main(["--resume", str(b), "--epochs", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "belongs to another run" in err and len(err.splitlines()) == 1
    assert (b / "config.json").read_bytes() == config_b
    assert mnist.main(["--resume", str(a), "--epochs", "2"]) == 0  # its own is accepted


@pytest.mark.parametrize("grid", [False, True])
def test_a_checkpoint_of_another_run_with_the_same_settings_is_refused(
        mnist_data_dir, tmp_path, capsys, grid):
    import shutil

    base = ["--data-dir", str(mnist_data_dir), "--train-size", "64", "--test-size", "32",
            "--hidden", "8", "--epochs", "1", "--threads", "1", "--no-progress",
            "--checkpoint-every", "0", "--workers", "1"]
    if grid:  # two batches, each with its own checkpoint under checkpoints/
        base += ["--pi", "0.25", "0.5"]
    a, b = tmp_path / "a", tmp_path / "b"
    assert mnist.main([*base, "--out", str(a)]) == 0
    assert mnist.main([*base, "--out", str(b)]) == 0
    name = "checkpoints/batch-0.pt" if grid else "checkpoint.pt"
    shutil.copy(a / name, b / name)
    kept = {p: p.read_bytes() for p in b.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert mnist.main(["--resume", str(b), "--epochs", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "belongs to another run with the same settings" in err
    assert len(err.splitlines()) == 1
    assert {p: p.read_bytes() for p in kept} == kept
    assert mnist.main(["--resume", str(a), "--epochs", "2"]) == 0  # its own is accepted
    assert json.loads((a / "config.json").read_text())["run_id"] != json.loads(
        (b / "config.json").read_text())["run_id"]


@pytest.mark.parametrize("estimator", ["reparam", "lrt", "flipout"])
@pytest.mark.slow
def test_lenet5_trains_resumes_and_reports(tmp_path, mnist_data_dir, estimator):
    out = tmp_path / "lenet"
    base = ["--arch", "lenet5", "--estimator", estimator, "--prior", "gaussian",
            "--seeds", "2", "--train-size", "512", "--test-size", "256", "--threads", "1",
            "--no-progress", "--data-dir", str(mnist_data_dir)]
    assert mnist.main([*base, "--epochs", "1", "--out", str(out)]) == 0
    assert mnist.main(["--resume", str(out), "--epochs", "2", "--no-progress",
                 "--data-dir", str(mnist_data_dir)]) == 0
    models = pd.read_csv(out / "models.csv")
    assert len(models) == 2 and (models["test_error"] < 90).all()
    summary = json.loads((out / "seed=0" / "summary.json").read_text())
    assert summary["settings"]["arch"] == "lenet5" and summary["epochs"] == 2
    again = tmp_path / "again"
    assert mnist.main([*base, "--epochs", "2", "--out", str(again)]) == 0
    assert (again / "models.csv").read_text() == (out / "models.csv").read_text()


@pytest.mark.parametrize("estimator", ["lrt", "flipout"])
def test_mlp_with_noise_per_image_trains_resumes_prunes_and_reports(tmp_path, mnist_data_dir,
                                                                    estimator):
    out = tmp_path / "mlp"
    base = ["--estimator", estimator, "--prior", "mixture", "--complexity", "kl",
            "--kl-weighting", "uniform", "--kl-factor", "0.001", "--lr", "3e-3",
            "--hidden", "16", "--seeds", "2", "--train-size", "512", "--test-size", "256",
            "--threads", "1", "--no-progress", "--data-dir", str(mnist_data_dir)]
    assert mnist.main([*base, "--epochs", "1", "--out", str(out)]) == 0
    assert mnist.main(["--resume", str(out), "--epochs", "2", "--no-progress",
                       "--data-dir", str(mnist_data_dir)]) == 0
    models = pd.read_csv(out / "models.csv")
    assert len(models) == 2 and (models["test_error"] < 80).all()
    summary = json.loads((out / "seed=0" / "summary.json").read_text())
    assert summary["settings"]["estimator"] == estimator and summary["epochs"] == 2
    pruning = pd.read_csv(out / "seed=0" / "pruning.csv")
    assert list(pruning["removed_pct"][:2]) == [0.0, 50.0]
    assert pruning["test_error_mean"].iloc[0] == pytest.approx(
        summary["best_validation"]["test_error_mean"])
    assert summary["label"] == f"bbb-mixture-2x16-{estimator}"
    again = tmp_path / "again"
    assert mnist.main([*base, "--epochs", "2", "--out", str(again)]) == 0
    assert (again / "models.csv").read_text() == (out / "models.csv").read_text()


def test_the_autograd_mlp_starts_from_the_fused_trainers_weights():
    """``--estimator lrt`` trains the MLP by autograd; each seed starts where the
    hand-written ('reparam') trainer's would, so only the noise differs."""
    specs = [RunSpec(s, ScaleMixturePrior(), "uniform") for s in (3, 4)]
    fused = BatchedClassifiers("bbb", [16, 16], specs, init_sigma=0.01)
    auto = AutogradNets("bbb", specs, hidden=[16, 16], init_sigma=0.01, estimator="lrt")
    for r in range(2):
        a, b = fused.to_mlp(r), auto.to_mlp(r)
        for (name, x), (_, y) in zip(a.named_parameters(), b.named_parameters(), strict=True):
            assert torch.equal(x, y), name
        assert b.layers[0].estimator == "lrt"


@pytest.mark.parametrize("args, message", [
    (["--arch", "lenet5", "--model", "dropout"], "--arch lenet5 trains --model bbb or sgd"),
    (["--estimator", "flipout", "--model", "sgd"], "use it with --model bbb"),
    (["--estimator", "lrt", "--compile"], "--compile fuses the MLP's 'reparam' step"),
    (["adam-probe", "--estimator", "lrt"], "unrecognized arguments: --estimator"),
    (["--arch", "resnet"], "--arch must be one of"),
])
def test_lenet5_bad_settings_are_one_line(args, message, capsys):
    assert mnist.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_ood_report_has_shifted_inputs_and_histograms(tmp_path, mnist_data_dir):
    out = tmp_path / "o"
    assert mnist.main(["--model", "sgd", "--hidden", "16", "--epochs", "1", "--train-size",
                       "512", "--test-size", "256", "--ood-images", "64", "--threads", "1",
                       "--no-progress", "--data-dir", str(mnist_data_dir),
                       "--out", str(out)]) == 0
    ood = json.loads((out / "summary.json").read_text())["ood"]
    for kind in ("test", "noise", "inverted", "rotated_30", "rotated_60", "rotated_90"):
        assert 0 <= ood[f"entropy_{kind}"] <= ood["max_entropy"] + 1e-6
    hist = pd.read_csv(out / "ood_entropy.csv")
    assert set(hist["input"]) >= {"test", "noise", "inverted", "rotated_90"}
    assert (hist.groupby("input")["count"].sum() == 64).all()


def test_too_many_ood_images_are_named_as_the_cause(capsys):
    assert mnist.main(["--ood-images", "10000000", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bandits.mnist: error: --ood-images 10000000") and "--hidden" not in err


def test_overwrite_removes_an_earlier_runs_model_files_so_report_counts_only_the_new(
        mnist_data_dir, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    base = ["--data-dir", str(mnist_data_dir), "--train-size", "64", "--test-size", "32",
            "--hidden", "8", "--epochs", "1", "--threads", "1", "--no-progress",
            "--ood-images", "8", "--prune", "0"]
    out = tmp_path / "exp" / "run"
    assert mnist.main([*base, "--out", str(out)]) == 0  # one model: files at the top level
    (out / "notes.txt").write_text("a user's notes")
    assert mnist.main([*base, "--seeds", "2", "--out", str(out), "--overwrite"]) == 0
    for stale in ("summary.json", "epochs.csv", "ood_entropy.csv"):  # the one model's
        assert not (out / stale).exists(), stale
    assert (out / "notes.txt").read_text() == "a user's notes"
    assert sorted(p.parent.name for p in out.rglob("summary.json")) == ["seed=0", "seed=1"]
    report(tmp_path / "exp")
    rows = read_csv_rows(tmp_path / "exp" / "table1.csv")
    assert [int(r["seeds"]) for r in rows] == [2]


def test_a_refused_training_prints_only_its_error(tmp_path, capsys, mnist_data_dir):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    threads = torch.get_num_threads()
    try:
        code = mnist.main(["--data-dir", str(mnist_data_dir), "--train-size", "64",
                           "--test-size", "32", "--hidden", "8", "--epochs", "1",
                           "--threads", "1", "--no-progress", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""  # no threads line before the error
    assert len(captured.err.strip().splitlines()) == 1 and (out / "notes.txt").exists()
