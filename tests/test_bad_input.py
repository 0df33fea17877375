"""Bad input: every case gives the right result, or one line and a clear exit status,
and leaves no empty output directory behind.

NeuralUCB and NeuralTS with the learned likelihood."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from agents import AgentConfig, make_agent
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
