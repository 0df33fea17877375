"""The flat population network and the fused training step against the library's layers."""

import numpy as np
import pytest
import torch

from agents import AgentConfig, make_agent, make_agents
from bandits.bayes import FlatMLP, GaussianPrior, ScaleMixturePrior, make_mlp
from bandits.bayes.flat import ArmGroups, block_outer_sums
from bandits.core.buffer import ReplayBuffer

D, A, R = 5, 3, 4


def _layer_eps(flat_model: FlatMLP, eps: torch.Tensor):
    return [(w.clone(), b.clone()) for w, b in flat_model.split(eps)]


@pytest.mark.parametrize("prior", [ScaleMixturePrior(0.5, 1.0, np.exp(-6)), GaussianPrior(0.7)])
def test_flat_forward_and_bbb_gradients_equal_the_library_layers(prior):
    torch.manual_seed(0)
    lib = make_mlp(D + A, [7, 6], 1, runs=R, prior=prior, init_sigma=0.05)
    flat = FlatMLP([lib])
    x = torch.randn(R, 9, D + A)
    y = torch.randn(R, 9)
    eps = torch.randn(R, flat.n_params)
    n = 37.0
    # library: held noise, autograd through the layers and the complexity cost
    with lib.sampling("held"):
        for layer, (ew, eb) in zip(lib.bayes_layers(), _layer_eps(flat, eps)):
            layer.resample(ew, eb)
        pred = lib(x).squeeze(-1)
        torch.testing.assert_close(pred, flat(x, flat.sample(eps)).squeeze(-1))
        nll = 0.5 / 0.1**2 * ((y - pred) ** 2).mean(1)
        loss = (lib.complexity_cost("mc") / n + nll).sum()
    grads = torch.autograd.grad(loss, [p for layer in lib.layers
                                       for p in (layer.weight_mu, layer.bias_mu,
                                                 layer.weight_rho, layer.bias_rho)])
    # the agent's fused step on the same noise
    agent = make_agent("bbb", D, A, R, 0, AgentConfig(hidden=(7, 6)))
    agent.model = flat
    agent.weight_noise = lambda: eps
    (g_mu, g_rho), step_loss = agent.gradients(x, y, torch.tensor(n), want_loss=True)
    expect_mu = torch.cat([torch.cat([gw.reshape(R, -1), gb], 1)
                           for gw, gb in zip(grads[0::4], grads[1::4])], 1)
    expect_rho = torch.cat([torch.cat([gw.reshape(R, -1), gb], 1)
                            for gw, gb in zip(grads[2::4], grads[3::4])], 1)
    torch.testing.assert_close(g_mu, expect_mu, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(g_rho, expect_rho, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(step_loss.sum(), loss.detach(), rtol=1e-5, atol=1e-3)


def test_greedy_gradients_equal_autograd():
    torch.manual_seed(1)
    lib = make_mlp(D + A, [8], 1, runs=R, bayesian=False)
    flat = FlatMLP([lib])
    x, y = torch.randn(R, 10, D + A), torch.randn(R, 10)
    loss = ((y - lib(x).squeeze(-1)) ** 2).mean(1).sum()
    grads = torch.autograd.grad(loss, list(lib.parameters()))
    agent = make_agent("greedy", D, A, R, 0, AgentConfig(hidden=(8,)))
    agent.model = flat
    (g,), step_loss = agent.gradients(x, y, torch.tensor(10.0), want_loss=True)
    expect = torch.cat([torch.cat([grads[0].reshape(R, -1), grads[1]], 1),
                        torch.cat([grads[2].reshape(R, -1), grads[3]], 1)], 1)
    torch.testing.assert_close(g, expect)
    torch.testing.assert_close(step_loss.sum(), loss.detach())


def test_flat_mlp_rejects_what_it_cannot_hold():
    with pytest.raises(ValueError, match="BayesLinear or of RunsLinear"):
        FlatMLP([make_mlp(3, [4], 1, runs=2), make_mlp(3, [4], 1, runs=2, bayesian=False)])
    with pytest.raises(ValueError, match="ReLU"):
        FlatMLP([make_mlp(3, [4], 1, runs=2, activation="tanh")])
    with pytest.raises(ValueError, match="runs dimension"):
        FlatMLP([make_mlp(3, [4], 1)])


def test_a_run_builds_one_agent_per_name():
    # neighbour-free agents: even agents that train alike are built each on its own
    pops = make_agents(["eps5", "bbb", "greedy", "uniform", "eps1"], D, A, R,
                       lambda n: 0, AgentConfig(hidden=(4,)))
    assert [p.name for p in pops] == ["eps5", "bbb", "greedy", "uniform", "eps1"]
    assert all(p.runs == R for p in pops)


@pytest.mark.slow
def test_compiled_bbb_step_equals_the_eager_step():
    # torch.compile fuses the per-weight work (the GPU path); on the CPU it must give the
    # eager step's numbers up to float rounding.
    def train(compile):
        agent = make_agent("bbb", D, A, R, 0, AgentConfig(hidden=(16,), batch_size=8),
                           compile=compile)
        buf = ReplayBuffer(32, R, D)
        rng = np.random.default_rng(0)
        for _ in range(4):
            c = rng.random((R, D), dtype=np.float32)
            buf.add(c, agent.act(c), rng.normal(size=R))
            loss = agent.update(buf, 3)
        return loss, [p.detach() for p in agent.model.parameters()]

    eager_loss, eager = train(False)
    compiled_loss, compiled = train(True)
    torch.testing.assert_close(compiled_loss, eager_loss, rtol=1e-5, atol=1e-5)
    for a, b in zip(eager, compiled):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_dropout_gradients_equal_autograd_with_the_same_masks():
    torch.manual_seed(2)
    lib = make_mlp(D + A, [8, 6], 1, runs=R, bayesian=False)
    flat = FlatMLP([lib])
    x, y = torch.randn(R, 10, D + A), torch.randn(R, 10)
    masks = [(torch.rand(R, 10, h) > 0.3).float() / 0.7 for h in (8, 6)]
    h = x
    for k, layer in enumerate(lib.layers):
        h = layer(h)
        if k < 2:
            h = torch.relu(h) * masks[k]
    loss = ((y - h.squeeze(-1)) ** 2).mean(1).sum()
    grads = torch.autograd.grad(loss, list(lib.parameters()))
    agent = make_agent("dropout", D, A, R, 0, AgentConfig(hidden=(8, 6)))
    agent.model = flat
    agent.masks = lambda rows: masks
    (g,), step_loss = agent.gradients(x, y, torch.tensor(10.0), want_loss=True)
    expect = torch.cat([torch.cat([gw.reshape(R, -1), gb], 1)
                        for gw, gb in zip(grads[0::2], grads[1::2])], 1)
    torch.testing.assert_close(g, expect)
    torch.testing.assert_close(step_loss.sum(), loss.detach())


def test_dropout_acts_with_one_mask_per_run():
    agent = make_agent("dropout", D, A, R, 0, AgentConfig(hidden=(16,), dropout=0.5))
    drawn = []
    original = agent.masks
    agent.masks = lambda rows: drawn.append(original(rows)) or drawn[-1]
    actions = agent.act(np.ones((R, D), dtype=np.float32))
    assert len(drawn) == 1 and drawn[0][0].shape == (R, 1, 16)  # one mask for all actions
    m = agent.model
    x = agent.all_action_inputs(np.ones((R, D), dtype=np.float32))
    scores = m.apply_layers(x, m.split(m.mu), masks=drawn[0]).squeeze(-1)
    assert torch.equal(actions, scores.argmax(1))
    assert set(drawn[0][0].unique().tolist()) <= {0.0, 2.0}


def test_bootstrap_weights_each_network_by_its_own_resample():
    agent = make_agent("bootstrap", D, A, R, 0, AgentConfig(hidden=(8,), heads=3, batch_size=4))
    buf = ReplayBuffer(64, R, D)
    rng = np.random.default_rng(0)
    for _ in range(64):
        c = rng.random((R, D), dtype=np.float32)
        buf.add(c, agent.act(c), rng.normal(size=R))
    agent._add_weights(buf)
    w = agent.weights  # (R, heads, capacity), Poisson(1)
    assert w.shape == (R, 3, 64) and abs(w.mean().item() - 1.0) < 0.2
    assert not torch.equal(w[:, 0], w[:, 1])  # the heads resample independently
    # the weighted gradient of one network equals autograd's on its weighted loss
    x, y = torch.randn(R * 3, 4, D + A), torch.randn(R * 3, 4)
    weights = torch.poisson(torch.ones(R * 3, 4))
    (g,), _ = agent.squared_error_gradients(x, y, want_loss=False, weights=weights)
    mu = agent.model.mu.detach().clone().requires_grad_()
    pred = agent.model.apply_layers(x, agent.model.split(mu)).squeeze(-1)
    (gmu,) = torch.autograd.grad((weights * (y - pred) ** 2).mean(1).sum(), mu)
    torch.testing.assert_close(g, gmu)
    loss = agent.update(buf, 2)
    assert loss.shape == (R,) and torch.isfinite(loss).all()


def test_lrt_preactivations_have_the_moments_of_sampled_weights():
    agent = make_agent("bbb", D, A, 1, 0, AgentConfig(hidden=(4,), init_sigma=0.3, lrt=True))
    m = agent.model
    x = torch.randn(1, 1, D + A).expand(1, 20000, D + A)  # one input, many draws
    lrt = agent.lrt_forward(x, m.mu, m.rho)[0, :, 0]
    eps = torch.randn(20000, m.n_params)
    sampled = torch.stack([m(x[:, :1], m.sample(e.unsqueeze(0)))[0, 0, 0] for e in eps[:4000]])
    # the output layer's input is a relu of Gaussians in both; compare the output moments
    se = sampled.std() / 4000**0.5
    assert abs(lrt.mean() - sampled.mean()) < 5 * se
    assert abs(lrt.std() / sampled.std() - 1) < 0.1


def test_lrt_gradient_tends_to_the_weight_sample_gradient_as_sigma_vanishes():
    cfg = dict(hidden=(8,), init_sigma=1e-6)
    lrt = make_agent("bbb", D, A, R, 0, AgentConfig(**cfg, lrt=True))
    plain = make_agent("bbb", D, A, R, 0, AgentConfig(**cfg))
    x, y = torch.randn(R, 16, D + A), torch.randn(R, 16)
    n = torch.tensor(1e12)  # no complexity cost to speak of
    (g_lrt, _), _ = lrt.gradients(x, y, n, False)
    (g_plain, _), _ = plain.gradients(x, y, n, False)
    torch.testing.assert_close(g_lrt, g_plain, rtol=1e-3, atol=1e-4)


def test_the_per_arm_block_layer_equals_the_dense_disjoint_layer():
    # x_a = (0, ..., x, ..., 0) through a dense first layer (h, d K), against the blocks
    # W_a (h, d) on the context and a one-hot of the arm: outputs and gradients agree
    d, k, h, runs, n = 3, 4, 5, 2, 7
    torch.manual_seed(0)
    nets = [make_mlp(d * k, [h, 6], 1, runs=runs, bayesian=False)]
    dense, blocks = FlatMLP(nets), FlatMLP(nets, arms=k)
    assert blocks.n_params == dense.n_params and blocks.in_features == d + k
    x = torch.randn(runs, n, d)
    arm = torch.randint(k, (runs, n))
    onehot = torch.nn.functional.one_hot(arm, k).float()
    disjoint = (onehot.unsqueeze(-1) * x.unsqueeze(2)).reshape(runs, n, d * k)
    kept_dense, kept_blocks = [], []
    with torch.no_grad():  # the hand-written backward, as the agents call it
        out_dense = dense.apply_layers(disjoint, dense.split(dense.mu), kept_dense)
        out_blocks = blocks.apply_layers(torch.cat([x, onehot], -1), blocks.split(blocks.mu),
                                         kept_blocks)
        torch.testing.assert_close(out_blocks, out_dense)
        d_out = torch.randn_like(out_dense)
        g_dense = dense.backward(kept_dense, dense.mu, d_out, torch.empty_like(dense.mu))
        g_blocks = blocks.backward(kept_blocks, blocks.mu, d_out, torch.empty_like(blocks.mu))
    (w_dense, b_dense), *rest_dense = dense.split(g_dense)
    (w_blocks, b_blocks), *rest_blocks = blocks.split(g_blocks)
    torch.testing.assert_close(w_blocks, w_dense.view(runs, h, k, d).transpose(1, 2)
                               .reshape(runs, k * h, d))
    torch.testing.assert_close(b_blocks, b_dense)
    for (w1, b1), (w2, b2) in zip(rest_blocks, rest_dense):
        torch.testing.assert_close(w1, w2)
        torch.testing.assert_close(b1, b2)
    # autograd through the blocks (the Bayesian agents' path) gives the same gradient
    mu = blocks.mu.detach().clone().requires_grad_(True)
    out = blocks.apply_layers(torch.cat([x, onehot], -1), blocks.split(mu))
    (grad,) = torch.autograd.grad((out * d_out).sum(), [mu])
    torch.testing.assert_close(grad, g_blocks)


@pytest.mark.parametrize("rows", [0, 1, 9])
def test_the_grouped_blocks_equal_every_block_on_every_row(rows):
    # the host's grouped path (rows padded per arm) against the dense one (every block on
    # every row, the row's one picked), with an arm that has no rows
    runs, k, h, d = 3, 4, 5, 6
    torch.manual_seed(1)
    net = FlatMLP([make_mlp(d * k, [h], 1, runs=runs, bayesian=False)], arms=k)
    (w, _), _ = net.split(net.mu)
    x = torch.randn(runs, rows, d)
    onehot = torch.nn.functional.one_hot(torch.randint(k - 1, (runs, rows)), k).float()
    every = torch.bmm(x, w.transpose(1, 2)).view(runs, rows, k, h)
    dense = (every * onehot.unsqueeze(-1)).sum(2)
    with torch.no_grad():
        torch.testing.assert_close(net.blocks(w, x, onehot), dense)
        u = torch.randn(runs, rows, h)
        sums = block_outer_sums(u, x, ArmGroups(onehot), torch.full_like(w, float("nan")))
    spread = (u.unsqueeze(2) * onehot.unsqueeze(-1)).flatten(2)  # (R, N, K h)
    torch.testing.assert_close(sums, torch.bmm(spread.transpose(1, 2), x))
    assert (sums.view(runs, k, h, d)[:, k - 1] == 0).all()  # the arm without rows


@pytest.mark.parametrize("arms", [0, 3])
def test_the_weighted_square_norms_are_those_of_each_rows_gradient(arms):
    runs, d, n = 2, 4, 5
    torch.manual_seed(2)
    net = FlatMLP([make_mlp(d * (arms or 1), [6, 3], 2, runs=runs, bayesian=False)], arms=arms)
    x = torch.rand(runs, n, d)
    if arms:
        x = torch.cat([x, torch.nn.functional.one_hot(torch.randint(arms, (runs, n)), arms)
                       .float()], -1)
    weights = torch.rand_like(net.mu)
    d_out = torch.randn(runs, n, 2)
    kept: list = []
    with torch.no_grad():
        net.apply_layers(x, net.split(net.mu), kept)
        norms = net.weighted_square_norms(kept, net.mu, d_out, weights)
        for i in range(n):  # each row's gradient alone, by the hand-written backward
            g = net.backward([t[:, i:i + 1] for t in kept], net.mu, d_out[:, i:i + 1],
                             torch.empty_like(net.mu))
            torch.testing.assert_close(norms[:, i], (weights * g.square()).sum(-1))
