"""LinFullPost: the exact normal-inverse-gamma posterior against a direct solve."""

import numpy as np
import pytest
import torch

from agents import AgentConfig, make_agent
from agents.linear import BayesLinearRegression, cholesky_rank_one_update
from bandits.buffer import ReplayBuffer


def test_rank_one_update_equals_a_fresh_cholesky():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(3, 6, 6, generator=g, dtype=torch.float64)
    M = A @ A.transpose(-1, -2) + torch.eye(6, dtype=torch.float64)
    x = torch.randn(3, 6, generator=g, dtype=torch.float64)
    L = cholesky_rank_one_update(torch.linalg.cholesky(M), x.clone())
    expected = torch.linalg.cholesky(M + x.unsqueeze(-1) * x.unsqueeze(-2))
    torch.testing.assert_close(L, expected)


def test_posterior_equals_a_direct_numpy_solve():
    rng = np.random.default_rng(0)
    runs, actions, d, n = 2, 3, 4, 50
    a0, b0, lam = 6.0, 6.0, 0.25
    post = BayesLinearRegression(runs, actions, d, a0, b0, lam, torch.device("cpu"))
    Z = rng.normal(size=(runs, n, d))
    A = rng.integers(actions, size=(runs, n))
    y = rng.normal(size=(runs, n)) + Z[..., 0] * 2.0
    for t in range(n):
        post.add(torch.as_tensor(Z[:, t]), torch.as_tensor(A[:, t]), torch.as_tensor(y[:, t]))
    mu = post.mean().numpy()
    a, b = (v.numpy() for v in post.inverse_gamma(post.mean()))
    for r in range(runs):
        for k in range(actions):
            Zk, yk = Z[r][A[r] == k], y[r][A[r] == k]
            Lam = Zk.T @ Zk + lam * np.eye(d)
            m = np.linalg.solve(Lam, Zk.T @ yk)
            np.testing.assert_allclose(mu[r, k], m, rtol=1e-9, atol=1e-10)
            np.testing.assert_allclose(a[r, k], a0 + len(yk) / 2)
            np.testing.assert_allclose(b[r, k], b0 + (yk @ yk - m @ Lam @ m) / 2, rtol=1e-9)
            Lk = post.L[r, k].numpy()
            np.testing.assert_allclose(Lk @ Lk.T, Lam, rtol=1e-9, atol=1e-9)


def test_sampled_parameters_have_the_posterior_moments():
    rng = np.random.default_rng(1)
    d, n = 3, 40
    post = BayesLinearRegression(1, 1, d, 6.0, 6.0, 0.25, torch.device("cpu"))
    for _ in range(n):
        z = rng.normal(size=(1, d))
        post.add(torch.as_tensor(z), torch.zeros(1, dtype=torch.long),
                 torch.as_tensor(z[:, 0] + rng.normal(size=1)))
    S = 40000
    mu = post.mean()
    a, b = post.inverse_gamma(mu)
    g = torch.Generator().manual_seed(0)
    gamma = torch._standard_gamma(a.expand(S, 1, 1).reshape(S, 1).contiguous())
    normal = torch.randn(S, 1, d, generator=g, dtype=torch.float64)
    post_s = BayesLinearRegression(S, 1, d, 6.0, 6.0, 0.25, torch.device("cpu"))
    post_s.load_state_dict({k: v.expand(S, *v.shape[1:]).clone()
                            for k, v in post.state_dict().items()})
    beta = post_s.sample(gamma.reshape(S, 1), normal)[:, 0]  # (S, d)
    # E[beta] = mu; Cov[beta] = E[sigma^2] Lambda^-1 = b / (a - 1) Lambda^-1
    Lam_inv = torch.cholesky_inverse(post.L[0, 0])
    cov = (b[0, 0] / (a[0, 0] - 1)) * Lam_inv
    se = (cov.diagonal() / S).sqrt()
    assert ((beta.mean(0) - mu[0, 0]).abs() < 5 * se).all()
    torch.testing.assert_close(torch.cov(beta.T), cov, rtol=0.05, atol=0.05 * cov.abs().max())


def test_agent_learns_a_linear_bandit_and_is_deterministic():
    def trajectory(seed):
        agent = make_agent("linfullpost", 3, 2, 4, seed, AgentConfig())
        buf = ReplayBuffer(16, 4, 3)
        rng = np.random.default_rng(0)
        picks = []
        for _ in range(200):
            c = rng.normal(size=(4, 3)).astype(np.float32)
            a = agent.act(c)
            r = np.where(a.numpy() == 1, c[:, 0], -c[:, 0]) + 0.1 * rng.normal(size=4)
            buf.add(c, a, r)
            agent.update(buf)
            picks.append(((a.numpy() == 1) == (c[:, 0] > 0)).mean())
        return np.array(picks)

    p = trajectory(0)
    assert p[-50:].mean() > 0.9  # plays the better arm once it has learnt
    assert np.array_equal(p, trajectory(0))


def test_bad_prior_is_refused():
    with pytest.raises(ValueError, match="lambda must be > 0"):
        make_agent("linfullpost", 3, 2, 1, 0, AgentConfig(lin_lambda=0.0))


def test_refit_equals_adding_one_by_one():
    rng = np.random.default_rng(3)
    runs, actions, d, n = 2, 2, 4, 30
    z = torch.as_tensor(rng.normal(size=(runs, n, d)))
    a = torch.as_tensor(rng.integers(actions, size=(runs, n)))
    y = torch.as_tensor(rng.normal(size=(runs, n)))
    one = BayesLinearRegression(runs, actions, d, 6.0, 6.0, 0.25, torch.device("cpu"))
    for t in range(n):
        one.add(z[:, t], a[:, t], y[:, t])
    fit = BayesLinearRegression(runs, actions, d, 6.0, 6.0, 0.25, torch.device("cpu"))
    fit.refit(z, a, y)
    for k in ("L", "zty", "yty", "n"):
        torch.testing.assert_close(getattr(fit, k), getattr(one, k))


def test_neurallinear_features_are_the_last_hidden_layer():
    agent = make_agent("neurallinear", 3, 2, 2, 0, AgentConfig(hidden=(8, 5)))
    x = agent.all_action_inputs(np.ones((2, 3), dtype=np.float32))  # (2, 2, 5)
    phi = agent.features(x)
    assert phi.shape == (2, 2, 6) and torch.all(phi[..., -1] == 1)
    m = agent.model
    (w1, b1), (w2, b2), _ = m.split(m.mu)
    h = torch.relu(torch.relu(x @ w1.transpose(1, 2) + b1.unsqueeze(1)) @ w2.transpose(1, 2)
                   + b2.unsqueeze(1))
    torch.testing.assert_close(phi[..., :-1], h)


def test_linucb_learns_a_linear_problem_well_below_uniform():
    # reward = z[0] for action 0 and 1 - z[0] for action 1, no noise
    from agents import make_agent
    from bandits.buffer import ReplayBuffer

    runs, d = 3, 4
    agent = make_agent("linucb", d, 2, runs, 0, AgentConfig(ucb_alpha=0.5))
    buf = ReplayBuffer(500, runs, d)
    rng = np.random.default_rng(0)
    regret = []
    for _ in range(400):
        z = rng.random((runs, d), dtype=np.float32)
        a = agent.act(z).numpy()
        best = np.maximum(z[:, 0], 1 - z[:, 0])
        r = np.where(a == 0, z[:, 0], 1 - z[:, 0])
        regret.append(best - r)
        buf.add(z, a, r)
        agent.update(buf)
    late = np.mean(regret[-100:])
    assert late < 0.02  # uniform's expected regret here is 0.25


def test_linucb_batched_equals_each_run_alone():
    from agents import make_agent
    from bandits.buffer import ReplayBuffer

    runs, d = 3, 5
    rng = np.random.default_rng(1)
    z = rng.random((60, runs, d), dtype=np.float32)
    noise = rng.normal(size=(60, runs))

    def play(agent, cols):
        buf = ReplayBuffer(100, len(cols), d)
        out = []
        for t in range(60):
            a = agent.act(z[t][cols]).numpy()
            buf.add(z[t][cols], a, z[t][cols, 0] * (a == 1) + noise[t][cols])
            agent.update(buf)
            out.append(a)
        return np.array(out)

    together = play(make_agent("linucb", d, 2, runs, 0), list(range(runs)))
    for r in range(runs):
        alone = play(make_agent("linucb", d, 2, 1, 0), [r])
        np.testing.assert_array_equal(alone[:, 0], together[:, r])
