"""LinFullPost: the exact normal-inverse-gamma posterior against a direct solve."""

import numpy as np
import pytest
import torch

from agents import AgentConfig, make_agent
from agents.linear import (
    BayesLinearRegression,
    cholesky_rank_one_update,
    inverse_factor_rank_one_update,
    inverse_rank_one_update,
)
from bandits.core.buffer import ReplayBuffer


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
    with pytest.raises(ValueError, match="--lin-lambda must be in"):
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
    for k in ("L", "U", "mu", "zty", "yty", "n"):
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
    from bandits.core.buffer import ReplayBuffer

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
    from bandits.core.buffer import ReplayBuffer

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


def _sparse_contexts(rng, *shape):
    """Non-negative, mostly zero features on MNIST's scale (pixels / 126)."""
    return (rng.random(shape) < 0.3) * rng.random(shape) * 2.0


def _direct(Z, A, y, run, action, lam):
    """``Lambda``, ``Lambda^-1`` and ``mu`` of one run and action, by numpy."""
    Zk, yk = Z[run][A[run] == action], y[run][A[run] == action]
    Lam = Zk.T @ Zk + lam * np.eye(Z.shape[-1])
    return Lam, np.linalg.inv(Lam), np.linalg.solve(Lam, Zk.T @ yk)


@pytest.mark.parametrize("factor", [True, False])
@pytest.mark.parametrize("d", [7, 300])  # the batched and the in-place update
def test_rank_one_inverse_equals_the_direct_inverse_after_many_updates(factor, d):
    rng = np.random.default_rng(4)
    runs, actions, n, lam = 3, 4, 400 if d < 100 else 60, 0.25
    post = BayesLinearRegression(runs, actions, d, 6.0, 6.0, lam, torch.device("cpu"),
                                 factor=factor)
    Z = _sparse_contexts(rng, runs, n, d)
    Z[..., -1] = 1.0
    A = rng.integers(actions, size=(runs, n))
    y = Z[..., 0] - Z[..., 1] + rng.normal(size=(runs, n))
    for t in range(n):
        post.add(torch.as_tensor(Z[:, t]), torch.as_tensor(A[:, t]), torch.as_tensor(y[:, t]))
    inv, mu = post.inverse().numpy(), post.mean().numpy()
    if factor:  # U is upper triangular with a positive diagonal: L^-T of Lambda's Cholesky
        U = post.U.numpy()
        assert np.all(np.tril(U, -1) == 0) and np.all(np.diagonal(U, 0, -2, -1) > 0)
    for r in range(runs):
        for k in range(actions):
            Lam, inv_direct, mu_direct = _direct(Z, A, y, r, k, lam)
            np.testing.assert_allclose(inv[r, k], inv_direct, rtol=0,
                                       atol=1e-10 * np.abs(inv_direct).max())
            np.testing.assert_allclose(mu[r, k], mu_direct, rtol=1e-8, atol=1e-10)
            if factor:
                L = np.linalg.cholesky(Lam)
                np.testing.assert_allclose(U[r, k], np.linalg.inv(L).T, rtol=0,
                                           atol=1e-10 * np.abs(U[r, k]).max())


def test_inverse_factor_update_is_sherman_morrison_on_the_factor():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(3, 2, 6, 6, generator=g, dtype=torch.float64)
    M = X @ X.mT + torch.eye(6, dtype=torch.float64)  # precisions
    x = torch.randn(3, 2, 6, generator=g, dtype=torch.float64)
    U = torch.linalg.inv(torch.linalg.cholesky(M)).mT.contiguous()
    x_before = x.clone()
    inverse_factor_rank_one_update(U, x)
    assert torch.equal(x, x_before)
    expected = torch.linalg.inv(torch.linalg.cholesky(M + x.unsqueeze(-1) * x.unsqueeze(-2)))
    torch.testing.assert_close(U, expected.mT)
    S = torch.linalg.inv(M)
    inverse_rank_one_update(S, x)
    torch.testing.assert_close(S, torch.linalg.inv(M + x.unsqueeze(-1) * x.unsqueeze(-2)))


def test_cholesky_rank_one_updates_equal_a_fresh_cholesky_after_many():
    rng = np.random.default_rng(5)
    X = torch.as_tensor(_sparse_contexts(rng, 2, 3, 200, 40))  # (batch..., n, d)
    L = (0.5 * torch.eye(40, dtype=torch.float64)).repeat(2, 3, 1, 1)
    for t in range(200):
        cholesky_rank_one_update(L, X[:, :, t])
    expected = torch.linalg.cholesky(X.mT @ X + 0.25 * torch.eye(40, dtype=torch.float64))
    torch.testing.assert_close(L, expected, rtol=0, atol=1e-10 * expected.abs().max())


def _played(name, d, actions=3, runs=2, steps=150, seed=6):
    """An agent after ``steps`` random interactions, the data it saw and its buffer."""
    agent = make_agent(name, d, actions, runs, 0, AgentConfig(ucb_alpha=0.7))
    buf = ReplayBuffer(steps, runs, d)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        c = _sparse_contexts(rng, runs, d).astype(np.float32)
        a = agent.act(c)
        buf.add(c, a, c[:, 0] * (a.numpy() == 1) + rng.normal(size=runs))
        agent.update(buf)
    Z = np.concatenate([buf.contexts.numpy(), np.ones((runs, steps, 1))], -1)
    return agent, Z, buf.actions.numpy(), buf.rewards.numpy().astype(np.float64), buf


def test_linucb_widths_and_theta_equal_the_direct_formulas():
    d, runs, actions = 9, 2, 3
    agent, Z, A, y, _ = _played("linucb", d, actions, runs)
    post = agent.posterior
    assert post.U is None and post.S is not None  # A^-1 itself
    c = _sparse_contexts(np.random.default_rng(7), runs, d).astype(np.float32)
    z = np.concatenate([c, np.ones((runs, 1))], -1)
    width, theta = post.width(agent.features(c)).numpy(), post.mean().numpy()
    scores = np.empty((runs, actions))
    for r in range(runs):
        for k in range(actions):  # ridge 1: A = I + Z^T Z
            _, A_inv, theta_direct = _direct(Z, A, y, r, k, 1.0)
            np.testing.assert_allclose(theta[r, k], theta_direct, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(width[r, k], np.sqrt(z[r] @ A_inv @ z[r]), rtol=1e-9)
            scores[r, k] = theta_direct @ z[r] + 0.7 * np.sqrt(z[r] @ A_inv @ z[r])
    np.testing.assert_array_equal(agent.act(c).numpy(), scores.argmax(1))


def test_linfullpost_posterior_and_draws_equal_the_direct_ones():
    d, runs, actions = 8, 2, 3
    agent, Z, A, y, _ = _played("linfullpost", d, actions, runs)
    post, lam, a0, b0 = agent.posterior, 0.25, 6.0, 6.0
    mu, cov = post.mean(), post.inverse()
    a, b = post.inverse_gamma(mu)
    g = torch.Generator().manual_seed(1)
    gamma = torch.rand(runs, actions, generator=g, dtype=torch.float64) + 0.5
    normal = torch.randn(runs, actions, d + 1, generator=g, dtype=torch.float64)
    beta = post.sample(gamma, normal).numpy()
    for r in range(runs):
        for k in range(actions):
            Lam, Lam_inv, m = _direct(Z, A, y, r, k, lam)
            yk = y[r][A[r] == k]
            np.testing.assert_allclose(mu[r, k].numpy(), m, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(cov[r, k].numpy(), Lam_inv, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(float(a[r, k]), a0 + len(yk) / 2)
            b_direct = b0 + (yk @ yk - m @ Lam @ m) / 2
            np.testing.assert_allclose(float(b[r, k]), b_direct, rtol=1e-9)
            # the draw from the precision's Cholesky factor L: mu + sigma L^-T eps
            L = np.linalg.cholesky(Lam)
            sigma = np.sqrt(b_direct / float(gamma[r, k]))
            expected = m + sigma * np.linalg.solve(L.T, normal[r, k].numpy())
            np.testing.assert_allclose(beta[r, k], expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["linfullpost", "linucb"])
def test_a_state_of_the_precision_factor_loads_as_the_same_posterior(name):
    agent, *_ = _played(name, 6)
    post = agent.posterior
    old = {"L": post.L, "zty": post.zty, "yty": post.yty, "n": post.n}
    fresh = make_agent(name, 6, 3, 2, 0, AgentConfig()).posterior
    fresh.load_state_dict(old)
    torch.testing.assert_close(fresh.mean(), post.mean())
    torch.testing.assert_close(fresh.inverse(), post.inverse())


@pytest.mark.parametrize("name", ["linfullpost", "linucb"])
def test_state_dict_round_trip_continues_exactly(name):
    agent, *_, buf = _played(name, 300, steps=5)  # the in-place update
    copy = make_agent(name, 300, 3, 2, 0, AgentConfig(ucb_alpha=0.7))
    copy.load_state_dict(agent.state_dict())
    buf_copy = ReplayBuffer(5, 2, 300)
    buf_copy.load_state_dict(buf.state_dict())
    rng = np.random.default_rng(8)
    for _ in range(3):
        c = _sparse_contexts(rng, 2, 300).astype(np.float32)
        a = agent.act(c)
        assert torch.equal(a, copy.act(c))
        r = rng.normal(size=2)
        buf.add(c, a, r)
        buf_copy.add(c, a, r)
        agent.update(buf)
        copy.update(buf_copy)
    for k, v in agent.posterior.state_dict().items():
        assert torch.equal(v, copy.posterior.state_dict()[k]), k
    assert agent.posterior.n.sum() == 2 * 8  # the copy went on learning too


def test_bench_agents_per_step_times_every_agent_on_mnist_shaped_contexts(tmp_path):
    import pandas as pd

    from agents import SPECS
    from bandits.tools import bench

    out = tmp_path / "bench"
    assert bench.main(["--agents-per-step", "--runs", "1", "--updates", "1", "--rounds", "1",
                       "--out", str(out)]) == 0
    df = pd.read_csv(out / "agents_per_step.csv")
    assert list(df["agent"]) == list(SPECS)
    assert (df["context_dim"] == 784).all() and (df["actions"] == 10).all()
    assert (df["seconds_per_step"] > 0).all() and (df["seconds_act"] > 0).all()
    np.testing.assert_allclose(df["minutes_per_10000_steps"], df["seconds_per_step"] * 10000 / 60,
                               rtol=1e-3)
    assert (out / "agents_per_step.json").is_file() and not (out / "bench.csv").exists()


def test_bench_agents_per_step_under_the_papers_setup_projects_their_schedule(tmp_path):
    import json

    import pandas as pd

    from bandits.tools import bench

    out = tmp_path / "bench"
    assert bench.main(["--agents-per-step", "--papers-setup", "--runs", "1", "--updates", "1",
                       "--rounds", "1", "--out", str(out)]) == 0
    df = pd.read_csv(out / "agents_per_step.csv")
    meta = json.loads((out / "agents_per_step.json").read_text())
    assert meta["setup"] == "papers" and list(meta["left_out"]) == ["bbb-lrt"]
    timed = set(df["agent"])
    assert "bbb-lrt" not in timed and {"neuralucb", "neuralts", "linucb"} <= timed
    # 10,000 acts and 2,080 training calls (every round to 2,000, then every 100th)
    np.testing.assert_allclose(df["minutes_per_papers_run"],
                               (df["seconds_act"] * 10_000 + df["seconds_update"] * 2_080) / 60,
                               rtol=1e-4)
    with pytest.raises(SystemExit) as e:
        bench.main(["--papers-setup", "--out", str(tmp_path / "other")])
    assert e.value.code == 2
