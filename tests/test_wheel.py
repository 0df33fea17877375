"""The wheel bandit (Riquelme et al. 2018): contexts, arms, noise and optimal arms."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import envs
from envs.wheel import WheelProblem, quadrant_arm


def play(num_envs: int, steps: int, seed: int = 0, **kwargs) -> dict[str, np.ndarray]:
    """Contexts, actions (cycling over the arms), rewards and info of a vectorised run."""
    venv = envs.make_vec("wheel", num_envs, **kwargs)
    obs, _ = venv.reset(seed=seed)
    out: dict[str, list] = {"context": [], "action": [], "reward": [], "info": []}
    for t in range(steps):
        actions = (np.arange(num_envs) + t) % 5
        next_obs, reward, _, _, info = venv.step(actions)
        out["context"].append(obs)
        out["action"].append(actions)
        out["reward"].append(reward)
        out["info"].append(info)
        obs = next_obs
    res = {k: np.concatenate(out[k]) for k in ("context", "action", "reward")}
    for key in out["info"][0]:
        res[key] = np.concatenate([i[key] for i in out["info"]])
    return res


@pytest.fixture(scope="module")
def run() -> dict[str, np.ndarray]:
    return play(10, 2000)  # 20000 rounds, default parameters


def test_contexts_are_uniform_in_the_unit_disc(run):
    c = run["context"].astype(np.float64)
    r2 = (c**2).sum(axis=1)
    assert r2.max() <= 1.0
    assert abs(r2.mean() - 0.5) < 0.01  # |c|^2 is uniform on [0, 1]
    assert abs(np.mean(r2 > 0.95**2) - (1 - 0.95**2)) < 0.01  # the outer ring's share
    quadrant = quadrant_arm(c[:, 0], c[:, 1])
    np.testing.assert_allclose(np.bincount(quadrant, minlength=5)[1:] / len(c), 0.25, atol=0.015)


def test_means_optimal_arms_and_noise(run):
    c = run["context"].astype(np.float64)
    outer = np.hypot(c[:, 0], c[:, 1]) > 0.95
    quadrant = quadrant_arm(c[:, 0], c[:, 1])
    expected = np.full((len(c), 5), 1.0)
    expected[:, 0] = 1.2
    expected[np.flatnonzero(outer), quadrant[outer]] = 50.0
    np.testing.assert_array_equal(run["expected_rewards"], expected)
    np.testing.assert_array_equal(run["optimal_action"], np.where(outer, quadrant, 0))
    rows = np.arange(len(c))
    noise = run["reward"] - expected[rows, run["action"]]
    assert abs(noise.mean()) < 0.01 * 5 / np.sqrt(len(c))
    assert abs(noise.std() / 0.01 - 1) < 0.03  # sigma = 0.01, 20000 draws
    np.testing.assert_array_equal(
        run["expected_regret"],
        expected[rows, run["optimal_action"]] - expected[rows, run["action"]],
    )
    np.testing.assert_array_equal(run["regret"], run["oracle_reward"] - run["reward"])


@pytest.mark.parametrize(
    ("x", "y", "arm"),
    [(0.7, 0.7, 1), (0.7, -0.7, 2), (-0.7, 0.7, 3), (-0.7, -0.7, 4), (0.0, 0.97, 3),
     (0.97, 0.0, 2), (0.1, 0.2, 0), (-0.6, -0.6, 0)],
)  # fmt: skip
def test_quadrant_mapping(x, y, arm):
    """Beyond delta the quadrant's arm pays mu_3; inside, arm 0 is best."""
    problem = WheelProblem(delta=0.9, sigma=0.0)
    rounds = {"context": np.array([[x, y]], np.float32), "noise": np.ones((1, 5))}
    realised, expected = problem.rewards(rounds)
    np.testing.assert_array_equal(realised, expected)  # sigma = 0: no noise
    assert int(np.argmax(expected[0])) == arm
    assert expected[0, arm] == (50.0 if arm else 1.2)


def test_parameters_are_arguments():
    res = play(4, 300, delta=0.5, sigma=0.0, mu_1=2.0, mu_2=0.0, mu_3=10.0)
    c = res["context"].astype(np.float64)
    outer = np.hypot(c[:, 0], c[:, 1]) > 0.5
    assert 0.6 < outer.mean() < 0.9  # 1 - 0.5^2 = 0.75
    np.testing.assert_array_equal(res["oracle_reward"], np.where(outer, 10.0, 2.0))
    assert set(np.unique(res["reward"])) == {0.0, 2.0, 10.0}


@pytest.mark.parametrize("kwargs", [{"delta": 1.5}, {"delta": -0.1}, {"sigma": -1.0},
                                    {"sigma": float("nan")}, {"mu_3": float("inf")}])  # fmt: skip
def test_bad_parameters_are_rejected(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        gymnasium.make("bandits/Wheel-v0", **kwargs)
