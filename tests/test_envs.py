"""Both bandit envs through Gymnasium: registration, the env checker, seeding, common random
numbers and the ground truth in ``info``. Env-specific tests: test_mushroom.py, test_wheel.py;
the vectorised form: test_vector_env.py."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.core import BLOCK_SIZE

INFO_KEYS = {"oracle_reward", "expected_rewards", "optimal_action", "regret", "expected_regret"}
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["mushroom", "wheel"])
def env_spec(request) -> tuple[str, dict]:
    """(registered id, make kwargs) of each env; the mushroom needs the real data."""
    if request.param == "mushroom":
        return envs.ENV_IDS["mushroom"], {"data_dir": request.getfixturevalue("mushroom_data_dir")}
    return envs.ENV_IDS["wheel"], {}


def rollout(env: gymnasium.Env, seed: int, actions: np.ndarray) -> dict[str, list]:
    """Reset with ``seed``, play ``actions``; every obs, reward and info."""
    obs, _ = env.reset(seed=seed)
    out: dict[str, list] = {"obs": [obs], "reward": [], "info": []}
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        assert terminated is False and truncated is False
        out["obs"].append(obs)
        out["reward"].append(reward)
        out["info"].append(info)
    return out


def test_import_registers_ids_without_loading_anything():
    code = (
        "import sys, gymnasium, envs; "
        "assert {'bandits/Mushroom-v0', 'bandits/Wheel-v0'} <= set(gymnasium.registry); "
        "heavy = [m for m in ('envs.core', 'envs.mushroom', 'envs.wheel', 'bandits.core.data', "
        "'envs.classification', 'bandits.core.idx', "
        "'torch') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_env_id_accepts_short_names_and_ids():
    assert envs.env_id("mushroom") == "bandits/Mushroom-v0"
    assert envs.env_id("Wheel") == "bandits/Wheel-v0"
    assert envs.env_id("bandits/Wheel-v0") == "bandits/Wheel-v0"
    with pytest.raises(ValueError, match="unknown environment 'cartpole'.*mushroom"):
        envs.env_id("cartpole")


def test_check_env_passes_unwrapped_and_via_make(env_spec):
    env_id, kwargs = env_spec
    env = gymnasium.make(env_id, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker reports problems as warnings
        check_env(env.unwrapped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Checking a wrapped env warns that it is wrapped; nothing else may be reported.
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(env)


def test_spaces_and_docstring_spec(env_spec):
    env_id, kwargs = env_spec
    env = gymnasium.make(env_id, **kwargs)
    n, d = {"bandits/Mushroom-v0": (2, 117), "bandits/Wheel-v0": (5, 2)}[env_id]
    assert env.action_space == gymnasium.spaces.Discrete(n)
    assert env.observation_space.shape == (d,)
    assert env.observation_space.dtype == np.float32
    doc = type(env.unwrapped).__doc__
    for section in ("Description", "Action Space", "Observation Space", "Rewards",
                    "Episode End", "Arguments", "Version History"):  # fmt: skip
        assert f"## {section}" in doc


def test_same_seed_gives_identical_trajectories(env_spec):
    env_id, kwargs = env_spec
    n = gymnasium.make(env_id, **kwargs).action_space.n
    actions = np.random.default_rng(0).integers(0, n, BLOCK_SIZE + 50)  # crosses a block
    a = rollout(gymnasium.make(env_id, **kwargs), 42, actions)
    b = rollout(gymnasium.make(env_id, **kwargs), 42, actions)
    np.testing.assert_array_equal(a["obs"], b["obs"])
    np.testing.assert_array_equal(a["reward"], b["reward"])
    for ia, ib in zip(a["info"], b["info"]):
        assert ia.keys() == ib.keys()
        for k in ia:
            np.testing.assert_array_equal(ia[k], ib[k])
    c = rollout(gymnasium.make(env_id, **kwargs), 43, actions)
    assert not np.array_equal(a["obs"], c["obs"])


def test_different_actions_see_identical_contexts_and_draws(env_spec):
    """Common random numbers: the draws do not depend on the actions taken."""
    env_id, kwargs = env_spec
    n = gymnasium.make(env_id, **kwargs).action_space.n
    steps = BLOCK_SIZE + 50
    # One env per constant arm, plus one acting at random: all reset with the same seed.
    runs = [rollout(gymnasium.make(env_id, **kwargs), 7, np.full(steps, k)) for k in range(n)]
    random_actions = np.random.default_rng(1).integers(0, n, steps)
    runs.append(rollout(gymnasium.make(env_id, **kwargs), 7, random_actions))
    for run in runs[1:]:
        np.testing.assert_array_equal(run["obs"], runs[0]["obs"])
        for key in ("oracle_reward", "expected_rewards", "optimal_action"):
            np.testing.assert_array_equal(
                [i[key] for i in run["info"]], [i[key] for i in runs[0]["info"]]
            )
    realised = np.array([run["reward"] for run in runs[:n]]).T  # (steps, arms): every arm's draw
    np.testing.assert_array_equal(runs[-1]["reward"], realised[np.arange(steps), random_actions])
    # The oracle reward is the optimal arm's realised reward under the same draws.
    optimal = np.array([i["optimal_action"] for i in runs[0]["info"]])
    oracle = np.array([i["oracle_reward"] for i in runs[0]["info"]])
    np.testing.assert_array_equal(oracle, realised[np.arange(steps), optimal])


def test_info_ground_truth_is_consistent(env_spec):
    env_id, kwargs = env_spec
    env = gymnasium.make(env_id, **kwargs)
    n = env.action_space.n
    _, info0 = env.reset(seed=3)
    assert info0 == {}
    for a in np.random.default_rng(2).integers(0, n, 500):
        _, reward, _, _, info = env.step(a)
        assert INFO_KEYS <= info.keys()
        exp = info["expected_rewards"]
        assert exp.shape == (n,) and exp.dtype == np.float64
        assert info["optimal_action"] == int(np.argmax(exp))
        assert info["regret"] == pytest.approx(info["oracle_reward"] - reward, abs=0)
        assert info["expected_regret"] == exp[info["optimal_action"]] - exp[a]
        assert info["expected_regret"] >= 0
        assert isinstance(reward, float)


def test_optimal_action_has_zero_regret(env_spec):
    """A second env (same seed, same draws) plays the optimal arm the first one reveals."""
    env_id, kwargs = env_spec
    scout, player = gymnasium.make(env_id, **kwargs), gymnasium.make(env_id, **kwargs)
    scout.reset(seed=11)
    player.reset(seed=11)
    for _ in range(300):
        *_, info = scout.step(0)
        _, reward, _, _, played = player.step(info["optimal_action"])
        assert played["expected_regret"] == 0.0
        assert played["regret"] == 0.0
        assert reward == info["oracle_reward"]


def test_step_checks_its_input(env_spec):
    env_id, kwargs = env_spec
    env = gymnasium.make(env_id, **kwargs).unwrapped
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step(0)
    env.reset(seed=0)
    n = env.action_space.n
    for bad in (n, -1, 0.5, "1"):
        with pytest.raises(ValueError, match="invalid action"):
            env.step(bad)
    env.step(np.int64(n - 1))  # numpy integers are fine


def test_reset_without_seed_continues_the_generator(env_spec):
    env_id, kwargs = env_spec
    a, b = gymnasium.make(env_id, **kwargs), gymnasium.make(env_id, **kwargs)
    first_a, _ = a.reset(seed=5)
    b.reset(seed=5)
    second_a, _ = a.reset()
    np.testing.assert_array_equal(second_a, b.reset()[0])  # deterministic given the seed
    assert not np.array_equal(first_a, second_a)


def test_max_episode_steps_sets_the_horizon():
    env = gymnasium.make("bandits/Wheel-v0", max_episode_steps=3)
    env.reset(seed=0)
    truncated = [env.step(0)[3] for _ in range(3)]
    assert truncated == [False, False, True]


def test_render_modes_are_rejected():
    with (
        pytest.warns(UserWarning, match="not in the possible render_modes"),
        pytest.raises(ValueError, match="no render modes"),
    ):
        gymnasium.make("bandits/Wheel-v0", render_mode="human")


def test_the_registrys_views_follow_its_specs():
    import envs

    for name, spec in envs.SPECS.items():
        assert envs.ENV_IDS[name] == spec.id and envs.SHAPES[name] == spec.shape
    assert list(envs.ENV_IDS) == list(envs.SHAPES) == list(envs.SPECS)
    # registered on import (a test may have registered data sets of its own since)
    assert envs.BUILT_IN == {"mushroom", "wheel", "mushroom-classes", "mnist"} <= set(envs.SPECS)
    assert {n: envs.SPECS[n].dataset for n in envs.BUILT_IN if envs.SPECS[n].dataset} == {
        "mushroom-classes": "mushroom", "mnist": "mnist"}
    with pytest.raises(TypeError):  # views: written only through the registry
        envs.SHAPES["mnist"] = (1, 2)
    # only Mushroom names the item shown and has the memorisation record
    assert [n for n, s in envs.SPECS.items() if s.item_key] == ["mushroom"]
    assert [n for n, s in envs.SPECS.items() if s.memorisation] == ["mushroom"]
