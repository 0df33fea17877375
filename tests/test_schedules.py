"""The reference training schedules as options: --optimizer sgd, --fit epochs and full,
--weight-decay-per-datum, --train-always-until, and NeuralUCB's design kept at once."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import agents.neural
from agents import AgentConfig, make_agent
from bandits.core.buffer import ReplayBuffer
from bandits.simulator.run import main as run_main

D, A, RUNS, N = 3, 2, 2, 10


def _filled(agent, rewards=None, n=N, seed=0):
    rng = np.random.default_rng(seed)
    buf = ReplayBuffer(64, agent.runs, D)
    for _ in range(n):
        c = rng.random((agent.runs, D), dtype=np.float32)
        a = rng.integers(A, size=agent.runs)
        buf.add(c, a, rng.normal(size=agent.runs) if rewards is None else rewards(agent, c, a))
    return buf


def _agent(**kw):
    config = dict(hidden=(8,), optimizer="sgd", lr=0.01, batch_size=3)
    return make_agent("greedy", D, A, RUNS, 0, AgentConfig(**{**config, **kw}))


def _counting(monkeypatch):
    calls = []
    original = agents.neural.NeuralAgent.batch_gradients

    def counted(self, buffer, idx, want_loss):
        calls.append(tuple(idx.shape))
        return original(self, buffer, idx, want_loss)

    monkeypatch.setattr(agents.neural.NeuralAgent, "batch_gradients", counted)
    return calls


def test_an_epochs_fit_stops_after_the_epoch_that_reaches_the_tolerance(monkeypatch):
    calls = _counting(monkeypatch)
    agent = _agent(fit="epochs", fit_tolerance=1e6)  # every epoch is good enough
    agent.update(_filled(agent), 1000)
    assert calls == [(RUNS, 3)] * 3 + [(RUNS, 1)]  # one pass over 10 items in 3s
    calls.clear()
    agent = _agent(fit="epochs", fit_tolerance=0.0)  # never good enough: the step budget
    agent.update(_filled(agent), 25)
    assert len(calls) == 25


def test_a_run_that_reached_the_tolerance_stops_while_the_others_train():
    def rewards(agent, c, a):  # run 0 is paid what its network predicts: loss 0 at first
        with torch.no_grad():
            x = agent.inputs(torch.as_tensor(c), torch.as_tensor(a)).unsqueeze(1)
            predicted = agent.means(agent.model(x))[:, 0].numpy()
        r = np.random.default_rng(1).normal(size=agent.runs)
        r[0] = predicted[0]
        return r

    def fitted(max_steps):
        agent = _agent(fit="epochs", fit_tolerance=1e-6, weight_decay=0.01)
        agent.update(_filled(agent, rewards), max_steps)
        return agent.model.mu.detach()

    one_epoch, longer = fitted(4), fitted(40)  # an epoch: 10 items in minibatches of 3
    # run 0 met the tolerance in its first epoch and stopped there; without the stop its
    # weights would go on decaying. Run 1 went on training.
    torch.testing.assert_close(longer[0], one_epoch[0], rtol=0, atol=0)
    assert not torch.equal(longer[1], one_epoch[1])


def test_a_full_fit_takes_every_item_at_every_step(monkeypatch):
    calls = _counting(monkeypatch)
    agent = _agent(fit="full")
    agent.update(_filled(agent), 4)
    assert calls == [(RUNS, N)] * 4


def test_weight_decay_per_datum_divides_by_the_items_held():
    agent = _agent(fit="full", weight_decay=0.5, weight_decay_per_datum=True)
    agent.update(_filled(agent), 1)
    assert agent.optimizer.param_groups[0]["weight_decay"] == pytest.approx(0.5 / N)
    assert isinstance(agent.optimizer, torch.optim.SGD)


def test_adam_cannot_stop_runs_one_by_one():
    with pytest.raises(ValueError, match="--optimizer sgd"):
        _agent(fit="epochs", optimizer="adam")
    assert run_main(["--agent", "greedy", "--fit", "epochs", "--steps", "3"]) == 2


def test_train_always_until_trains_every_step_then_every_k(monkeypatch, tmp_path):
    steps = []
    original = agents.neural.NeuralAgent.update

    def counted(self, buffer, updates=1):
        steps.append(buffer.added)
        return original(self, buffer, updates)

    monkeypatch.setattr(agents.neural.NeuralAgent, "update", counted)
    assert run_main(["--env", "wheel", "--agent", "greedy", "--seeds", "1", "--steps", "12",
                     "--train-every", "5", "--train-always-until", "3", "--workers", "1",
                     "--no-progress", "--out", str(tmp_path / "run")]) == 0
    assert steps == [1, 2, 3, 5, 10]


def test_neuralucb_puts_each_choice_in_its_design_at_the_next_act():
    agent = make_agent("neuralucb", D, A, RUNS, 0, AgentConfig(hidden=(8,)))
    c = np.random.default_rng(0).random((RUNS, D), dtype=np.float32)
    agent.act(c)
    before = agent.u_diag.clone()
    agent.act(c)  # no training call between: the first choice is in the design now
    assert (agent.u_diag >= before).all() and (agent.u_diag > before).any()
