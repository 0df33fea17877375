"""The vectorised envs: spaces, shapes, info, and copy i == the single env seeded s + i."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import VectorEnv

import envs
from envs.core import BLOCK_SIZE
from envs.vector import BanditVectorEnv

INFO_KEYS = {"oracle_reward", "expected_rewards", "optimal_action", "regret", "expected_regret"}


@pytest.fixture(params=["mushroom", "wheel"])
def vec_spec(request) -> tuple[str, dict]:
    """(short name, kwargs) of each env; the mushroom needs the real data."""
    if request.param == "mushroom":
        return "mushroom", {"data_dir": request.getfixturevalue("mushroom_data_dir")}
    return "wheel", {}


def test_spaces_and_types(vec_spec):
    name, kwargs = vec_spec
    venv = envs.make_vec(name, 3, **kwargs)
    single = gymnasium.make(envs.ENV_IDS[name], **kwargs)
    assert isinstance(venv, BanditVectorEnv) and isinstance(venv, VectorEnv)
    assert venv.num_envs == 3
    assert venv.spec is not None and venv.spec.id == envs.ENV_IDS[name]
    assert venv.single_observation_space == single.observation_space
    assert venv.single_action_space == single.action_space
    d, n = single.observation_space.shape[0], single.action_space.n
    assert venv.observation_space.shape == (3, d)
    assert venv.action_space == gymnasium.spaces.MultiDiscrete([n] * 3)


def test_step_shapes_and_info(vec_spec):
    name, kwargs = vec_spec
    r = 4
    venv = envs.make_vec(name, r, **kwargs)
    obs, info = venv.reset(seed=0)
    assert info == {}
    assert obs.shape == venv.observation_space.shape and obs.dtype == np.float32
    assert obs in venv.observation_space
    n = venv.single_action_space.n
    obs, rewards, terminated, truncated, info = venv.step(np.arange(r) % n)
    assert obs.shape == venv.observation_space.shape and obs.dtype == np.float32
    assert rewards.shape == (r,) and rewards.dtype == np.float64
    for flags in (terminated, truncated):
        assert flags.shape == (r,) and flags.dtype == bool and not flags.any()
    expected_keys = INFO_KEYS | ({"edible", "mushroom"} if name == "mushroom" else set())
    assert set(info) == expected_keys
    for key, value in info.items():
        assert isinstance(value, np.ndarray) and value.shape[0] == r, key
    assert info["expected_rewards"].shape == (r, n)
    assert info["optimal_action"].dtype.kind == "i"
    if name == "mushroom":
        assert info["edible"].dtype == bool


@pytest.mark.parametrize("seed", [7, [3, 100, 5]])
def test_each_copy_is_the_single_env_seeded_s_plus_i(vec_spec, seed):
    """Over more than one block, with per-copy actions: exactly the same numbers."""
    name, kwargs = vec_spec
    r, steps = 3, BLOCK_SIZE + 40
    seeds = [seed + i for i in range(r)] if isinstance(seed, int) else seed
    venv = envs.make_vec(name, r, **kwargs)
    n = venv.single_action_space.n
    actions = np.random.default_rng(0).integers(0, n, (steps, r))
    obs, _ = venv.reset(seed=seed)
    vec = {"obs": [obs], "reward": [], "info": []}
    for a in actions:
        obs, reward, _, _, info = venv.step(a)
        vec["obs"].append(obs)
        vec["reward"].append(reward)
        vec["info"].append(info)
    vec_obs = np.stack(vec["obs"])  # (steps + 1, R, d)
    vec_rewards = np.stack(vec["reward"])  # (steps, R)
    vec_info = {k: np.stack([i[k] for i in vec["info"]]) for k in vec["info"][0]}  # (steps, R, ...)
    for i in range(r):
        env = gymnasium.make(envs.ENV_IDS[name], **kwargs)
        obs = [env.reset(seed=seeds[i])[0]]
        rewards, infos = [], []
        for t in range(steps):
            o, reward, _, _, info = env.step(actions[t, i])
            obs.append(o)
            rewards.append(reward)
            infos.append(info)
        np.testing.assert_array_equal(np.stack(obs), vec_obs[:, i])
        np.testing.assert_array_equal(rewards, vec_rewards[:, i])
        assert infos[0].keys() == vec_info.keys()
        for key, value in vec_info.items():
            np.testing.assert_array_equal([x[key] for x in infos], value[:, i], err_msg=key)


def test_reset_without_seed_continues_each_copy(vec_spec):
    name, kwargs = vec_spec
    venv = envs.make_vec(name, 2, **kwargs)
    venv.reset(seed=20)
    for _ in range(5):
        venv.step(np.zeros(2, dtype=np.int64))
    obs, _ = venv.reset()
    for i in range(2):
        env = gymnasium.make(envs.ENV_IDS[name], **kwargs)
        env.reset(seed=20 + i)
        for _ in range(5):
            env.step(0)
        np.testing.assert_array_equal(env.reset()[0], obs[i])


def test_matches_gymnasium_sync_vector_env(vec_spec):
    """Gymnasium's own vectoriser of the single env is an independent reference."""
    name, kwargs = vec_spec
    ours = envs.make_vec(name, 3, **kwargs)
    sync = gymnasium.make_vec(envs.ENV_IDS[name], 3, vectorization_mode="sync", **kwargs)
    np.testing.assert_array_equal(ours.reset(seed=9)[0], sync.reset(seed=9)[0])
    n = ours.single_action_space.n
    for a in np.random.default_rng(3).integers(0, n, (50, 3)):
        o1, r1, *_, i1 = ours.step(a)
        o2, r2, *_, i2 = sync.step(a)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(i1["regret"], i2["regret"])


def test_gymnasium_make_vec_uses_the_vector_entry_point():
    venv = gymnasium.make_vec("bandits/Wheel-v0", num_envs=2, delta=0.5)
    assert isinstance(venv, BanditVectorEnv)
    assert venv.problem.delta == 0.5
    assert isinstance(envs.make_vec("bandits/Wheel-v0", 2), BanditVectorEnv)


def test_invalid_use_is_a_clear_error():
    venv = envs.make_vec("wheel", 3)
    with pytest.raises(gymnasium.error.ResetNeeded):
        venv.step(np.zeros(3, dtype=np.int64))
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="integers"):
        venv.step(np.zeros(3))
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        venv.step(np.array([0, 5, 1]))
    with pytest.raises(ValueError, match="2 seeds for 3 copies"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="num_envs"):
        envs.make_vec("wheel", 0)


@pytest.mark.parametrize("name", ["mnist", "mushroom", "mushroom-classes", "wheel"])
def test_the_registry_shapes_are_the_environments_spaces(name, request):
    import envs

    assert sorted(envs.BUILT_IN) == ["mnist", "mushroom", "mushroom-classes", "wheel"]
    d, arms = envs.SHAPES[name]
    data = "mushroom" if name.startswith("mushroom") else name
    kwargs = ({"delta": 0.5} if name == "wheel" else
              {"data_dir": request.getfixturevalue(f"{data}_data_dir")})
    env = envs.make_vec(name, 1, **kwargs)
    assert env.single_observation_space.shape == (d,)
    assert int(env.single_action_space.n) == arms
