"""Labelled data sets as bandits: rewards, streams, the checks on a loader, registration,
and the runner on them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from bandits.simulator.run import main as run_main
from envs import classification
from envs.classification import ClassificationEnv, ClassificationVectorEnv

N, D, K = 600, 6, 3


def toy_loader(data_dir):
    """Three classes, separable by the sign pattern of the first two features."""
    rng = np.random.default_rng(123)
    x = rng.normal(size=(N, D)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return x, y


@pytest.fixture(scope="module")
def toy() -> str:
    if "toy" not in envs.ENV_IDS:
        assert envs.register_dataset("toy", toy_loader, D, K, "a test set") == "bandits/toy-v0"
    return "toy"


def test_reward_is_one_for_the_label_and_regret_one_for_any_other(toy):
    env = ClassificationEnv(toy)
    check_env(env, skip_render_check=True)
    x, y = toy_loader(None)
    obs, _ = env.reset(seed=4)
    for t in range(50):
        action = t % K
        matches = np.flatnonzero((x == obs).all(axis=1))
        assert len(matches) >= 1
        nxt, reward, terminated, truncated, info = env.step(action)
        row = int(info["row"])
        assert row in matches and info["label"] == y[row] == info["optimal_action"]
        assert reward == float(action == y[row])
        assert info["regret"] == info["expected_regret"] == float(action != y[row])
        np.testing.assert_array_equal(info["expected_rewards"], np.eye(K)[y[row]])
        assert not terminated and not truncated
        obs = nxt


def test_vector_copy_i_is_the_single_env_with_seed_plus_i(toy):
    venv = envs.make_vec(toy, num_envs=3)
    assert isinstance(venv.unwrapped, ClassificationVectorEnv)
    obs, _ = venv.reset(seed=10)
    singles = [ClassificationEnv(toy) for _ in range(3)]
    single_obs = [e.reset(seed=10 + i)[0] for i, e in enumerate(singles)]
    np.testing.assert_array_equal(obs, np.stack(single_obs))
    for t in range(1500):  # past one block of draws
        actions = np.array([t % K, (t + 1) % K, 0])
        obs, rewards, _, _, info = venv.step(actions)
        for i, e in enumerate(singles):
            o, r, _, _, inf = e.step(int(actions[i]))
            assert r == rewards[i] and inf["row"] == info["row"][i]
            np.testing.assert_array_equal(o, obs[i])


def test_mushroom_classes_labels_are_edibility(mushroom_data_dir):
    from envs.mushroom import load_mushroom

    features, edible = load_mushroom(mushroom_data_dir)
    venv = envs.make_vec("mushroom-classes", 4, data_dir=mushroom_data_dir)
    assert venv.single_observation_space.shape == (envs.SHAPES["mushroom-classes"][0],)
    assert venv.single_action_space.n == envs.SHAPES["mushroom-classes"][1] == 2
    venv.reset(seed=0)
    _, reward, _, _, info = venv.step(np.ones(4, dtype=np.int64))  # "edible" for all
    np.testing.assert_array_equal(reward, edible[info["row"]].astype(float))


def test_mnist_is_ten_arms_over_the_training_images(mnist_data_dir):
    from bandits.core.idx import load_mnist, preprocess

    data = load_mnist(mnist_data_dir)
    venv = envs.make_vec("mnist", 2, data_dir=mnist_data_dir)
    assert (venv.single_observation_space.shape, venv.single_action_space.n) == ((784,), 10)
    assert envs.SHAPES["mnist"] == (784, 10)
    obs, _ = venv.reset(seed=1)
    _, reward, _, _, info = venv.step(np.array([3, 7]))
    np.testing.assert_array_equal(obs, preprocess(data.train_images[info["row"]]))
    np.testing.assert_array_equal(info["label"], data.train_labels[info["row"]])
    np.testing.assert_array_equal(reward, (info["label"] == [3, 7]).astype(float))


@pytest.mark.parametrize(("loader", "message"), [
    (lambda d: (np.zeros((5, D + 1), np.float32), np.zeros(5, int)), r"features \(5, 7\)"),
    (lambda d: (np.zeros((5, D), np.float32), np.full(5, K)), r"labels must lie in 0\.\.2"),
    (lambda d: (np.zeros((5, D), np.float32), np.zeros(5, float)), "labels must be integers"),
    (lambda d: (np.full((5, D), np.nan, np.float32), np.zeros(5, int)), "must be finite"),
])
def test_a_loader_that_breaks_its_entry_is_named(loader, message, monkeypatch):
    name = "bad"  # registered for this test only: every registry gets its state back after it
    for registry, key in ((envs.SPECS, name), (classification.DATASETS, name),
                          (gymnasium.registry, "bandits/bad-v0")):
        monkeypatch.setitem(registry, key, None)
        del registry[key]
    envs.register_dataset(name, loader, D, K)
    with pytest.raises(ValueError, match=f"data set '{name}': .*{message}"):
        ClassificationEnv(name)


def test_a_registered_data_set_is_in_every_view_of_the_registry(toy):
    assert envs.SPECS[toy].dataset == toy  # a classification bandit of its own data set
    assert envs.ENV_IDS[toy] == "bandits/toy-v0" and envs.SHAPES[toy] == (D, K)
    assert toy not in envs.BUILT_IN  # known to this process only
    assert envs.env_id(toy) == "bandits/toy-v0"


def test_registration_refuses_bad_names_and_sizes(toy):
    with pytest.raises(ValueError, match="is taken"):
        envs.register_dataset("mushroom", toy_loader, D, K)
    with pytest.raises(ValueError, match="lower-case letters"):
        envs.register_dataset("Has Space", toy_loader, D, K)
    with pytest.raises(ValueError, match="n_classes >= 2"):
        envs.register_dataset("one-class", toy_loader, D, 1)
    with pytest.raises(ValueError, match="unknown labelled data set 'nope'"):
        classification.load("nope")


def test_linucb_learns_the_mushroom_classes_well_below_uniform(mushroom_data_dir, tmp_path):
    # Mushroom's classes are linearly separable in the one-hot features.
    out = tmp_path / "run"
    assert run_main(["--agent", "linucb", "uniform", "--env", "mushroom-classes",
                     "--data-dir", str(mushroom_data_dir), "--seeds", "2", "--steps", "600",
                     "--no-progress", "--workers", "1", "--out", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv").set_index("agent")
    uniform = summary.loc["uniform", "cumulative_regret_mean"]
    assert uniform > 200  # about half of 600 wrong
    assert summary.loc["linucb", "cumulative_regret_mean"] < 0.2 * uniform


def test_a_data_set_registered_in_this_process_runs_in_it(toy, tmp_path):
    # --workers 2 asked for, but fresh worker processes would not know "toy": one process.
    out = tmp_path / "toy"
    assert run_main(["--agent", "linucb", "uniform", "--env", toy, "--seeds", "2",
                     "--steps", "300", "--no-progress", "--workers", "2", "--out", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv").set_index("agent")
    assert summary.loc["linucb", "cumulative_regret_mean"] < summary.loc["uniform",
                                                                          "cumulative_regret_mean"]
    assert "parts" not in json.loads((out / "config.json").read_text())  # not split


@pytest.mark.slow
def test_the_docs_example_of_a_new_data_set_runs(tmp_path):
    # docs/datasets.md's three code blocks, on a synthetic file of the Wine data's shape.
    doc = (Path(__file__).resolve().parents[1] / "docs" / "datasets.md").read_text()
    loader, make, run = re.findall(r"```python\n(.*?)```", doc, re.S)
    rng = np.random.default_rng(0)
    y = rng.integers(1, 4, 178)
    (tmp_path / "data" / "wine").mkdir(parents=True)
    np.savetxt(tmp_path / "data" / "wine" / "wine.data",
               np.column_stack([y, rng.normal(size=(178, 13)) + y[:, None]]),
               delimiter=",", fmt=["%d"] + ["%.4f"] * 13)
    (tmp_path / "my_datasets.py").write_text(loader)
    run = run.replace('"--steps", "2000"', '"--steps", "200", "--no-progress"')
    assert '"--steps", "200"' in run
    for code in (make, run):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert "env wine" in done.stdout


def test_l2_normalised_contexts_have_unit_norm_and_the_same_draws(toy):
    plain = ClassificationVectorEnv(3, toy)
    unit = ClassificationVectorEnv(3, toy, normalize="l2")
    x, info = plain.reset(seed=5)
    u, info_u = unit.reset(seed=5)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(u, x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-5)
    _, r, _, _, step = plain.step(np.zeros(3, np.int64))
    _, r_u, _, _, step_u = unit.step(np.zeros(3, np.int64))
    assert (r == r_u).all() and (step["label"] == step_u["label"]).all()  # same rounds
    assert not np.linalg.norm(classification.l2_normalized(np.zeros((2, 3), np.float32)))
    with pytest.raises(ValueError, match="normalize='max'"):
        ClassificationEnv(toy, normalize="max")


def test_normalize_runs_on_a_classification_bandit_and_is_refused_elsewhere(
        toy, tmp_path, capsys):
    base = ["--agent", "linucb", "--seeds", "1", "--steps", "5", "--no-progress"]
    assert run_main([*base, "--env", toy, "--normalize", "l2", "--out",
                     str(tmp_path / "unit")]) == 0
    assert json.loads((tmp_path / "unit" / "config.json").read_text())["normalize"] == "l2"
    capsys.readouterr()
    assert run_main([*base, "--env", "wheel", "--normalize", "l2",
                     "--out", str(tmp_path / "wheel")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--normalize l2" in err and "not one" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "wheel").exists()


def test_a_setting_added_later_leaves_the_identity_of_older_runs_as_it_was():
    from bandits.simulator.resume import identity

    shipped = json.loads((Path(__file__).parents[1] / "results" / "mushroom"
                          / "paper-horizon-kl-seen" / "config.json").read_text())  # made before it
    assert "normalize" not in shipped and identity(shipped) == shipped["identity"]
    assert identity({**shipped, "normalize": "none"}) == shipped["identity"]
    assert identity({**shipped, "normalize": "l2"}) != shipped["identity"]


def test_a_shuffled_pass_shows_every_example_once_then_shuffles_anew(toy):
    n = len(classification.load(toy)[1])
    venv = ClassificationVectorEnv(2, toy, order="pass")
    venv.reset(seed=3)
    rows = []
    for _ in range(2 * n + 5):  # two whole passes (across stream blocks) and a bit
        rows.append(venv.step(np.zeros(2, np.int64))[4]["row"])
    rows = np.array(rows)  # (rounds, copies): each step's info is of the round it played
    for copy in range(2):
        shown = rows[:, copy]
        assert sorted(shown[:n]) == list(range(n))  # pass 1: every example once
        assert sorted(shown[n:2 * n]) == list(range(n))  # pass 2, across a stream block
        assert list(shown[:n]) != list(shown[n:2 * n])  # shuffled anew
    assert not (rows[:, 0] == rows[:, 1]).all()  # each copy has its own shuffles
    single = ClassificationEnv(toy, order="pass")  # copy 1 is the single env seeded 3 + 1
    single.reset(seed=4)
    alone = [single.step(0)[4]["row"] for _ in range(2 * n + 5)]
    assert list(rows[:, 1]) == alone
    with pytest.raises(ValueError, match="order='sorted'"):
        ClassificationEnv(toy, order="sorted")


def test_a_run_in_shuffled_passes_resumes_exactly(toy, tmp_path):
    base = ["--agent", "greedy", "--env", toy, "--order", "pass", "--normalize", "l2",
            "--seeds", "2", "--hidden", "8", "--batch-size", "8", "--updates-per-step", "1",
            "--no-progress"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert run_main([*base, "--steps", "40", "--out", str(whole)]) == 0
    assert run_main([*base, "--steps", "25", "--out", str(cut)]) == 0
    assert run_main(["--resume", str(cut), "--steps", "40", "--no-progress"]) == 0
    assert (cut / "metrics.csv").read_bytes() == (whole / "metrics.csv").read_bytes()
