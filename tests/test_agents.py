import numpy as np
import pytest
import torch

from agents import SPECS, AgentConfig, make_agent
from bandits.core.buffer import ReplayBuffer

D, A, R = 6, 3, 4


def _agent(name: str, seed=0, **kw):
    return make_agent(name, D, A, R, seed, AgentConfig(hidden=(16,), **kw))


@pytest.mark.parametrize("name", list(SPECS))
def test_act_returns_one_valid_action_per_run(name):
    agent = _agent(name)
    actions = agent.act(np.random.default_rng(0).random((R, D), dtype=np.float32))
    assert isinstance(actions, torch.Tensor) and actions.device == agent.device
    assert actions.shape == (R,) and actions.dtype == torch.int64
    assert ((0 <= actions) & (actions < A)).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thompson_sampling_untrained_picks_every_action_for_the_same_context(seed):
    # The default Mushroom-sized network: its untrained posterior samples disagree (one
    # sample per action; the default mean of two samples explores less, by design).
    agent = make_agent("bbb", 117, 2, 1, seed, AgentConfig(act_samples=1))
    context = np.random.default_rng(seed).integers(0, 2, (1, 117)).astype(np.float32)
    picks = [int(agent.act(context)[0]) for _ in range(300)]
    assert 0.05 < np.mean(picks) < 0.95


def test_two_act_samples_act_on_the_mean_of_two_weight_samples():
    assert AgentConfig().act_samples == 1  # plain Thompson sampling by default
    agent = _agent("bbb", act_samples=2)  # the paper's average, kept by its presets
    x = agent.all_action_inputs(np.ones((R, D), dtype=np.float32))
    eps = []
    original = agent.weight_noise
    agent.weight_noise = lambda: eps.append(original()) or eps[-1]
    actions = agent.act(np.ones((R, D), dtype=np.float32))
    assert len(eps) == 2
    with torch.no_grad():
        scores = sum(agent.model(x, agent.model.sample(e)).squeeze(-1) for e in eps)
    assert torch.equal(actions, scores.argmax(1))


def test_all_actions_of_one_call_are_scored_by_one_weight_sample():
    agent = _agent("bbb")
    x = agent.all_action_inputs(np.ones((R, D), dtype=np.float32))  # (R, A, D + A)
    assert x.shape == (R, A, D + A)
    # act draws one noise sample per run and scores every action with it: replaying
    # that draw reproduces the action, and the scores of one call come from one network.
    eps = []
    original = agent.weight_noise
    agent.weight_noise = lambda: eps.append(original()) or eps[-1]
    actions = agent.act(np.ones((R, D), dtype=np.float32))
    with torch.no_grad():
        scores = agent.model(x, agent.model.sample(eps[0])).squeeze(-1)  # (R, A)
    assert torch.equal(actions, scores.argmax(1))
    assert len(eps) == 1 and eps[0].shape == (R, agent.model.n_params)


def test_same_seed_same_actions_and_updates_different_seed_differs():
    def trajectory(seed):
        agent = _agent("bbb", seed=seed)
        buf = ReplayBuffer(32, R, D)
        rng = np.random.default_rng(1)
        out = []
        for _ in range(10):
            c = rng.random((R, D), dtype=np.float32)
            a = agent.act(c)
            buf.add(c, a, rng.normal(size=R))
            agent.update(buf)
            out.append(a.numpy())
        return np.stack(out), [p.detach().clone() for p in agent.model.parameters()]

    a1, p1 = trajectory(0)
    a2, p2 = trajectory(0)
    _, p3 = trajectory(1)
    assert np.array_equal(a1, a2)
    assert all(torch.equal(x, y) for x, y in zip(p1, p2))
    assert not torch.equal(p1[0], p3[0])


def test_act_never_learns():
    agent = _agent("bbb")
    before = [p.detach().clone() for p in agent.model.parameters()]
    for _ in range(5):
        agent.act(np.zeros((R, D), dtype=np.float32))
    assert all(torch.equal(b, p) for b, p in zip(before, agent.model.parameters()))


@pytest.mark.parametrize("name", ["bbb", "greedy"])
def test_update_fits_the_rewards(name):
    # reward = 3 * (action == 1), independent of the context: every run learns it.
    agent = make_agent(name, D, 2, R, 0, AgentConfig(hidden=(32,), lr=1e-2, noise_sigma=0.5))
    buf = ReplayBuffer(256, R, D)
    rng = np.random.default_rng(0)
    for _ in range(256):
        a = rng.integers(2, size=R)
        buf.add(rng.random((R, D), dtype=np.float32), a, 3.0 * a)
    loss = agent.update(buf, 400)
    assert loss.shape == (R,) and torch.isfinite(loss).all()
    x = agent.all_action_inputs(rng.random((R, D), dtype=np.float32))
    with torch.no_grad():
        pred = agent.model(x).squeeze(-1)  # (R, 2), the posterior mean for BBB
    torch.testing.assert_close(pred, torch.tensor([0.0, 3.0]).expand(R, 2), atol=0.5, rtol=0)


def test_epsilon_greedy_explores_at_its_rate():
    agent = make_agent("eps5", D, 2, 2000, 0, AgentConfig(hidden=(8,)))
    c = np.zeros((2000, D), dtype=np.float32)
    greedy = make_agent("greedy", D, 2, 2000, 0, AgentConfig(hidden=(8,)))
    greedy.model.load_state_dict(agent.model.state_dict())
    differs = (agent.act(c) != greedy.act(c)).double().mean().item()
    # explores with probability 0.05 and then picks the other action half the time
    assert 0.01 < differs < 0.05


def test_unknown_agent():
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        make_agent("nope", D, A, R, 0)


def test_update_needs_data():
    with pytest.raises(ValueError, match="empty replay buffer"):
        _agent("greedy").update(ReplayBuffer(8, R, D))


def test_kl_scale_seen_divides_by_every_interaction_seen():
    buf = ReplayBuffer(5, R, D)
    rng = np.random.default_rng(0)
    for _ in range(12):
        buf.add(rng.random((R, D), dtype=np.float32), np.zeros(R, dtype=np.int64), np.ones(R))
    assert int(buf.size) == 5 and int(buf.seen) == 12
    assert int(_agent("bbb").data_count(buf)) == 5
    assert int(_agent("bbb", kl_scale="seen").data_count(buf)) == 12
    restored = ReplayBuffer(5, R, D)
    restored.load_state_dict(buf.state_dict())
    assert int(restored.seen) == 12


def test_kl_scale_seen_changes_nothing_before_the_buffer_is_full(tmp_path):
    from bandits.run import main

    base = ["--env", "wheel", "--agent", "bbb", "--seeds", "2", "--hidden", "8",
            "--batch-size", "8", "--updates-per-step", "2", "--no-progress"]
    runs = {}
    for scale, size in (("buffer", 50), ("seen", 50), ("seen", 10), ("buffer", 10)):
        out = tmp_path / f"{scale}-{size}"
        assert main([*base, "--steps", "30", "--buffer-size", str(size), "--kl-scale", scale,
                     "--out", str(out)]) == 0
        runs[scale, size] = ((out / "metrics.csv").read_bytes()
                             + (out / "summary.csv").read_bytes())
    assert runs["buffer", 50] == runs["seen", 50]  # 30 items: the buffer holds them all
    assert runs["seen", 10] != runs["buffer", 10]  # the training loss tells them apart


def test_learned_noise_output_gradients_are_autograds():
    from agents.neural import gaussian_nll_output_grads

    torch.manual_seed(0)
    out = torch.randn(3, 7, 2, dtype=torch.float64, requires_grad=True)
    rewards = torch.randn(3, 7, dtype=torch.float64) * 5
    weights = torch.rand(3, 7, dtype=torch.float64)
    d_out, nll = gaussian_nll_output_grads(out.detach(), rewards, 0.1, weights)
    sigma = torch.nn.functional.softplus(out[..., 1]) + 0.1
    ref = (out[..., 0] - rewards).square() / (2 * sigma.square()) + sigma.log()
    (expected,) = torch.autograd.grad((weights * ref).mean(1).sum(), out)
    torch.testing.assert_close(d_out, expected)
    torch.testing.assert_close(nll, ref.detach())


@pytest.mark.parametrize("name", ["bbb", "bbb-lrt", "greedy", "dropout", "bootstrap"])
def test_learned_noise_averages_a_noisy_reward_and_fits_an_exact_one(name):
    # action 1 pays -35 or +5 at even odds (mean -15, spread 20), action 0 pays 0 exactly:
    # the learned noise is wide for action 1 and at its floor for action 0, and the
    # predicted mean of action 1 is near the average (BBB's complexity cost shrinks it a
    # little towards 0), never one outcome.
    agent = make_agent(name, D, 2, R, 0, AgentConfig(hidden=(32,), lr=1e-2, noise_sigma=0.1,
                                                     likelihood="learned", dropout=0.05))
    buf = ReplayBuffer(512, R, D)
    rng = np.random.default_rng(0)
    for _ in range(512):
        a = rng.integers(2, size=R)
        buf.add(rng.random((R, D), dtype=np.float32), a,
                np.where(a == 1, np.where(rng.random(R) < 0.5, -35.0, 5.0), 0.0))
    loss = agent.update(buf, 600)
    assert loss.shape == (R,) and torch.isfinite(loss).all()
    x = agent.all_action_inputs(rng.random((R, D), dtype=np.float32))
    x = x.repeat_interleave(agent.model.mu.shape[0] // R, dim=0)  # a bootstrap's heads
    with torch.no_grad():
        out = agent.model.apply_layers(x, agent.model.split(agent.model.mu))  # (R, 2, 2)
    assert out.shape[-1] == 2
    mean = out[..., 0].mean(0)
    sigma = torch.nn.functional.softplus(out[..., 1]).mean(0) + 0.1
    assert abs(float(mean[0])) < 1.0 and -20.0 < float(mean[1]) < -8.0
    assert float(sigma[0]) < 1.0 and 12.0 < float(sigma[1]) < 30.0


def test_the_fixed_likelihood_has_one_output_and_an_unknown_one_is_refused():
    assert _agent("greedy").model(_agent("greedy").all_action_inputs(
        np.ones((R, D), dtype=np.float32))).shape == (R, A, 1)
    with pytest.raises(ValueError, match="likelihood"):
        _agent("greedy", likelihood="student")


def test_weight_decay_shrinks_a_point_estimate_network_and_leaves_bbb_alone():
    buf = ReplayBuffer(64, R, D)
    rng = np.random.default_rng(0)
    for _ in range(64):
        buf.add(rng.random((R, D), dtype=np.float32), rng.integers(A, size=R), np.zeros(R))
    for name, decayed in (("greedy", True), ("bbb", False)):
        plain, decay = _agent(name), _agent(name, weight_decay=1.0)
        assert isinstance(decay.optimizer, torch.optim.AdamW) == decayed
        plain.update(buf, 50)
        decay.update(buf, 50)
        shrunk = decay.model.mu.norm() < plain.model.mu.norm() - 1e-3
        assert shrunk == decayed


def test_every_agent_is_declared_once_by_its_own_module_and_read_from_its_spec():
    import agents
    from bandits.records import figures
    from bandits.simulator import parallel, settings

    for name, spec in agents.SPECS.items():
        assert spec.name == name and issubclass(spec.cls, agents.Agent)
        assert spec.cls.__module__ == f"agents.{spec.cls.__module__.rsplit('.', 1)[-1]}"
        assert figures.COLORS[name] == spec.color and figures.LABELS[name] == spec.label
    # the workers balance by each spec's cost; the memory estimate counts its networks
    assert parallel.assign(["bootstrap", "greedy", "eps1"], 2) == [
        ["bootstrap"], ["greedy", "eps1"]]
    cfg = settings.config_from({"agent": ["bootstrap"], "heads": 10, "steps": 10})
    one = settings.config_from({"agent": ["greedy"], "steps": 10})
    assert settings.memory_estimate(cfg) > settings.memory_estimate(one)
