"""Bad input: every case gives the right result, or one line and a clear exit status,
and leaves no empty output directory behind.

NeuralUCB and NeuralTS with the learned likelihood, and the design's regulariser and its
exact form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from agents import AgentConfig, make_agent
from agents.neural_ucb import UCB_LAMBDA_RANGE, design_size
from bandits.buffer import ReplayBuffer
from bandits.run import main

TINY = ["--env", "wheel", "--seeds", "1", "--hidden", "8", "--batch-size", "8",
        "--updates-per-step", "1", "--no-progress", "--workers", "1"]


def _one_line(text: str) -> str:
    text = text.strip()
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    return text


# ------------------------------------------------- NeuralUCB, NeuralTS: learned likelihood


def test_the_learned_likelihood_explores_with_the_mean_outputs_gradient():
    d = 4
    agent = make_agent("neuralucb", d, 2, 2, 0,
                       AgentConfig(hidden=(16,), batch_size=8, likelihood="learned"))
    assert agent.model.n_params == (d + 2 + 1) * 16 + (16 + 1) * 2  # the mean and the noise
    x = np.random.default_rng(0).random((2, d), dtype=np.float32)
    f, g = agent.scores_and_gradients(x)
    inputs = agent.all_action_inputs(x)
    for r in range(2):
        for a in range(2):
            w = agent.model.mu.detach()[r].clone().requires_grad_()
            out = agent.model.apply_layers(inputs[r:r + 1, a:a + 1],
                                           agent.model.split(w.unsqueeze(0)))
            assert out.shape[-1] == 2
            (grad,) = torch.autograd.grad(out[..., 0].sum(), w)
            torch.testing.assert_close(g[r, a], grad)
            torch.testing.assert_close(f[r, a], out[..., 0].sum().detach())
    buf = ReplayBuffer(64, 2, d)
    for _ in range(5):  # acts and trains by the Gaussian likelihood of both outputs
        x = np.random.default_rng(1).random((2, d), dtype=np.float32)
        a = agent.act(x)
        buf.add(x, a, x[:, 0] * a.numpy())
        assert torch.isfinite(agent.update(buf, 2)).all()


def test_neuralucb_and_neuralts_run_with_the_learned_likelihood(tmp_path):
    out = tmp_path / "run"
    assert main([*TINY, "--agent", "neuralucb", "neuralts", "--likelihood", "learned",
                 "--steps", "10", "--out", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["agent"]) == ["neuralts", "neuralucb"]
    assert (summary["steps"] == 10).all()


# ------------------------------------------------- the design: lambda and its exact form


def test_a_ucb_lambda_that_underflows_float32_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*TINY, "--agent", "neuralucb", "--ucb-lambda", "1e-300", "--steps", "5",
                 "--out", str(out)]) == 2
    assert "--ucb-lambda must be in [1e-06, " in _one_line(capsys.readouterr().err)
    assert not out.exists()
    with pytest.raises(ValueError, match="ucb_lambda must be in"):  # the agent itself too
        make_agent("neuralucb", 4, 2, 1, 0, AgentConfig(hidden=(8,), ucb_lambda=1e-300))


@pytest.mark.parametrize("exact", [False, True], ids=["diagonal", "exact"])
@pytest.mark.parametrize("ucb_lambda", UCB_LAMBDA_RANGE)
@pytest.mark.parametrize("nu", [5e-324, 1e6])  # the ends of --nu's range (0, 1e6]
def test_every_accepted_lambda_and_nu_gives_finite_widths(exact, ucb_lambda, nu):
    d, runs = 6, 2
    agent = make_agent("neuralucb", d, 3, runs, 0,
                       AgentConfig(hidden=(16,), batch_size=8, ucb_lambda=ucb_lambda, nu=nu,
                                   exact_design=exact))
    buf = ReplayBuffer(64, runs, d)
    rng = np.random.default_rng(0)
    for _ in range(40):
        x = (rng.normal(size=(runs, d)) * 3).astype(np.float32)
        _, g = agent.scores_and_gradients(x)
        assert torch.isfinite(agent.widths(g)).all()
        a = agent.act(x)
        buf.add(x, a, x[:, 0] * a.numpy())
        agent.update(buf, 1)


def test_an_exact_design_too_large_is_refused_before_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    # mushroom: 117 features + 2 arms in, hidden 100 100, one output: 22,201 parameters
    assert main(["--agent", "neuralucb", "--exact-design", "--env", "mushroom", "--seeds",
                 "1", "--steps", "10", "--no-progress", "--workers", "1",
                 "--out", str(out)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "22,201 x 22,201" in err and "leave out --exact-design" in err and "--hidden" in err
    assert not out.exists()
    # a network small enough runs
    assert main([*TINY, "--agent", "neuralts", "--exact-design", "--steps", "5",
                 "--out", str(out)]) == 0


@pytest.mark.parametrize("likelihood", ["fixed", "learned"])
def test_the_size_refused_is_the_agents_network(likelihood):
    agent = make_agent("neuralucb", 117, 2, 1, 0,
                       AgentConfig(hidden=(100, 100), likelihood=likelihood))
    assert agent.model.n_params == design_size(119, (100, 100),
                                               2 if likelihood == "learned" else 1)
