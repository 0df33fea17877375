"""The mushroom data: finding, parsing, encoding, every malformed-file case; the env's rewards."""

from __future__ import annotations

import gzip
import urllib.request
from pathlib import Path

import gymnasium
import numpy as np
import pandas as pd
import pytest

import envs
from bandits.core import data as data_module
from bandits.core.data import ChecksumError, DataNotFoundError, content_sha256, resolve
from envs.mushroom import (
    ATTRIBUTES,
    FEATURE_NAMES,
    MUSHROOM_FILE,
    N_ROWS,
    VALUES,
    MushroomFormatError,
    load_mushroom,
    parse_mushroom,
)

FILE = "agaricus-lepiota.data"


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """A download attempt fails at once: tests never touch the network."""

    def refuse(*args, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def synthetic_lines() -> list[str]:
    """8124 well-formed rows (not the UCI data) using every value of every attribute."""
    rows = []
    for i in range(N_ROWS):
        values = [VALUES[a][(i + j) % len(VALUES[a])] for j, a in enumerate(ATTRIBUTES)]
        rows.append(",".join(["ep"[i % 2], *values]))
    return rows


def write_data(root: Path, content: str | bytes, flat: bool = False) -> Path:
    """Write ``content`` as the mushroom file of data directory ``root``; return its path."""
    path = root / FILE if flat else root / "mushroom" / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


# ------------------------------------------------------------------ the real file


def test_real_file_shapes_counts_and_dtypes(mushroom_data_dir):
    features, edible = load_mushroom(mushroom_data_dir)
    assert features.shape == (8124, 117) and features.dtype == np.float32
    assert edible.shape == (8124,) and edible.dtype == bool
    assert edible.sum() == 4208
    assert set(np.unique(features)) == {0.0, 1.0}
    np.testing.assert_array_equal(features.sum(axis=1), 22)  # one value per attribute
    assert (features.sum(axis=0) > 0).all()  # every column's value occurs
    assert features[:, FEATURE_NAMES.index("stalk-root=?")].sum() == 2480


def test_encoding_matches_pandas_get_dummies(mushroom_data_dir):
    """An independent reference: pandas one-hot, columns sorted per attribute as ours."""
    df = pd.read_csv(mushroom_data_dir / "mushroom" / FILE, header=None, dtype=str)
    dummies = pd.get_dummies(df.iloc[:, 1:], prefix_sep="=")
    expected_names = [f"{ATTRIBUTES[int(c.split('=')[0]) - 1]}={c.split('=')[1]}"
                      for c in dummies.columns]  # fmt: skip
    assert tuple(expected_names) == FEATURE_NAMES
    features, edible = load_mushroom(mushroom_data_dir)
    np.testing.assert_array_equal(features, dummies.to_numpy(dtype=np.float32))
    np.testing.assert_array_equal(edible, (df[0] == "e").to_numpy())


def test_feature_order_is_documented():
    assert len(FEATURE_NAMES) == 117
    assert FEATURE_NAMES[:6] == tuple(f"cap-shape={v}" for v in "bcfksx")
    assert FEATURE_NAMES[-1] == "habitat=w"
    # stalk-root's missing value '?' sorts before its letters
    k = FEATURE_NAMES.index("stalk-root=?")
    assert FEATURE_NAMES[k + 1] == "stalk-root=b"


def test_cached_and_read_only(mushroom_data_dir):
    a = load_mushroom(mushroom_data_dir)
    b = load_mushroom(mushroom_data_dir)
    assert a[0] is b[0] and a[1] is b[1]
    with pytest.raises(ValueError, match="read-only"):
        a[0][0, 0] = 2.0
    with pytest.raises(ValueError, match="read-only"):
        a[1][0] = False


# ------------------------------------------------------------------ finding the file


def test_found_via_data_dir_argument(mushroom_data_dir, monkeypatch):
    monkeypatch.delenv("BANDITS_DATA_DIR", raising=False)
    assert load_mushroom(data_dir=mushroom_data_dir)[0].shape == (8124, 117)
    env = gymnasium.make("bandits/Mushroom-v0", data_dir=mushroom_data_dir)
    assert env.reset(seed=0)[0].shape == (117,)


def test_found_via_environment_variable(mushroom_data_dir, monkeypatch):
    monkeypatch.setenv("BANDITS_DATA_DIR", str(mushroom_data_dir))
    assert load_mushroom()[0].shape == (8124, 117)
    assert envs.make_vec("mushroom", 2).reset(seed=0)[0].shape == (2, 117)


def test_found_directly_in_the_data_dir(tmp_path):
    write_data(tmp_path, "\n".join(synthetic_lines()) + "\n", flat=True)
    assert load_mushroom(tmp_path, verify=False)[0].shape == (8124, 117)


def test_the_packaged_copy_is_used_with_no_directory_and_no_network(tmp_path, monkeypatch):
    monkeypatch.delenv("BANDITS_DATA_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # an empty HOME: no cache to fall on
    assert resolve(MUSHROOM_FILE) == MUSHROOM_FILE.packaged_path
    assert MUSHROOM_FILE.packaged_path.name == FILE + ".gz"
    features, edible = load_mushroom()  # checked against the published sha256 as it loads
    assert features.shape == (8124, 117) and int(edible.sum()) == 4208
    assert envs.make_vec("mushroom", 2).reset(seed=0)[0].shape == (2, 117)
    assert not (tmp_path / "home").exists()  # nothing downloaded, nothing cached


def test_a_directory_without_the_file_falls_back_to_the_packaged_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("BANDITS_DATA_DIR", str(tmp_path))  # e.g. a directory for MNIST only
    assert resolve(MUSHROOM_FILE) == MUSHROOM_FILE.packaged_path
    assert resolve(MUSHROOM_FILE, tmp_path / "other") == MUSHROOM_FILE.packaged_path


def test_the_packaged_copy_is_the_published_file(mushroom_data_dir):
    packaged = parse_mushroom(MUSHROOM_FILE.packaged_path)
    given = parse_mushroom(mushroom_data_dir / "mushroom" / FILE)
    assert all((a == b).all() for a, b in zip(packaged, given))
    assert content_sha256(MUSHROOM_FILE.packaged_path) == MUSHROOM_FILE.sha256


def test_a_changed_packaged_copy_is_refused(tmp_path, monkeypatch):
    lines = gzip.decompress(MUSHROOM_FILE.packaged_path.read_bytes()).decode().splitlines()
    lines[0] = ("e" if lines[0][0] == "p" else "p") + lines[0][1:]  # one label flipped
    fake = tmp_path / "datasets"
    write_data(fake, "")
    (fake / "mushroom" / FILE).unlink()
    (fake / "mushroom" / (FILE + ".gz")).write_bytes(gzip.compress(
        ("\n".join(lines) + "\n").encode()))
    monkeypatch.setattr(data_module, "PACKAGED_DIR", fake)
    monkeypatch.delenv("BANDITS_DATA_DIR", raising=False)
    with pytest.raises(ChecksumError, match="not the published UCI Mushroom file"):
        load_mushroom()


def test_no_packaged_copy_and_no_directory_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(data_module, "PACKAGED_DIR", tmp_path / "missing")
    monkeypatch.setenv("BANDITS_DATA_DIR", str(tmp_path))
    with pytest.raises(DataNotFoundError, match=FILE) as err:
        load_mushroom()
    assert "reinstall the package" in str(err.value) and str(tmp_path) in str(err.value)
    with pytest.raises(DataNotFoundError):
        gymnasium.make("bandits/Mushroom-v0")


# ------------------------------------------------------------------ parsing


def test_synthetic_file_is_encoded_by_the_documented_order(tmp_path):
    lines = synthetic_lines()
    features, edible = load_mushroom(write_data(tmp_path, "\n".join(lines) + "\n").parents[1],
                                     verify=False)
    assert features.shape == (8124, 117)
    np.testing.assert_array_equal(edible, [line[0] == "e" for line in lines])
    for i in (0, 1, 4000, 8123):
        fields = lines[i].split(",")[1:]
        hot = [FEATURE_NAMES.index(f"{a}={v}") for a, v in zip(ATTRIBUTES, fields)]
        np.testing.assert_array_equal(np.flatnonzero(features[i]), sorted(hot))


def test_order_of_rows_does_not_change_the_columns(tmp_path):
    lines = synthetic_lines()
    perm = np.random.default_rng(0).permutation(len(lines))
    a = parse_mushroom(write_data(tmp_path / "a", "\n".join(lines)))  # no final newline
    b = parse_mushroom(write_data(tmp_path / "b", "\r\n".join(lines[p] for p in perm) + "\r\n"))
    np.testing.assert_array_equal(b[0], a[0][perm])
    np.testing.assert_array_equal(b[1], a[1][perm])


def _corrupt(lines: list[str], case: str) -> tuple[str, int, str]:
    """File content with one defect, the line the error must name, and a word of it."""
    lines = list(lines)
    if case == "cut mid-row":  # the download or copy stopped in the middle of the last row
        return "\n".join(lines)[:-17], N_ROWS, "columns"
    if case == "cut at a row end":
        return "\n".join(lines[:8000]) + "\n", 8000, "ends after 8000 rows"
    if case == "empty file":
        return "", 0, "empty"
    if case == "extra column":
        lines[16] += ",x"
        return "\n".join(lines), 17, "24 columns, expected 23"
    if case == "missing column":
        lines[99] = lines[99].rsplit(",", 1)[0]
        return "\n".join(lines), 100, "22 columns"
    if case == "empty row":
        lines.insert(41, "")
        return "\n".join(lines), 42, "empty row"
    if case == "blank row at the end":
        return "\n".join(lines) + "\n  \n", N_ROWS + 1, "empty row"
    if case == "unknown class":
        lines[4] = "x" + lines[4][1:]
        return "\n".join(lines), 5, "unknown class 'x'"
    if case == "unknown value":
        fields = lines[7].split(",")
        fields[5] = "z"  # odor
        lines[7] = ",".join(fields)
        return "\n".join(lines), 8, "unknown value 'z' in column 5 (odor)"
    if case == "too many rows":
        return "\n".join(lines + lines[:3]), N_ROWS + 1, "8127 rows, expected 8124"
    if case == "not text":
        lines[2] = "e," + ",".join(["\u00e9"] * 22)
        return "\n".join(lines), 3, "unknown value"
    raise AssertionError(case)


CASES = ["cut mid-row", "cut at a row end", "empty file", "extra column", "missing column",
         "empty row", "blank row at the end", "unknown class", "unknown value", "too many rows",
         "not text"]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_malformed_file_names_the_file_and_the_line(tmp_path, case):
    content, line, words = _corrupt(synthetic_lines(), case)
    path = write_data(tmp_path, content)
    with pytest.raises(MushroomFormatError) as err:
        load_mushroom(tmp_path)
    assert isinstance(err.value, ValueError)
    assert err.value.line == line
    assert err.value.path == path
    assert str(err.value).startswith(f"{path}, line {line}: ")
    assert words in str(err.value)
    # Nothing half-loaded is used: no env can be made from it either.
    with pytest.raises(MushroomFormatError):
        gymnasium.make("bandits/Mushroom-v0", data_dir=tmp_path)


def test_a_repaired_file_loads(tmp_path):
    """A failed load caches nothing: once the file is fixed, it loads."""
    lines = synthetic_lines()
    write_data(tmp_path, _corrupt(lines, "unknown class")[0])
    with pytest.raises(MushroomFormatError):
        load_mushroom(tmp_path)
    write_data(tmp_path, "\n".join(lines) + "\n")
    assert load_mushroom(tmp_path, verify=False)[1].sum() == N_ROWS // 2


def test_format_error_pickles():
    import pickle

    err = pickle.loads(pickle.dumps(MushroomFormatError("f.data", 3, "empty row")))
    assert (err.line, err.problem, str(err)) == (3, "empty row", "f.data, line 3: empty row")


# ------------------------------------------------------------------ the env's rewards


def test_reward_frequencies_match_the_definition(mushroom_data_dir):
    """Always eat, many rounds: the edible share and the poison coin's frequency."""
    venv = envs.make_vec("mushroom", 10, data_dir=mushroom_data_dir)
    venv.reset(seed=0)
    rewards, edible, obs_sum = [], [], 0.0
    for _ in range(2000):
        obs, r, _, _, info = venv.step(np.ones(10, dtype=np.int64))
        rewards.append(r)
        edible.append(info["edible"])
        obs_sum = obs_sum + obs.sum(axis=0)
    r, e = np.concatenate(rewards), np.concatenate(edible)  # 20000 rounds
    assert np.all(r[e] == 5.0)
    assert set(np.unique(r[~e])) == {-35.0, 5.0}
    assert abs(np.mean(r[~e] == -35.0) - 0.5) < 0.03  # 0.5 +- ~6 standard errors
    assert abs(e.mean() - 4208 / 8124) < 0.02
    # Mushrooms are drawn uniformly: feature frequencies match the data's.
    features, _ = load_mushroom(mushroom_data_dir)
    assert np.abs(obs_sum / 20000 - features.mean(axis=0)).max() < 0.03


def test_rewards_and_regret_per_case(mushroom_data_dir):
    env = gymnasium.make("bandits/Mushroom-v0", data_dir=mushroom_data_dir)
    env.reset(seed=1)
    seen = set()
    for t in range(400):
        action = t % 2
        _, reward, _, _, info = env.step(action)
        edible = info["edible"]
        assert info["oracle_reward"] == (5.0 if edible else 0.0)
        assert info["optimal_action"] == int(edible)
        np.testing.assert_array_equal(info["expected_rewards"], [0.0, 5.0 if edible else -15.0])
        if action == 0:
            assert reward == 0.0
            assert info["expected_regret"] == (5.0 if edible else 0.0)
        else:
            assert reward in ((5.0,) if edible else (5.0, -35.0))
            assert info["expected_regret"] == (0.0 if edible else 15.0)
        assert info["regret"] == info["oracle_reward"] - reward  # -5 on a lucky poisonous meal
        seen.add((edible, action, reward))
    assert {(False, 1, -35.0), (False, 1, 5.0), (True, 1, 5.0), (True, 0, 0.0)} <= seen


def test_reward_constants_are_arguments(mushroom_data_dir):
    env = gymnasium.make(
        "bandits/Mushroom-v0",
        data_dir=mushroom_data_dir,
        reward_eat=1.0,
        reward_poisoned=-10.0,
        reward_no_eat=0.5,
        poison_prob=1.0,
    )
    env.reset(seed=2)
    for _ in range(200):
        _, reward, _, _, info = env.step(1)
        assert reward == (1.0 if info["edible"] else -10.0)
        assert info["oracle_reward"] == (1.0 if info["edible"] else 0.5)
    with pytest.raises(ValueError, match="poison_prob"):
        gymnasium.make("bandits/Mushroom-v0", data_dir=mushroom_data_dir, poison_prob=1.5)


@pytest.mark.parametrize("change", ["label", "feature"])
def test_a_changed_but_well_formed_file_is_refused_wherever_it_is_found(
        tmp_path, mushroom_data_dir, change):
    from bandits.core.data import ChecksumError

    lines = (mushroom_data_dir / "mushroom" / FILE).read_text().splitlines()
    fields = lines[10].split(",")
    if change == "label":
        fields[0] = "p" if fields[0] == "e" else "e"
    else:  # odor: another legal letter
        fields[5] = next(v for v in VALUES["odor"] if v != fields[5])
    lines[10] = ",".join(fields)
    path = write_data(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(ChecksumError) as err:
        load_mushroom(tmp_path)
    assert str(path.resolve()) in str(err.value) and len(str(err.value).splitlines()) == 1
    with pytest.raises(ChecksumError):
        gymnasium.make("bandits/Mushroom-v0", data_dir=tmp_path)
