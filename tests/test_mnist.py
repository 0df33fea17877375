"""The MNIST benchmark: CLI, training step, evaluation, pruning, outputs, and the fast cost path."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
import urllib.request
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch.distributions import Normal

from bandits import mnist
from bandits.bayes import (
    BayesLinear,
    GaussianPrior,
    ScaleMixturePrior,
    closed_form_cost,
    fused_prior_consts,
    mc_cost_terms,
    prune_by_snr,
    snr,
)
from bandits.mnist import cli
from bandits.mnist.cli import parse_config
from bandits.mnist.data.splits import Split
from bandits.mnist.evaluation import evaluate
from bandits.mnist.evaluation.evaluate import build_model, predict
from bandits.mnist.evaluation.model_files import command_line, read_csv, read_csv_rows, saved_config
from bandits.mnist.models import config, priors
from bandits.mnist.models.classifiers import BatchedClassifiers as Classifiers
from bandits.mnist.models.config import Config
from bandits.mnist.models.priors import kl_factor_at
from bandits.mnist.reports import report as reporting
from bandits.mnist.reports import tables
from bandits.mnist.reports.gather import read_models
from bandits.mnist.reports.report import report
from bandits.mnist.reports.rows import chosen, mean_val_error, models_table, rows_table, t975
from bandits.mnist.training import train
from bandits.mnist.training.adam_probe import data_gradient_scale
from bandits.mnist.training.autograd_baseline import train_epoch


def _no_network(monkeypatch):
    def fail(*a, **k):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", fail)


# --------------------------------------------------------------------------- CLI


def test_help_states_defaults(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    for flag in ("--model", "--prior", "--hidden", "--epochs", "--samples", "--lr",
                 "--batch-size", "--seed", "--device", "--out", "--data-dir", "--quick",
                 "--eval-samples", "--kl-weighting", "--plots"):
        assert flag in text
    assert "(default: 0.001)" in text and "(default: 128)" in text
    assert "--bench" not in text and "--report" not in text  # other commands' settings


def test_quick_preset_and_overrides():
    cfg = parse_config(["--quick"])
    assert (cfg.model, cfg.prior, cfg.hidden, cfg.epochs) == ("bbb", "mixture", 400,
                                                              config.QUICK["epochs"])
    cfg = parse_config(["--quick", "--epochs", "2", "--hidden", "50"])
    assert (cfg.epochs, cfg.hidden, cfg.model) == (2, 50, "bbb")
    assert parse_config([]).epochs == Config().epochs


@pytest.mark.parametrize("argv", [["--model", "mlp"], ["--complexity", "exact"],
                                  ["--kl-weighting", "x"], ["--device", "tpu"]])
def test_bad_settings_rejected(argv):
    with pytest.raises(ValueError):
        parse_config(argv)


def test_command_line_hides_data_dir():
    cmd = command_line(["--data-dir", "/some/where", "--epochs", "3", "--data-dir=/x"])
    assert "/some/where" not in cmd and "/x" not in cmd
    assert cmd == "python -m bandits.mnist --data-dir DIR --epochs 3 --data-dir=DIR"


# --------------------------------------------------------------------------- training


def _toy_split(n: int, seed: int = 0) -> Split:
    """Ten well-separated classes in 784 dimensions, pixel-like values."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.rand(10, 784, generator=g) * 2
    y = torch.randint(0, 10, (n,), generator=g)
    x = (centres[y] + 0.3 * torch.randn(n, 784, generator=g)).clamp(0, 255 / 126)
    return Split(x, y)


@pytest.mark.parametrize("model", ["bbb", "sgd", "dropout"])
def test_tiny_training_lowers_loss(model):
    cfg = Config(model=model, hidden=64, batch_size=50, progress=False, lr=3e-3)
    torch.manual_seed(0)
    m = build_model(cfg, torch.Generator().manual_seed(1))
    opt = torch.optim.Adam(m.parameters(), lr=cfg.lr)
    data, g = _toy_split(400), torch.Generator().manual_seed(2)
    stats = [train_epoch(m, opt, data, cfg, g) for _ in range(5)]
    assert stats[-1]["nll"] < 0.5 * stats[0]["nll"]
    assert stats[-1]["train_loss"] < stats[0]["train_loss"]
    if model == "bbb":
        assert stats[0]["kl"] > 0 and stats[-1]["train_loss"] > stats[-1]["nll"]
    err = evaluate.error_pct(predict(m, data.x, "mean"), data.y)
    assert err < 20


def test_loss_scaling_matches_eq8():
    """The optimised loss is (KL / M + summed NLL) / B: its gradient equals that of the parts."""
    cfg = Config(hidden=8, batch_size=20, progress=False)
    torch.manual_seed(0)
    m = build_model(cfg, torch.Generator().manual_seed(3))
    data = _toy_split(40)
    grads = {}
    for name in ("epoch", "manual"):
        m.zero_grad()
        gen = torch.Generator().manual_seed(5)
        for layer in m.bayes_layers():
            layer.generator = gen
        if name == "epoch":
            opt = torch.optim.SGD(m.parameters(), lr=0.0)  # no step, just the gradients
            g_shuffle = torch.Generator().manual_seed(9)  # the same order as below
            train_epoch(m, opt, Split(data.x[:20], data.y[:20]), cfg, g_shuffle)
            grads[name] = [p.grad.clone() for p in m.parameters()]
        else:
            perm = torch.randperm(20, generator=torch.Generator().manual_seed(9))
            x, y = data.x[:20][perm], data.y[:20][perm]
            nll = F.cross_entropy(m(x), y, reduction="sum")
            loss = (m.complexity_cost("mc") / 1 + nll) / 20  # M = 1 minibatch
            loss.backward()
            grads[name] = [p.grad.clone() for p in m.parameters()]
    for a, b in zip(grads["epoch"], grads["manual"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_predict_modes():
    cfg = Config(hidden=16, progress=False)
    torch.manual_seed(0)
    m = build_model(cfg, torch.Generator().manual_seed(1))
    x = _toy_split(30).x
    p_mean = predict(m, x, "mean")
    torch.testing.assert_close(p_mean, predict(m, x, "mean"))  # deterministic
    p_s = predict(m, x, "sample", samples=3, chunk=7)
    assert p_s.shape == (30, 10)
    torch.testing.assert_close(p_s.sum(-1), torch.ones(30))
    assert m.mode == "sample"  # restored after evaluation


# --------------------------------------------------------------------------- pruning


def test_pruning_zeroes_exactly_lowest_snr():
    cfg = Config(hidden=20, progress=False)
    torch.manual_seed(0)
    m = build_model(cfg, torch.Generator().manual_seed(1))
    with torch.no_grad():
        for layer in m.bayes_layers():
            layer.weight_rho.uniform_(-6, 0)
    s = snr(m)
    n = s.numel()
    for frac in (0.0, 0.5, 0.75, 0.95, 0.98):
        removed = prune_by_snr(m, frac)
        assert removed == round(frac * n)
        with m.sampling("mean"):
            w = torch.cat([ly.sample_weights()[0].reshape(-1) for ly in m.bayes_layers()])
        zero = w == 0
        assert int(zero.sum()) == removed
        if 0 < removed < n:
            assert s[zero].max() <= s[~zero].min()  # exactly the lowest-SNR ones
    prune_by_snr(m, 0.0)
    assert all(bool(ly.weight_mask.all()) for ly in m.bayes_layers())


def test_prune_table_restores_model():
    cfg = Config(hidden=16, progress=False, eval_samples=2)
    torch.manual_seed(0)
    m = build_model(cfg, torch.Generator().manual_seed(1))
    data = _toy_split(50)
    rows = evaluate.prune_table(m, data, cfg)
    assert [r["removed_pct"] for r in rows] == [0, 50, 75, 95, 98]
    n = sum(ly.weight_mu.numel() for ly in m.bayes_layers())
    assert rows[2]["weights_left"] == n - round(0.75 * n)
    assert all(bool(ly.weight_mask.all()) for ly in m.bayes_layers())


# --------------------------------------------------------------------------- fast cost path


@pytest.mark.parametrize("prior", [ScaleMixturePrior(0.25, math.exp(-1), math.exp(-8)),
                                   ScaleMixturePrior(0.5, 1.0, math.exp(-6)),
                                   ScaleMixturePrior(0.7, math.exp(-6), 1.0),  # narrow first
                                   GaussianPrior(0.3)])
@pytest.mark.parametrize("runs", [None, 3])
def test_fused_cost_matches_reference(prior, runs):
    """Value and gradients of the fast Monte Carlo cost against float64 torch.distributions."""
    torch.manual_seed(0)
    layer = BayesLinear(30, 9, runs=runs, prior=prior, init_sigma=0.05)
    with torch.no_grad():
        layer.weight_mask.bernoulli_(0.7)
        layer.weight_mu.mul_(3)
    layer(torch.randn(4, 30))
    cost = layer.complexity_cost("mc")
    (cost * torch.linspace(0.5, 1.5, cost.numel()).reshape(cost.shape)).sum().backward()
    ref_total = 0.0
    params = []
    for mu, rho, eps, mask in ((layer.weight_mu, layer.weight_rho, layer._last[0],
                                layer.weight_mask), (layer.bias_mu, layer.bias_rho,
                                                     layer._last[1], None)):
        mu64 = mu.detach().double().requires_grad_()
        rho64 = rho.detach().double().requires_grad_()
        params += [(mu, mu64), (rho, rho64)]
        sigma = F.softplus(rho64)
        w = mu64 + sigma * eps.double()
        if isinstance(prior, GaussianPrior):
            log_p = Normal(0.0, prior.sigma).log_prob(w)
        else:
            log_p = torch.logsumexp(torch.stack([
                math.log(prior.pi) + Normal(0.0, prior.sigma1).log_prob(w),
                math.log1p(-prior.pi) + Normal(0.0, prior.sigma2).log_prob(w)]), 0)
        c = Normal(mu64, sigma).log_prob(w) - log_p
        if mask is not None:
            c = c * mask.double()
        ref_total = ref_total + (c.sum() if runs is None else c.reshape(runs, -1).sum(1))
    torch.testing.assert_close(cost.double(), ref_total.detach(), rtol=1e-5, atol=1e-2)
    (ref_total * torch.linspace(0.5, 1.5, cost.numel(), dtype=torch.float64)
     .reshape(cost.shape)).sum().backward()
    for p32, p64 in params:
        scale = p64.grad.abs().max()
        torch.testing.assert_close(p32.grad.double() / scale, p64.grad / scale,
                                   rtol=0, atol=1e-5)
    # and the plain-autograd reference path of the library agrees too
    eps = layer._last[0]
    ref32 = mc_cost_terms(layer.weight_mu, layer.weight_sigma, eps, prior)
    assert torch.isfinite(ref32).all()


# --------------------------------------------------------------------------- whole runs


def test_cli_smoke_run(mnist_data_dir, tmp_path, monkeypatch):
    """A tiny real run: every output file, sane numbers, the loss goes down."""
    _no_network(monkeypatch)
    out = tmp_path / "run"
    argv = ["--data-dir", str(mnist_data_dir), "--train-size", "600", "--test-size", "300",
            "--epochs", "3", "--hidden", "64", "--batch-size", "32", "--lr", "3e-3",
            "--eval-samples", "3", "--ood-images", "100", "--out", str(out), "--no-progress"]
    assert mnist.main(argv) == 0
    for name in ("config.json", "epochs.csv", "summary.json", "pruning.csv", "pruning.md",
                 "weights_hist.csv", "snr_hist.csv"):
        assert (out / name).is_file(), name
    plots = ("test_error.png", "weights.png", "snr.png")
    assert not any((out / name).exists() for name in plots)  # drawn only with --plots
    rows = read_csv(out / "epochs.csv")
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert rows[-1]["nll"] < rows[0]["nll"] and rows[-1]["train_loss"] < rows[0]["train_loss"]
    assert rows[-1]["test_error"] < 40
    s = json.loads((out / "summary.json").read_text())
    assert {"test_error_mean", "test_error_sampled"} <= set(s["final"])
    assert s["best_validation"]["epoch"] in (1, 2, 3)
    assert len(s["pruning"]) == 5 and s["device"] == "cpu"
    assert s["settings"]["data_dir"] == str(mnist_data_dir)  # as given, as bandits.run's
    assert 0 < s["ood"]["entropy_noise"] <= math.log(10) + 1e-6
    before = (out / "snr_hist.csv").read_text()
    assert mnist.main(["redraw", str(out)]) == 0  # from the saved model, no data needed
    assert all((out / name).is_file() for name in plots)
    assert (out / "snr_hist.csv").read_text() == before
    text = report(tmp_path)
    assert "Table 1" in text and "Table 2" in text and "| 1.29% |" in text
    assert (tmp_path / "tables.md").is_file() and (tmp_path / "fig2_test_error.png").is_file()
    # the model gathered into the report's tidy file
    [record] = read_models(tmp_path)
    saved = json.loads((out / "config.json").read_text())
    assert len(saved.pop("run_id")) == 32  # the run's own id, not a setting
    assert saved.pop("versions").keys() == s["versions"].keys()  # and the git commit
    assert record["model"] == "run" and record["settings"] == saved
    assert record["best_validation"] == s["best_validation"]
    assert record["last_epoch"] == rows[-1] and record["first_epoch"] == rows[0]
    table1 = read_csv_rows(tmp_path / "table1.csv")
    assert list(table1[0])[:2] == ["method", "run"] and {
        "prior", "kl_weighting", "hidden", "seeds", "test_error_mean", "test_error_std"
    } <= set(table1[0])
    assert len(table1) == 1 and table1[0]["method"] == "bbb-mixture"
    assert table1[0]["samples"] == "1" and float(table1[0]["init_rho"]) == -5.0
    assert float(table1[0]["test_error_mean"]) == pytest.approx(
        s["best_validation"]["test_error_mean"], abs=1e-4)


def test_sgd_run_and_bench(mnist_data_dir, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    base = ["--data-dir", str(mnist_data_dir), "--train-size", "300", "--test-size", "200",
            "--hidden", "32", "--ood-images", "50", "--no-progress", "--plots"]
    assert mnist.main([*base, "--model", "sgd", "--epochs", "1",
                       "--out", str(tmp_path / "sgd")]) == 0
    s = json.loads((tmp_path / "sgd" / "summary.json").read_text())
    assert "pruning" not in s and "test_error_sampled" not in s["final"]
    # --plots: the model's plots (no SNR for a network without weight noise)
    assert (tmp_path / "sgd" / "test_error.png").is_file()
    assert (tmp_path / "sgd" / "weights.png").is_file()
    assert not (tmp_path / "sgd" / "snr.png").exists()
    bench = ["--data-dir", str(mnist_data_dir), "--train-size", "300", "--test-size", "200",
             "--no-progress"]
    assert mnist.main(["bench", *bench, "--bench-rounds", "1", "--bench-hidden", "16,24",
                       "--bench-runs", "3", "--bench-batches", "2",
                       "--out", str(tmp_path / "b")]) == 0
    sp = json.loads((tmp_path / "b" / "speed.json").read_text())
    assert sp["train_images"] == 300 and sp["batches_timed"] == 2
    assert set(sp["sizes"]) == {"16", "24"}
    for v in sp["sizes"].values():
        assert v["ratio_bbb_over_mlp"] > 0 and v["batched_speedup"] > 0
        assert set(v["seconds_per_epoch"]) == {"mlp", "bbb", "autograd-mlp", "autograd-bbb",
                                               "bbb-batched"}
    rows = read_csv_rows(tmp_path / "b" / "speed.csv")
    assert len(rows) == 2 * 5 and {r["models"] for r in rows} == {"1", "3"}


def test_cosine_schedule_recorded(mnist_data_dir, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    out = tmp_path / "cos"
    argv = ["--data-dir", str(mnist_data_dir), "--train-size", "200", "--test-size", "100",
            "--hidden", "16", "--epochs", "3", "--lr", "1e-3", "--lr-schedule", "cosine",
            "--lr-min", "1e-5", "--ood-images", "20", "--eval-samples", "2", "--prune", "0,50",
            "--no-progress", "--out", str(out)]
    assert mnist.main(argv) == 0
    lrs = [r["lr"] for r in read_csv(out / "epochs.csv")]
    assert lrs[0] == pytest.approx(1e-3) and lrs[0] > lrs[1] > lrs[2] > 1e-5


def test_bad_settings_are_one_line_with_status_2(capsys):
    assert mnist.main(["--model", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--model must be one of" in err and len(err.splitlines()) == 1


def test_existing_output_is_not_trained_into_without_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "epochs.csv").write_text("an earlier run's results")
    assert mnist.main(["--out", str(out), "--epochs", "1", "--no-progress"]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (out / "epochs.csv").read_text() == "an earlier run's results"


def test_missing_data_is_one_clear_line(tmp_path, capsys, monkeypatch):
    _no_network(monkeypatch)
    monkeypatch.delenv("BANDITS_DATA_DIR", raising=False)
    code = mnist.main(["--data-dir", str(tmp_path / "empty"), "--epochs", "1",
                       "--no-progress", "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "ubyte" in err and len(err.splitlines()) == 1


# ------------------------------------------------------------------ checkpoints and resume

TINY_MNIST = ["--train-size", "400", "--test-size", "200", "--hidden", "32", "--batch-size", "50",
              "--eval-samples", "2", "--ood-images", "50", "--no-progress",
              "--prune", "0,50"]


@contextlib.contextmanager
def _ctrl_c_in_epoch(monkeypatch, epoch: int):
    """Within the block, training raises KeyboardInterrupt at the start of ``epoch``."""
    original, calls = Classifiers.train_epoch, {"n": 0}

    def train_epoch(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == epoch:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(Classifiers, "train_epoch", train_epoch)
    try:
        yield
    finally:
        monkeypatch.setattr(Classifiers, "train_epoch", original)


def _results(out: Path) -> tuple[list, dict]:
    rows = [{k: v for k, v in r.items() if k not in ("seconds", "eval_seconds")}
            for r in read_csv(out / "epochs.csv")]
    s = json.loads((out / "summary.json").read_text())
    return rows, {k: s.get(k) for k in ("final", "best_validation", "ood", "pruning")}


@pytest.mark.parametrize("model", ["bbb", "dropout"])
def test_resume_continues_to_the_same_result(mnist_data_dir, tmp_path, monkeypatch, capsys,
                                             model):
    _no_network(monkeypatch)
    base = [*TINY_MNIST, "--model", model, "--data-dir", str(mnist_data_dir)]
    ref = tmp_path / "ref"
    assert mnist.main([*base, "--epochs", "3", "--out", str(ref)]) == 0
    # Ctrl-C in the second epoch: the checkpoint of epoch 1 is kept
    out = tmp_path / "run"
    with _ctrl_c_in_epoch(monkeypatch, 2):
        assert mnist.main([*base, "--epochs", "3", "--checkpoint-every", "0",
                           "--out", str(out)]) == 130
    moved = tmp_path / "moved"  # a run's folder resumes wherever it was moved
    out.rename(moved)
    assert mnist.main(["--resume", str(moved), "--data-dir", str(mnist_data_dir)]) == 0
    assert _results(moved) == _results(ref)
    # and a finished run extended by --epochs equals the longer run
    short = tmp_path / "short"
    assert mnist.main([*base, "--epochs", "2", "--out", str(short)]) == 0
    assert mnist.main(["--resume", str(short), "--epochs", "3",
                       "--data-dir", str(mnist_data_dir)]) == 0
    assert _results(short) == _results(ref)
    # a resume goes on, never back: the same check and line as bandits.run's --steps
    capsys.readouterr()
    assert mnist.main(["--resume", str(short), "--epochs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert (f"--epochs 1 is fewer than the 3 epochs the checkpoint in {short} has trained; "
            "give --epochs 3 or more") in err and len(err.splitlines()) == 1
    assert _results(short) == _results(ref)


def _raise_on_call(monkeypatch, owner, name: str, call: int) -> None:
    """``owner.name`` raises KeyboardInterrupt on its ``call``-th call."""
    original, calls = getattr(owner, name), {"n": 0}

    def patched(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == call:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, patched)


@pytest.mark.parametrize("where, owner, name, call, line", [
    # epoch 2's validation error (calls 1-2 are epoch 1's validation and test errors)
    ("evaluation", Classifiers, "errors", 3, "interrupted in epoch 2; resume after epoch 1"),
    ("checkpoint write", train, "save_checkpoint", 2,
     "interrupted in epoch 2; resume after epoch 1"),
    ("final evaluation", train, "summarise", 1, "interrupted after the last epoch; resume with"),
])
def test_ctrl_c_outside_the_training_step_is_one_line_and_resumes(
        mnist_data_dir, tmp_path, monkeypatch, capsys, where, owner, name, call, line):
    _no_network(monkeypatch)
    base = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "2"]
    ref = tmp_path / "ref"
    assert mnist.main([*base, "--out", str(ref)]) == 0
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _raise_on_call(m, owner, name, call)
        capsys.readouterr()
        assert mnist.main([*base, "--checkpoint-every", "0", "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and line in err[0], (where, err)
    assert mnist.main(["--resume", str(out), "--data-dir", str(mnist_data_dir)]) == 0
    assert _results(out) == _results(ref)


def test_resume_bad_input(tmp_path, capsys):
    (tmp_path / "checkpoint.pt").write_bytes(b"garbage")
    assert mnist.main(["--resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "checkpoint.pt" in err and "damaged" in err and len(err.splitlines()) == 1
    assert mnist.main(["--resume", str(tmp_path), "--lr", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--lr cannot be given with --resume" in err and len(err.splitlines()) == 1


# ------------------------------------------------------------------ seeds and grids


def test_grid_flags_expand_to_every_setting_and_seed():
    cfg = parse_config(["--pi", "0.25", "0.5", "0.75", "--neg-log-sigma1", "0", "1", "2",
                        "--neg-log-sigma2", "6", "7", "8", "--seeds", "2", "--seed", "10"])
    models = config.expand(cfg)
    assert len(models) == 27 * 2
    assert {(m.pi, m.neg_log_sigma1, m.neg_log_sigma2) for m in models} == {
        (p, a, b) for p in (0.25, 0.5, 0.75) for a in (0.0, 1.0, 2.0) for b in (6.0, 7.0, 8.0)}
    assert sorted({m.seed for m in models}) == [10, 11] and all(m.seeds == 1 for m in models)
    assert config.varying(models) == ["pi", "neg_log_sigma1", "neg_log_sigma2"]
    # a Gaussian prior does not multiply over the mixture's settings
    cfg = parse_config(["--prior", "mixture", "gaussian", "--neg-log-sigma2", "6", "7",
                        "--kl-weighting", "uniform", "blundell"])
    names = [config.setting_name(m, config.varying(config.expand(cfg))) for m in config.expand(cfg)]
    assert len(names) == (2 + 1) * 2 == len(set(names))
    assert "prior=gaussian__kl_weighting=blundell" in names
    assert "prior=mixture__neg_log_sigma2=7__kl_weighting=uniform" in names
    # so does a tempered ELBO: each --kl-factor value is a setting of every prior
    cfg = parse_config(["--prior", "mixture", "gaussian", "--kl-factor", "1", "0.1"])
    models = config.expand(cfg)
    names = [config.setting_name(m, config.varying(models)) for m in models]
    assert names == ["prior=mixture__kl_factor=1", "prior=mixture__kl_factor=0.1",
                     "prior=gaussian__kl_factor=1", "prior=gaussian__kl_factor=0.1"]
    assert len(config.batches(models)) == 4
    # one value is a plain setting, as before
    assert parse_config(["--pi", "0.25"]).pi == 0.25 and len(config.expand(Config())) == 1


@pytest.mark.parametrize("argv, message", [
    (["--pi", "0.25", "1.5"], "--pi must be strictly between 0 and 1"),
    (["--pi", "0"], "--pi must be strictly between 0 and 1"),
    (["--neg-log-sigma2", "6", "6"], "--neg-log-sigma2 lists a value twice"),
    (["--neg-log-sigma1", "nan"], "--neg-log-sigma1 must be a finite number"),
    (["--model", "sgd", "--pi", "0.25", "0.5"], "--pi takes several values only with --model bbb"),
    (["--seeds", "0"], "--seeds must be in [1, 100,000]"),
    (["--prior", "mixture", "cauchy"], "--prior must be one of"),
    (["--kl-weighting", "uniform", "later"], "--kl-weighting must be"),
    (["--complexity", "exact"], "--complexity must be one of 'mc' or 'kl'"),
    (["--kl-factor", "-1"], "--kl-factor must be in [0, 1e+06]"),
    (["--kl-factor", "1", "0.1", "1"], "--kl-factor lists a value twice"),
    (["--model", "dropout", "--kl-factor", "1", "0.1"],
     "--kl-factor takes several values only with --model bbb"),
])
def test_bad_grid_values_are_one_line_with_status_2(argv, message, capsys):
    assert mnist.main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_multi_seed_grid_run_writes_the_aggregated_table(mnist_data_dir, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    out = tmp_path / "grid"
    argv = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "2", "--seeds", "2",
            "--prior", "mixture", "gaussian", "--neg-log-sigma2", "6", "7", "--out", str(out)]
    assert mnist.main(argv) == 0
    models = read_csv_rows(out / "models.csv")
    assert len(models) == (2 + 1) * 2
    dirs = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name != "checkpoints")
    assert dirs == sorted(r["model"] for r in models)
    assert "prior=mixture__neg_log_sigma2=7__seed=1" in dirs
    # one checkpoint per batch (a setting's seeds)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "batch-0.pt", "batch-1.pt", "batch-2.pt"]
    for d in dirs:  # every model has the outputs of a single run
        s = json.loads((out / d / "summary.json").read_text())
        # a setting's seeds train as one batched model
        assert s["batched_models"] == 2 and len(s["pruning"]) == 2
        assert s["command_models"] == 6
        cfg = json.loads((out / d / "config.json").read_text())
        assert cfg["seeds"] == 1 and not isinstance(cfg["prior"], list)
    settings = read_csv_rows(out / "settings.csv")
    assert [r["setting"] for r in settings] == [
        "prior=mixture__neg_log_sigma2=6", "prior=mixture__neg_log_sigma2=7", "prior=gaussian"]
    for r in settings:
        group = [float(m["test_error"]) for m in models if m["setting"] == r["setting"]]
        assert int(r["seeds"]) == 2
        assert float(r["test_error_mean"]) == pytest.approx(sum(group) / 2)
        assert float(r["test_error_std"]) == pytest.approx(abs(group[0] - group[1]) / 2 ** 0.5)
    chosen = [r for r in settings if r["selected"] == "True"]
    assert len(chosen) == 1
    assert float(chosen[0]["val_error_mean"]) == min(float(r["val_error_mean"]) for r in settings)
    table = (out / "table.md").read_text()
    assert "| prior=gaussian | 2 |" in table and "yes" in table
    # the report builds Table 1 with mean +- std over the seeds
    drawn = []
    colors = []
    monkeypatch.setattr(reporting, "plot_snr", lambda curves, path, title, c: (
        drawn.append((dict(curves), path)), colors.append(c)))
    text = report(tmp_path)
    assert "bbb-gaussian" in text and "+-" in text
    # table1.csv marks, per method, the row chosen on the validation set
    table1 = read_csv_rows(tmp_path / "table1.csv")
    for method in ("bbb-mixture", "bbb-gaussian"):
        mine = [r for r in table1 if r["method"] == method]
        chosen = [r for r in mine if r["chosen"] == "True"]
        assert len(chosen) == 1
        assert float(chosen[0]["val_error_mean"]) == min(float(r["val_error_mean"]) for r in mine)
    assert {r["optimizer"] for r in table1} == {"adam"}
    assert "(chosen)" in text
    # the two priors' chosen rows, seed by seed
    picked = {r["method"]: r["run"].rsplit("/", 1)[1] for r in table1 if r["chosen"] == "True"}
    err = {(m["setting"], int(m["seed"])): float(m["test_error"]) for m in models}
    diffs = [err[(picked["bbb-mixture"], k)] - err[(picked["bbb-gaussian"], k)] for k in (0, 1)]
    pair = [ln for ln in text.split("seed by seed")[1].splitlines() if ln.startswith("| 32 |")]
    assert len(pair) == 1 and f"| 2 | {sum(d < 0 for d in diffs)} | {sum(diffs) / 2:+.3f} |" \
        in pair[0]
    # Figure 4: seed 0 of the chosen scale-mixture row (the paper's Table 2 network),
    # beside seed 0 of the chosen Gaussian
    assert drawn == [({"scale mixture, seed 0": out / f"{picked['bbb-mixture']}__seed=0"
                       / "snr_hist.csv",
                       "Gaussian, seed 0": out / "prior=gaussian__seed=0" / "snr_hist.csv"},
                      tmp_path / "fig4_snr.png")]
    # ... each in its kind's colour, the colour Figures 2 and 3 give that kind
    assert colors == [{"scale mixture, seed 0": reporting.KIND_COLORS["bbb-mixture"],
                       "Gaussian, seed 0": reporting.KIND_COLORS["bbb-gaussian"]}]
    # every mixture row against the Gaussian trained the same way: both sigma2 settings
    same = [ln for ln in text.split("under the same training")[1].splitlines()
            if ln.startswith("| 32 |")]
    assert len(same) == 2
    for setting, line in zip(("prior=mixture__neg_log_sigma2=6",
                              "prior=mixture__neg_log_sigma2=7"), same):
        d = [err[(setting, k)] - err[("prior=gaussian", k)] for k in (0, 1)]
        se = abs(d[0] - d[1]) / 2  # the standard error of the mean of two
        mean = sum(d) / 2
        assert f"/{setting} |" in line and "/prior=gaussian |" in line
        assert (f"| 2 | {sum(x < 0 for x in d)} | {mean:+.3f} | {se:.3f} | "
                f"{mean - 12.706 * se:+.2f} .. {mean + 12.706 * se:+.2f} |") in line
    # and what the complexity cost did in each BBB row (from the epochs' records)
    cost_rows = [ln for ln in text.split("What the complexity cost did")[1].splitlines()
                 if ln.startswith("| bbb-")]
    assert len(cost_rows) == 3 and all("| adam 0.001 | blundell |" in r for r in cost_rows)


def test_multi_model_run_resumes_to_the_same_result(mnist_data_dir, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    base = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "3", "--seeds", "2",
            "--prior", "mixture", "gaussian", "--checkpoint-every", "0"]
    ref, out = tmp_path / "ref", tmp_path / "run"
    assert mnist.main([*base, "--out", str(ref)]) == 0
    with _ctrl_c_in_epoch(monkeypatch, 3):
        assert mnist.main([*base, "--out", str(out)]) == 130
    assert mnist.main(["--resume", str(out), "--data-dir", str(mnist_data_dir)]) == 0
    assert (out / "models.csv").read_text() == (ref / "models.csv").read_text()
    for d in (p for p in ref.iterdir() if p.is_dir() and "seed=" in p.name):
        assert _results(out / d.name) == _results(d)


# ------------------------------------------------------------------ worker processes

def _same_outputs(a: Path, b: Path) -> None:
    """Two runs of several models wrote the same results (timings aside)."""
    def table(path: Path) -> list[dict]:
        return [{k: v for k, v in r.items() if "seconds" not in k}
                for r in read_csv_rows(path)]
    for name in ("models.csv", "settings.csv"):
        assert table(a / name) == table(b / name), name
    dirs = sorted(p.name for p in b.iterdir() if p.is_dir() and "seed=" in p.name)
    assert dirs and dirs == sorted(p.name for p in a.iterdir() if p.is_dir() and "seed=" in p.name)
    for d in dirs:
        assert _results(a / d) == _results(b / d), d


def test_workers_give_the_same_results(mnist_data_dir, tmp_path, monkeypatch):
    """--workers 1 and 2 write the same results, and a grid's setting trains as the
    command of that one setting would (its seeds are one batch either way)."""
    _no_network(monkeypatch)
    base = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "2", "--seeds", "2"]
    grid = [*base, "--prior", "mixture", "gaussian"]
    one, two, alone = tmp_path / "one", tmp_path / "two", tmp_path / "alone"
    assert mnist.main([*grid, "--workers", "1", "--out", str(one)]) == 0
    assert mnist.main([*grid, "--workers", "2", "--out", str(two)]) == 0
    _same_outputs(one, two)
    assert json.loads((two / "prior=gaussian__seed=0" / "summary.json").read_text()
                      )["workers"] == 2
    assert mnist.main([*base, "--prior", "gaussian", "--out", str(alone)]) == 0
    for seed in (0, 1):
        assert _results(alone / f"seed={seed}") == _results(one / f"prior=gaussian__seed={seed}")


def test_a_kl_factor_grid_trains_each_factor_as_its_own_command(mnist_data_dir, tmp_path,
                                                                monkeypatch):
    """``--kl-factor 1 0.1`` trains each factor as the command of that one factor would,
    and the report tells the rows apart by their factor."""
    _no_network(monkeypatch)
    base = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "2", "--seeds", "2",
            "--kl-weighting", "uniform", "--workers", "1"]
    grid, alone = tmp_path / "grid", tmp_path / "alone"
    assert mnist.main([*base, "--kl-factor", "1", "0.1", "--out", str(grid)]) == 0
    assert mnist.main([*base, "--kl-factor", "0.1", "--out", str(alone)]) == 0
    for seed in (0, 1):
        assert _results(alone / f"seed={seed}") == _results(
            grid / f"kl_factor=0.1__seed={seed}")
    cold, elbo = (grid / f"kl_factor={f}__seed=0" for f in ("0.1", "1"))
    assert json.loads((cold / "summary.json").read_text())["settings"]["kl_factor"] == 0.1
    assert json.loads((elbo / "summary.json").read_text())["settings"]["kl_factor"] == 1.0
    # the factor acts: the tempered run's loss counts a tenth of the cost
    assert _results(cold)[0][-1]["train_loss"] != _results(elbo)[0][-1]["train_loss"]
    report(grid)
    table1 = read_csv_rows(grid / "table1.csv")
    assert sorted(float(r["kl_factor"]) for r in table1) == [0.1, 1.0]


def _worker_pids(parent: int) -> list[int]:
    """The pool's worker processes of ``parent`` (not its resource tracker)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            status = (proc / "status").read_text()
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if f"\nPPid:\t{parent}\n" in status and b"spawn_main" in cmd:
            pids.append(int(proc.name))
    return pids


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
@pytest.mark.parametrize("how", ["kill-worker", "ctrl-c", "ctrl-c-queued"])
@pytest.mark.slow
def test_a_killed_worker_or_ctrl_c_ends_in_one_line_and_resumes(mnist_data_dir, tmp_path,
                                                                 how):
    """A worker killed with SIGKILL (or Ctrl-C in the parent) ends the run with one line
    saying how to resume, never a hang; the checkpoints stay good and the resumed run
    equals an uninterrupted one. With more batches than workers, Ctrl-C starts none of
    the batches still waiting (the pool has already queued one of them)."""
    base = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "100",
            "--prior", "mixture", "gaussian", "--checkpoint-every", "0"]
    if how == "ctrl-c-queued":
        base += ["--kl-weighting", "blundell", "uniform"]  # 4 batches for 2 workers
    ref, out = tmp_path / "ref", tmp_path / "run"
    assert mnist.main([*base, "--workers", "1", "--out", str(ref)]) == 0
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    # started with SIGINT ignored, as a shell script's `cmd &` starts it: kill -INT still works
    proc = subprocess.Popen([sys.executable, "-m", "bandits.mnist", *base, "--workers", "2",
                             "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=partial(signal.signal, signal.SIGINT, signal.SIG_IGN))
    deadline = time.monotonic() + 120
    training = 2 if how == "ctrl-c-queued" else 1  # batches with a checkpoint: both workers'
    while (len(list((out / "checkpoints").glob("batch-*.pt"))) < training
           or not _worker_pids(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint written"
        time.sleep(0.01)
    if how != "kill-worker":
        proc.send_signal(signal.SIGINT)
    else:
        os.kill(_worker_pids(proc.pid)[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"python -m bandits.mnist --resume {out}" in lines[0]
    if how != "kill-worker":
        assert proc.returncode == 130 and "interrupted" in lines[0]
    else:
        assert proc.returncode == 2 and "a worker died" in lines[0]
    if how == "ctrl-c-queued":  # only the two batches that were training wrote anything
        assert len([d for d in out.iterdir() if (d / "epochs.csv").is_file()]) == 2
    assert mnist.main(["--resume", str(out), "--data-dir", str(mnist_data_dir)]) == 0
    _same_outputs(out, ref)


@pytest.mark.slow
def test_bench_mnist_workers_times_each_worker_count_and_checks_the_bytes(mnist_data_dir,
                                                                         monkeypatch):
    from bandits.tools import bench

    monkeypatch.setenv("BANDITS_DATA_DIR", str(mnist_data_dir))
    df = bench.mnist_workers([1, 2], rounds=1, extra=TINY_MNIST[:8] + ["--epochs", "1"])
    assert list(df["workers"]) == [1, 2]
    assert df["same_bytes_as_1_worker"].all() and (df["wall_seconds_median"] > 0).all()


@pytest.mark.slow
def test_bench_threads_under_load_times_each_variant_and_the_policy_changes_no_number(
        mnist_data_dir, monkeypatch):
    from bandits.tools import bench_commands

    monkeypatch.setenv("BANDITS_DATA_DIR", str(mnist_data_dir))
    df = bench_commands.threads_under_load([0, 1], rounds=1, extra=TINY_MNIST[:6])
    assert list(df["busy_processes"]) == [0] * 3 + [1] * 3
    assert set(df["variant"]) == set(bench_commands.THREAD_VARIANTS)
    assert df["wait_policy_same_bytes"].all() and (df["seconds"] > 0).all()


# --------------------------------------------------------------------------- --adam-probe


def test_adam_probe_records_adams_step_scale_per_prior(mnist_data_dir, tmp_path):
    """One row per setting and epoch; the scale mixture's posterior means under Blundell's
    KL weights have an Adam scale sqrt(v) far above the Gaussian prior's (the narrow
    component's gradient in v), which is the data gradient's size for the Gaussian."""
    out = tmp_path / "probe"
    argv = ["adam-probe", "--prior", "gaussian", "mixture", "--kl-weighting", "blundell",
            "--epochs", "2", "--data-dir", str(mnist_data_dir), "--out", str(out),
            "--train-size", "1000", "--test-size", "200", "--hidden", "32", "--no-progress"]
    assert mnist.main(argv) == 0
    rows = read_csv_rows(out / "adam_probe.csv")
    assert [(r["setting"], r["epoch"]) for r in rows] == [
        ("prior=gaussian", "1"), ("prior=mixture", "1"), ("prior=gaussian", "2"),
        ("prior=mixture", "2")]
    gauss, mix = rows[2], rows[3]
    assert gauss["share_in_narrow"] == "nan" and 0 < float(mix["share_in_narrow"]) < 1
    for r in (gauss, mix):
        assert 0 < float(r["adam_scale_q10"]) <= float(r["adam_scale_q50"]) <= float(
            r["adam_scale_q90"])
        assert float(r["data_grad_rms"]) > 0 and float(r["val_error"]) < 90
    assert float(gauss["adam_scale_q50"]) < 10 * float(gauss["data_grad_rms"])
    assert float(mix["adam_scale_q50"]) > 10 * float(gauss["adam_scale_q50"])
    assert json.loads((out / "adam_probe.json").read_text())["command"].startswith(
        "python -m bandits.mnist adam-probe --prior gaussian mixture")


def test_adam_probe_data_gradient_changes_nothing():
    torch.manual_seed(0)
    x, y = torch.rand(3, 1, 20, 784) * 2, torch.randint(0, 10, (3, 1, 20))
    clf = Classifiers("bbb", [16], [train.RunSpec(0, priors.make_prior(Config()))])
    clf.train_epoch(x[0, 0], y[0, 0], 10, ["blundell"])
    before = {k: v.clone() for k, v in clf.params().items()}
    adam = {k: v.clone() for k, v in clf.optimizer.state[clf.net.mu].items()}
    noise = clf.noise_gens[0].get_state()
    first = data_gradient_scale(clf, x, y)
    assert first.shape == (1,) and first.item() > 0
    assert torch.equal(first, data_gradient_scale(clf, x, y))  # the same noise both times
    assert all(torch.equal(v, clf.params()[k]) for k, v in before.items())
    assert all(torch.equal(v, clf.optimizer.state[clf.net.mu][k]) for k, v in adam.items())
    assert torch.equal(noise, clf.noise_gens[0].get_state())


def test_a_mixture_whose_narrow_component_is_out_of_reach_is_warned_about(capsys, monkeypatch):
    """Under the closed-form cost, sigma2 = e^-8 against an initial sigma of e^-5 gives
    the Gaussian N(0, sigma1^2)'s gradients (so the warning is true); e^-6 does not, and
    neither does an initial sigma inside the narrow component."""
    warned = priors.unreachable_spikes(cli.parse_config(
        ["--complexity", "kl", "--neg-log-sigma2", "6", "8"]))
    assert len(warned) == 1 and warned[0].startswith("--neg-log-sigma2 8 ")
    assert "--init-rho of at most -6.9" in warned[0]
    assert not priors.unreachable_spikes(cli.parse_config(
        ["--complexity", "kl", "--neg-log-sigma2", "8", "--init-rho=-8"]))
    assert not priors.unreachable_spikes(cli.parse_config(["--neg-log-sigma2", "8"]))  # mc

    def grads(prior):
        mu = (torch.rand(1000, generator=torch.Generator().manual_seed(0)) - 0.5) * 0.1
        mu.requires_grad_(True)
        rho = torch.full((1000,), -5.0, requires_grad=True)
        closed_form_cost(mu, F.softplus(rho), fused_prior_consts(prior)).sum().backward()
        return mu.grad, rho.grad

    wide = grads(GaussianPrior(1.0))
    for sigma2, same in ((math.exp(-8), True), (math.exp(-6), False)):
        got = grads(ScaleMixturePrior(0.5, 1.0, sigma2))
        assert all(torch.allclose(g, w, rtol=1e-6, atol=0) for g, w in zip(got, wide)) == same

    def refuse(*args):  # stands in for the training, which the warning comes before
        raise ValueError("not trained")

    monkeypatch.setattr(cli, "run", refuse)
    assert mnist.main(["--complexity", "kl", "--neg-log-sigma2", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("bandits.mnist: warning: --neg-log-sigma2 8 ") and len(err) == 2
    assert err[1] == "bandits.mnist: error: not trained"


def test_a_commands_time_is_its_wall_time_only_where_that_is_known():
    """Batches in one process add up; batches side by side in worker processes take the
    longest one's time; more batches than processes: only the sum is known."""
    def batch(wall, models, workers):
        return [{"batch_wall_seconds": wall, "wall_seconds": wall * 60 / models,
                 "workers": workers} for _ in range(models)]

    def time_text(models):
        return tables.time_text(pd.DataFrame(models))

    assert time_text(batch(1.0, 3, 1) + batch(2.0, 3, 1)) == "wall time 3.0 min"
    assert time_text(batch(1.0, 3, 2) + batch(2.0, 3, 2)) == (
        "wall time 2.0 min (2 batches side by side in 2 processes; 3.0 min of batch time "
        "in all)")
    assert time_text(batch(1.0, 2, 2) + batch(2.0, 2, 2) + batch(4.0, 2, 2)) == (
        "7.0 min of batch time in all (3 batches in 2 processes side by side)")


def test_the_reports_paper_note_gives_the_numbers_for_its_own_widths():
    """A 2 x 1200 report sets the paper's 2 x 1200 numbers beside its rows, not the 2 x 400
    ones; a report without an MLP names only the pruning table."""
    note = tables.paper_note([1200])
    assert "2 x 1200: SGD 1.88, dropout 1.36, BBB Gaussian 2.04, BBB scale mixture 1.32" in note
    assert "2 x 400" not in note
    both = tables.paper_note([400, 1200])
    assert "2 x 400: SGD 1.83" in both and "2 x 1200: SGD 1.88" in both
    assert "Table 1 (" not in tables.paper_note([])
    assert "Table 1 (" not in tables.paper_note([100])  # a width the paper did not train


def test_kl_factor_at_moves_geometrically_from_the_first_epoch_to_the_last():
    cfg = Config(model="bbb", epochs=5, kl_factor=0.01, kl_factor_final=1.0)
    got = [kl_factor_at(cfg, e) for e in range(1, 6)]
    assert got == pytest.approx([0.01, 0.01 ** 0.75, 0.1, 0.01 ** 0.25, 1.0])
    assert [kl_factor_at(Config(model="bbb", epochs=5, kl_factor=0.3), e)
            for e in (1, 5)] == [0.3, 0.3]  # no schedule: constant
    assert kl_factor_at(Config(model="bbb", epochs=1, kl_factor=0.1, kl_factor_final=1.0),
                        1) == 1.0  # one epoch is the last


def test_a_kl_factor_schedule_trains_each_epoch_at_its_factor(mnist_data_dir, tmp_path,
                                                              monkeypatch, capsys):
    """``--kl-factor 0.1 --kl-factor-final 1``: the first epoch is the constant 0.1 run's,
    the later ones differ; ``epochs.csv`` and ``table1.csv`` record the schedule, and a
    resume may not stretch it."""
    _no_network(monkeypatch)
    base = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "3", "--seeds", "2",
            "--kl-weighting", "uniform", "--kl-factor", "0.1", "--workers", "1",
            "--checkpoint-every", "0"]
    ramp, flat = tmp_path / "ramp", tmp_path / "flat"
    assert mnist.main([*base, "--kl-factor-final", "1", "--out", str(ramp)]) == 0
    assert mnist.main([*base, "--out", str(flat)]) == 0
    ramp_rows, flat_rows = (_results(d / "seed=0")[0] for d in (ramp, flat))
    assert [r["kl_factor"] for r in ramp_rows] == pytest.approx([0.1, 0.1 ** 0.5, 1.0])
    assert [r["kl_factor"] for r in flat_rows] == [0.1, 0.1, 0.1]
    assert ramp_rows[0] == {**flat_rows[0], "kl_factor": 0.1}
    # from the second epoch on the schedule's stronger cost trains other weights
    assert ramp_rows[1]["nll"] != flat_rows[1]["nll"]
    assert ramp_rows[2]["kl"] != flat_rows[2]["kl"]
    report(ramp)
    (row,) = read_csv_rows(ramp / "table1.csv")
    assert (float(row["kl_factor"]), float(row["kl_factor_final"])) == (0.1, 1.0)
    assert "uniform x 0.1 -> 1" in (ramp / "tables.md").read_text()
    capsys.readouterr()
    assert mnist.main(["--resume", str(ramp), "--epochs", "4"]) == 2
    assert "--kl-factor-final" in capsys.readouterr().err
    assert mnist.main([*base, "--model", "sgd", "--kl-factor-final", "1",
                       "--out", str(tmp_path / "sgd")]) == 2
    assert "--kl-factor-final schedules BBB" in capsys.readouterr().err


@pytest.mark.slow
def test_the_report_joins_more_seeds_of_a_setting_into_its_row(mnist_data_dir, tmp_path,
                                                               monkeypatch):
    """Seeds 0-1 in ``exp/a`` and seed 2 (``--seed 2``) in ``exp/b`` with the same settings
    form one row of three seeds, with both commands listed; a repeat of seed 0 in
    ``exp/c`` stays a row of its own."""
    _no_network(monkeypatch)
    base = [*TINY_MNIST, "--data-dir", str(mnist_data_dir), "--epochs", "1",
            "--checkpoint-every", "0"]
    exp = tmp_path / "exp"
    assert mnist.main([*base, "--seeds", "2", "--out", str(exp / "a")]) == 0
    assert mnist.main([*base, "--seed", "2", "--out", str(exp / "b")]) == 0
    assert mnist.main([*base, "--out", str(exp / "c")]) == 0
    report(tmp_path)
    rows = {r["run"]: r for r in read_csv_rows(tmp_path / "table1.csv")}
    assert sorted(rows) == ["exp/a + exp/b", "exp/c"]
    joined = rows["exp/a + exp/b"]
    errs = [json.loads((d / "summary.json").read_text())["best_validation"]["test_error_mean"]
            for d in (exp / "a" / "seed=0", exp / "a" / "seed=1", exp / "b")]
    assert int(joined["seeds"]) == 3 and int(rows["exp/c"]["seeds"]) == 1
    assert float(joined["test_error_mean"]) == pytest.approx(sum(errs) / 3, abs=1e-4)
    text = (tmp_path / "tables.md").read_text()
    assert "--out " + str(exp / "a") in text and "--out " + str(exp / "b") in text
    # a setting of a command that trained several joins more seeds of that setting alone
    two = ["--kl-weighting", "uniform"]
    assert mnist.main([*base, *two, "--kl-factor", "1", "0.5", "--workers", "2",
                       "--out", str(tmp_path / "exp2" / "grid")]) == 0
    assert mnist.main([*base, *two, "--kl-factor", "0.5", "--seed", "1",
                       "--out", str(tmp_path / "exp2" / "more")]) == 0
    report(tmp_path / "exp2")
    rows = {r["run"]: r["seeds"] for r in read_csv_rows(tmp_path / "exp2" / "table1.csv")}
    assert rows == {"grid/kl_factor=1": "1", "grid/kl_factor=0.5 + more": "2"}


def _record(model: str, seed: int, val: float = 1.5, command_models: int = 1,
            **settings) -> dict:
    """A line of models.jsonl with the given settings (and the defaults)."""
    st = saved_config(Config(**settings, seed=seed))
    return {"model": model, "command": f"python -m bandits.mnist --out {model}",
            "settings": st, "final": {"test_error_mean": 1.6},
            "best_validation": {"epoch": 1, "val_error_mean": val, "test_error_mean": 1.5},
            "epochs": st["epochs"], "command_models": command_models, "workers": 1}


def _rows(records: list[dict]) -> dict[str, list[int]]:
    """The report's rows of ``records``: name -> seeds."""
    rows, models = rows_table(models_table(records), records)
    return {row["name"]: list(models.loc[models["row"] == r, "seed"])
            for r, row in rows.iterrows()}


def test_rows_are_the_models_of_the_same_settings_wherever_they_were_written():
    """Models join a row by their settings alone: seeds of one setting written by several
    commands, in any directories, are one row named by where they were written; a model
    that repeats a seed of its setting starts another row; other settings are other
    rows. A --quick check is known by its settings, not its directory's name."""
    records = [_record("exp/a/seed=0", 0, command_models=2),
               _record("exp/a/seed=1", 1, command_models=2),
               _record("exp/c", 0),
               _record("exp/d", 3, kl_factor=0.5),
               _record("grid/kl_factor=0.5__seed=1", 1, command_models=2, kl_factor=0.5),
               _record("grid/kl_factor=1__seed=5", 5, command_models=2),
               _record("later/more/b", 2),
               _record("quick-look", 0, hidden=16),
               _record("smoke", 0, quick=True)]
    assert _rows(records) == {"exp/a + grid/kl_factor=1 + later/more/b": [0, 1, 2, 5],
                              "exp/c": [0], "exp/d + grid/kl_factor=0.5": [1, 3],
                              "quick-look": [0], "smoke": [0]}
    rows, _ = rows_table(models_table(records), records)
    assert list(rows.loc[rows["quick"], "name"]) == ["smoke"]


def test_at_equal_validation_error_the_row_with_more_seeds_is_chosen():
    """1.52 over 3 seeds and 1.52 over 6 (float32 means that differ in the 8th digit) are
    the same number of misclassified images: the row with more seeds is chosen, in either
    order; a lower error still wins over more seeds."""
    def row(name, vals, lr):
        return [_record(f"{name}/seed={i}", i, v, len(vals), prior="gaussian", hidden=1200,
                        lr=lr) for i, v in enumerate(vals)]

    three = row("three", [1.46, 1.49, 1.6100000143051147], 1e-3)
    six = row("six", [1.53, 1.39, 1.46, 1.51, 1.67, 1.5600001], 2e-3)
    lower = row("lower", [1.5, 1.5, 1.5], 3e-3)
    models = models_table(three + six)
    assert (mean_val_error(models[models["line"] < 3])
            < mean_val_error(models[models["line"] >= 3]))
    rows, _ = rows_table(models, three + six)
    for order in (rows, rows.iloc[::-1]):
        assert list(order.loc[chosen(order), "name"]) == ["six"]
    rows, _ = rows_table(models_table(six + lower), six + lower)
    assert list(rows.loc[rows["chosen"], "name"]) == ["lower"]


@pytest.mark.parametrize("df, known", [(1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228),
                                       (30, 2.042), (31, 2.040), (100, 1.984)])
def test_t_quantile_is_students(df, known):
    """The report's 95 % interval: the known quantiles of Student's t, and its density
    integrated over +-t975(df) is 0.95."""
    q = t975(df)
    assert round(q, 3) == known
    x = torch.linspace(-q, q, 200_001, dtype=torch.float64)
    density = torch.distributions.StudentT(df).log_prob(x).exp()
    assert torch.trapezoid(density, x).item() == pytest.approx(0.95, abs=2e-4)
