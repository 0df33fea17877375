"""NeuralUCB and NeuralTS: gradients as features, the design matrix, learning, batching."""

import numpy as np
import pytest
import torch

from agents import AgentConfig, make_agent
from bandits.core.buffer import ReplayBuffer

D = 4


def _agent(name, runs=3, seed=0, **kw):
    return make_agent(name, D, 2, runs, seed, AgentConfig(hidden=(16,), batch_size=16, **kw))


def test_the_gradients_are_autograds_and_the_width_is_the_papers():
    agent = _agent("neuralucb", runs=2, nu=0.5, ucb_lambda=2.0)
    x = np.random.default_rng(0).random((2, D), dtype=np.float32)
    inputs = agent.all_action_inputs(x)
    f, g = agent.scores_and_gradients(inputs)
    # autograd on one run's network
    for r in range(2):
        for a in range(2):
            w = agent.model.mu.detach()[r].clone().requires_grad_()
            out = agent.model.apply_layers(inputs[r:r + 1, a:a + 1],
                                           agent.model.split(w.unsqueeze(0)))
            (grad,) = torch.autograd.grad(out.sum(), w)
            torch.testing.assert_close(g[r, a], grad)
            torch.testing.assert_close(f[r, a], out.sum().detach())
    u = agent.u_diag.clone()
    expected = (2.0 * 0.5 * (g.square() / u.unsqueeze(1)).sum(-1)).sqrt()
    torch.testing.assert_close(agent.widths(g), expected)


def test_the_diagonal_design_is_the_exact_ones_diagonal():
    exact = _agent("neuralucb", exact_design=True)
    diag = _agent("neuralucb")
    rng = np.random.default_rng(1)
    gs = []
    for _ in range(5):  # the same gradients into both designs (the same initial network)
        _, g = diag.scores_and_gradients(
            diag.all_action_inputs(rng.random((3, D), dtype=np.float32)))
        gs.append(g[:, 0])
        for agent in (exact, diag):
            agent._pending = [g[:, 0]]
            agent.add_to_design()
    eye = torch.eye(exact.model.n_params, dtype=torch.float64)
    u = eye * exact.config.ucb_lambda + sum(torch.einsum("rp,rq->rpq", g, g).double()
                                             for g in gs)
    torch.testing.assert_close(torch.diagonal(u, dim1=-2, dim2=-1).float(), diag.u_diag)
    # Sherman-Morrison kept the exact inverse
    torch.testing.assert_close(exact.u_inv.double(), torch.linalg.inv(u), rtol=1e-3,
                               atol=1e-4)


@pytest.mark.parametrize("name", ["neuralucb", "neuralts"])
def test_learns_a_separable_problem_well_below_uniform(name):
    # action 1 pays 1 when x[0] > 0.5, action 0 otherwise; uniform's expected regret 0.5
    runs = 3
    agent = _agent(name, runs=runs, lr=1e-2)
    buf = ReplayBuffer(512, runs, D)
    rng = np.random.default_rng(0)
    regret = []
    for _ in range(400):
        x = rng.random((runs, D), dtype=np.float32)
        a = agent.act(x).numpy()
        best = (x[:, 0] > 0.5).astype(int)
        regret.append((a != best).astype(float))
        buf.add(x, a, (a == best).astype(float))
        agent.update(buf, 4)
    assert np.mean(regret[-100:]) < 0.15


@pytest.mark.parametrize("name", ["neuralucb", "neuralts"])
def test_each_run_scores_as_it_would_alone(name):
    """The runs dimension: a run's scores, widths and design depend on its own network,
    design and context only. Run r of a batch, copied into an agent of one run, gives
    the same gradients, widths and design update."""
    runs = 3
    batch = _agent(name, runs=runs)
    rng = np.random.default_rng(2)
    buf = ReplayBuffer(64, runs, D)
    for _ in range(10):  # train and fill the design a little
        x = rng.random((runs, D), dtype=np.float32)
        a = batch.act(x)
        buf.add(x, a, x[:, 0] * a.numpy())
        batch.update(buf, 2)
    x = rng.random((runs, D), dtype=np.float32)
    f, g = batch.scores_and_gradients(batch.all_action_inputs(x))
    width = batch.widths(g)
    for r in range(runs):
        alone = _agent(name, runs=1)
        with torch.no_grad():
            alone.model.mu.copy_(batch.model.mu[r:r + 1])
        alone.u_diag = batch.u_diag[r:r + 1].clone()
        f1, g1 = alone.scores_and_gradients(alone.all_action_inputs(x[r:r + 1]))
        torch.testing.assert_close(f1[0], f[r])
        torch.testing.assert_close(g1[0], g[r])
        torch.testing.assert_close(alone.widths(g1)[0], width[r])


@pytest.mark.parametrize("name", ["neuralucb", "neuralts"])
def test_the_disjoint_encoding_keeps_each_arms_design_apart(name):
    # x_a = (0, ..., x, ..., 0): an arm's gradient lies in its own block of the first
    # layer, so its width shrinks only with its own choices (the papers' set-up)
    d, arms, h, runs = 3, 4, 8, 2
    agent = make_agent(name, d, arms, runs, 0, AgentConfig(hidden=(h,), encoding="disjoint"))
    context = np.random.default_rng(0).random((runs, d), dtype=np.float32)
    f, g = agent.scores_and_gradients(agent.all_action_inputs(context))
    first = g[..., :arms * h * d].reshape(runs, arms, arms, h, d)  # (run, action, block, ..)
    for a in range(arms):
        assert (first[:, a, a] != 0).any()
        assert all((first[:, a, b] == 0).all() for b in range(arms) if b != a)
    before = agent.widths(g)
    agent._pending = [g[:, 0]]  # every run took arm 0 once
    agent.add_to_design()
    after = agent.widths(g)
    assert (after[:, 0] < before[:, 0]).all()
    # the other arms' widths move only through the shared layers above the first
    first_only = (g[:, 1:, :arms * h * d].square() / agent.u_diag[:, None, :arms * h * d]).sum(-1)
    first_before = g[:, 1:, :arms * h * d].square().sum(-1) / agent.config.ucb_lambda
    torch.testing.assert_close(first_only, first_before)


@pytest.mark.parametrize("encoding", ["onehot", "disjoint"])
@pytest.mark.parametrize("likelihood", ["fixed", "learned"])
def test_the_widths_without_gradients_are_the_widths_of_the_gradients(encoding, likelihood):
    # act's diagonal path: g^T U^-1 g layer by layer, never forming g, and the chosen
    # actions' gradients from one backward pass, against every g_a formed and summed
    d, arms, runs = 3, 4, 3
    agent = make_agent("neuralucb", d, arms, runs, 0,
                       AgentConfig(hidden=(8, 5), encoding=encoding, likelihood=likelihood,
                                   nu=0.7, ucb_lambda=0.3))
    rng = np.random.default_rng(2)
    for _ in range(3):  # a design that is no longer lambda I
        agent.act(rng.random((runs, d), dtype=np.float32))
    agent.add_to_design()
    x = agent.all_action_inputs(rng.random((runs, d), dtype=np.float32))
    f_ref, g = agent.scores_and_gradients(x)
    f, sigma, inputs = agent.scores_widths_and_kept(x)
    torch.testing.assert_close(f, f_ref)
    torch.testing.assert_close(sigma, agent.widths(g))
    actions = torch.as_tensor(rng.integers(0, arms, runs))
    torch.testing.assert_close(agent.chosen_gradients(inputs, actions),
                               g[torch.arange(runs), actions])


@pytest.mark.parametrize("exact_design", [False, True])
def test_the_probes_see_the_width_the_agent_explores_with(exact_design):
    # predict_samples draws N(f, sigma^2) for every action of every probe context: its
    # mean over many draws is f, its spread sigma, both as act computes them (the design
    # holding the choices not yet added: here the second, left pending)
    agent, twin = (_agent("neuralts", runs=2, nu=0.5, ucb_lambda=2.0,
                          exact_design=exact_design) for _ in range(2))
    for a in (0, 1):  # a design that is not lambda I
        g = agent.scores_and_gradients(agent.all_action_inputs(
            np.full((2, D), 0.3 * a + 0.1, dtype=np.float32)))[1]
        for each in (agent, twin):
            each._pending.append(g[:, a])
            if a == 0:
                each.add_to_design()
    twin.add_to_design()
    contexts = torch.rand(3, D, generator=torch.Generator().manual_seed(1))
    draws = agent.predict_samples(contexts, 20_000, torch.Generator().manual_seed(2))
    assert draws.shape == (2, 20_000, 3, 2)
    for i in range(3):
        f, g = twin.scores_and_gradients(twin.all_action_inputs(contexts[i].expand(2, D)))
        sigma = twin.widths(g)  # (runs, actions)
        assert (sigma > 0.01).all()
        torch.testing.assert_close(draws[:, :, i].mean(1), f, atol=0.03 * sigma.max().item(),
                                   rtol=0)
        torch.testing.assert_close(draws[:, :, i].std(1), sigma, rtol=0.03, atol=0)
    again = agent.predict_samples(contexts, 20_000, torch.Generator().manual_seed(2))
    assert torch.equal(draws, again)  # the probe's generator alone decides the draws
