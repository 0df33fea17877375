"""The UCI Mushroom contextual bandit of Blundell et al. 2015 (section 5.3).

:func:`load_mushroom` reads ``agaricus-lepiota.data`` (UCI Machine Learning Repository,
"Mushroom", Schlimmer 1987; 8124 rows of 23 one-letter columns, the class in column 0) and
one-hot encodes its 22 attributes into 117 float32 features. :class:`MushroomEnv` is the
bandit as a Gymnasium environment, :class:`MushroomVectorEnv` R copies of it at once.

**Feature order** (:data:`FEATURE_NAMES`): attributes in the order of the UCI
``agaricus-lepiota.names`` file (:data:`ATTRIBUTES`), and within an attribute its values
in sorted character order (``?``, the missing stalk-root, sorts before the letters). Only
values that occur in the UCI file have a column (:data:`VALUES`), 117 in all; the order is
fixed by these constants, not by the rows, so it does not depend on row order. Feature
``k`` is named ``"attribute=value"``, e.g. ``FEATURE_NAMES[0] == "cap-shape=b"``.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from bandits.data import ChecksumError, DataFile, content_sha256, resolve
from envs.core import BanditEnv, BanditProblem, Rounds
from envs.vector import BanditVectorEnv

MUSHROOM_FILE = DataFile(
    dataset="mushroom",
    name="agaricus-lepiota.data",
    urls=(
        "https://archive.ics.uci.edu/ml/machine-learning-databases/mushroom/agaricus-lepiota.data",
    ),
    sha256="e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e",
)
"""The UCI file: where to find it and its checksum."""

N_ROWS = 8124
"""Rows of the UCI file: 4208 edible, 3916 poisonous."""

ATTRIBUTES: tuple[str, ...] = (
    "cap-shape",
    "cap-surface",
    "cap-color",
    "bruises",
    "odor",
    "gill-attachment",
    "gill-spacing",
    "gill-size",
    "gill-color",
    "stalk-shape",
    "stalk-root",
    "stalk-surface-above-ring",
    "stalk-surface-below-ring",
    "stalk-color-above-ring",
    "stalk-color-below-ring",
    "veil-type",
    "veil-color",
    "ring-number",
    "ring-type",
    "spore-print-color",
    "population",
    "habitat",
)
"""The 22 attributes, file columns 1..22, in the order of ``agaricus-lepiota.names``."""

VALUES: dict[str, str] = {
    "cap-shape": "bcfksx",
    "cap-surface": "fgsy",
    "cap-color": "bcegnpruwy",
    "bruises": "ft",
    "odor": "acflmnpsy",
    "gill-attachment": "af",
    "gill-spacing": "cw",
    "gill-size": "bn",
    "gill-color": "beghknopruwy",
    "stalk-shape": "et",
    "stalk-root": "?bcer",
    "stalk-surface-above-ring": "fksy",
    "stalk-surface-below-ring": "fksy",
    "stalk-color-above-ring": "bcegnopwy",
    "stalk-color-below-ring": "bcegnopwy",
    "veil-type": "p",
    "veil-color": "nowy",
    "ring-number": "not",
    "ring-type": "eflnp",
    "spore-print-color": "bhknoruwy",
    "population": "acnsvy",
    "habitat": "dglmpuw",
}
"""Per attribute, the values that occur in the UCI file, sorted: one feature each."""

FEATURE_NAMES: tuple[str, ...] = tuple(f"{a}={v}" for a in ATTRIBUTES for v in VALUES[a])
"""Name of each of the 117 feature columns, ``"attribute=value"``, in column order."""

N_FEATURES = len(FEATURE_NAMES)  # 117

CLASSES = {"e": True, "p": False}
"""Class letter -> edible."""

# Per attribute: value letter -> feature column.
_COLUMNS: tuple[dict[str, int], ...] = tuple(
    {v: FEATURE_NAMES.index(f"{a}={v}") for v in VALUES[a]} for a in ATTRIBUTES
)


class MushroomFormatError(ValueError):
    """The mushroom data file is malformed. The message names the file and the line.

    Attributes:
        path: The file.
        line: The 1-based line number (for a file that ends early, its last line; 0 if
            it is empty).
        problem: What is wrong.
    """

    def __init__(self, path: str | os.PathLike, line: int, problem: str) -> None:
        self.path = Path(path)
        self.line = line
        self.problem = problem
        super().__init__(f"{path}, line {line}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable, e.g. across processes
        return type(self), (self.path, self.line, self.problem)


def load_mushroom(
    data_dir: str | os.PathLike | None = None,
    verify: bool = True,
) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Load and encode the UCI mushroom data.

    The file is found by :func:`bandits.data.resolve`: ``data_dir``, else
    ``$BANDITS_DATA_DIR``, else the cache, else downloaded (checksum checked) into the cache.
    The encoded arrays are cached in-process per file (path, size and modification time), so
    creating many envs is cheap; they are returned read-only so no caller can change what
    another one sees (copy them to modify).

    Args:
        data_dir: Directory holding ``mushroom/agaricus-lepiota.data`` or
            ``agaricus-lepiota.data``.

    ``verify``: check the file against its published sha256 (after the format checks, so
    a malformed file is named by its line), wherever the file was found: a label flipped
    or a value changed to another legal one would otherwise run and give other results.

    Returns:
        ``(features, edible)``: ``features`` of shape ``(8124, 117)``, float32, one-hot in the
        column order of :data:`FEATURE_NAMES`; ``edible`` of shape ``(8124,)``, bool. Row
        ``i`` is line ``i + 1`` of the file.

    Raises:
        bandits.data.DataNotFoundError: The file is nowhere and could not be downloaded.
        MushroomFormatError: The file is malformed: an empty row, a row without 23
            columns (as the last row of a file cut short), an unknown class letter or
            attribute value, or not 8124 rows. Nothing is cached or returned then.
        bandits.data.ChecksumError: ``verify`` and the file is well formed but not the
            published one.
    """
    path = resolve(MUSHROOM_FILE, data_dir).resolve()
    stat = path.stat()
    return _load_cached(path, stat.st_size, stat.st_mtime_ns, verify)


@functools.lru_cache(maxsize=4)
def _load_cached(
    path: Path, size: int, mtime_ns: int, verify: bool = True
) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    features, edible = parse_mushroom(path)
    if verify:
        got = content_sha256(path)
        if got != MUSHROOM_FILE.sha256:
            raise ChecksumError(
                f"{path} is not the published UCI Mushroom file (sha256 {got[:12]}..., "
                f"expected {MUSHROOM_FILE.sha256[:12]}...): a changed row changes every "
                "result; restore the original file")
    features.flags.writeable = False
    edible.flags.writeable = False
    return features, edible


def parse_mushroom(path: str | os.PathLike) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Parse and encode one mushroom file, checking every line (no cache, no search).

    Args:
        path: The file.

    Returns:
        New writable ``(features, edible)`` arrays, as :func:`load_mushroom`.

    Raises:
        MushroomFormatError: See :func:`load_mushroom`.
    """
    path = Path(path)
    # Non-ASCII bytes become U+FFFD and are then reported as an unknown value with their line.
    lines = path.read_bytes().decode("ascii", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last row
    n_cols = 1 + len(ATTRIBUTES)
    cols = np.empty((len(lines), len(ATTRIBUTES)), dtype=np.intp)  # (rows, 22) feature columns
    edible = np.empty(len(lines), dtype=bool)
    for i, line in enumerate(lines):
        lineno = i + 1
        line = line.removesuffix("\r")
        if not line.strip():
            raise MushroomFormatError(path, lineno, "empty row")
        fields = line.split(",")
        if len(fields) != n_cols:
            raise MushroomFormatError(
                path,
                lineno,
                f"{len(fields)} columns, expected {n_cols} (class + {len(ATTRIBUTES)} "
                "attributes); a row cut short means a truncated file",
            )
        if fields[0] not in CLASSES:
            raise MushroomFormatError(
                path,
                lineno,
                f"unknown class {fields[0]!r}, expected 'e' (edible) or 'p' (poisonous)",
            )
        edible[i] = CLASSES[fields[0]]
        try:
            cols[i] = [lut[v] for lut, v in zip(_COLUMNS, fields[1:])]
        except KeyError:
            j = next(j for j, v in enumerate(fields[1:]) if v not in _COLUMNS[j])
            raise MushroomFormatError(
                path,
                lineno,
                f"unknown value {fields[1 + j]!r} in column {1 + j} ({ATTRIBUTES[j]}), "
                f"expected one of {' '.join(VALUES[ATTRIBUTES[j]])}",
            ) from None
    if len(lines) > N_ROWS:
        raise MushroomFormatError(
            path, N_ROWS + 1, f"{len(lines)} rows, expected {N_ROWS}: not the UCI file?"
        )
    if len(lines) < N_ROWS:
        what = "the file is empty" if not lines else f"the file ends after {len(lines)} rows"
        raise MushroomFormatError(path, len(lines), f"{what}, expected {N_ROWS}: truncated?")
    features = np.zeros((len(lines), N_FEATURES), dtype=np.float32)
    features[np.arange(len(lines))[:, None], cols] = 1.0
    return features, edible


class MushroomProblem(BanditProblem):
    """The mushroom bandit's rules; see :class:`MushroomEnv` for the specification.

    Args:
        data_dir: See :func:`load_mushroom`.
        reward_eat: Reward for eating an edible mushroom, and for eating a poisonous one
            that turns out harmless.
        reward_poisoned: Reward for eating a poisonous mushroom that does harm.
        reward_no_eat: Reward for not eating.
        poison_prob: Probability that a poisonous mushroom, eaten, does harm.
    """

    n_actions = 2

    def __init__(
        self,
        data_dir: str | os.PathLike | None = None,
        reward_eat: float = 5.0,
        reward_poisoned: float = -35.0,
        reward_no_eat: float = 0.0,
        poison_prob: float = 0.5,
    ) -> None:
        for name, value in [
            ("reward_eat", reward_eat),
            ("reward_poisoned", reward_poisoned),
            ("reward_no_eat", reward_no_eat),
        ]:
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if not 0.0 <= poison_prob <= 1.0:
            raise ValueError(f"poison_prob must lie in [0, 1], got {poison_prob!r}")
        self.features, self.edible = load_mushroom(data_dir)
        self.reward_eat = float(reward_eat)
        self.reward_poisoned = float(reward_poisoned)
        self.reward_no_eat = float(reward_no_eat)
        self.poison_prob = float(poison_prob)

    def observation_space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (N_FEATURES,), np.float32)

    def draw(self, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        # A uniform draw, not a coin: the same draws serve every poison_prob.
        return {
            "row": rng.integers(0, len(self.edible), size=size),  # mushroom, with replacement
            "harm": rng.random(size),  # the eaten poisonous mushroom harms if < poison_prob
        }

    def observe(self, rounds: Rounds) -> NDArray[np.float32]:
        return self.features[rounds["row"]]  # (R, 117), a new array

    def rewards(self, rounds: Rounds) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        edible = self.edible[rounds["row"]]  # (R,)
        harmed = ~edible & (rounds["harm"] < self.poison_prob)
        realised = np.empty((edible.shape[0], 2))  # (R, arms)
        realised[:, 0] = self.reward_no_eat
        realised[:, 1] = np.where(harmed, self.reward_poisoned, self.reward_eat)
        p = self.poison_prob
        expected = np.empty_like(realised)
        expected[:, 0] = self.reward_no_eat
        expected[:, 1] = np.where(
            edible, self.reward_eat, p * self.reward_poisoned + (1.0 - p) * self.reward_eat
        )
        return realised, expected

    def info(self, rounds: Rounds) -> dict[str, np.ndarray]:
        return {"edible": self.edible[rounds["row"]], "mushroom": rounds["row"]}


class MushroomEnv(BanditEnv):
    """The UCI Mushroom bandit of Blundell et al. 2015, "Weight Uncertainty in Neural
    Networks", section 5.3.

    ## Description
    Each round the agent is shown a mushroom, drawn uniformly with replacement from the
    8124 of the UCI Mushroom data set, and decides whether to eat it. Eating an edible
    mushroom is rewarded; eating a poisonous one is punished half of the time. An oracle
    eats exactly the edible mushrooms.

    All randomness of a round (the mushroom and whether an eaten poisonous mushroom does
    harm) is drawn from ``np_random`` before the action is known, so envs reset with the
    same seed show the same mushrooms and the same harm draws whatever actions they are
    given (common random numbers). Draws are taken 1024 rounds at a time
    (:data:`envs.core.BLOCK_SIZE`); :class:`MushroomVectorEnv` copy ``i`` reset with seed
    ``s`` reproduces this env reset with seed ``s + i``.

    ## Action Space
    ``Discrete(2)``: 0 = do not eat, 1 = eat.

    ## Observation Space
    ``Box(0, 1, (117,), float32)``: the mushroom's 22 attributes one-hot encoded, columns
    in the order of :data:`FEATURE_NAMES` (see :mod:`envs.mushroom`).

    ## Rewards
    - do not eat: 0;
    - eat an edible mushroom: +5;
    - eat a poisonous mushroom: -35 with probability 1/2, else +5.

    Expected rewards: no-eat 0; eat 5 if edible, else -15. The oracle reward is 5 for an
    edible mushroom, 0 for a poisonous one.

    ## Starting State
    ``reset`` draws the first mushroom; ``step`` returns the reward for the current
    mushroom and the next mushroom.

    ## Episode End
    Never: a continuing task, ``terminated`` and ``truncated`` are always False. The
    horizon comes from ``max_episode_steps`` (``gymnasium.make(...,
    max_episode_steps=T)``) or from the runner.

    ## Information
    ``reset`` returns ``{}``. ``step`` returns, for the round just played:

    - ``edible`` (bool): whether the mushroom was edible;
    - ``mushroom`` (int): the mushroom shown, its row in the data file (0-based);
    - ``expected_rewards`` (float64 array ``(2,)``): expected reward of each action;
    - ``optimal_action`` (int): the action of highest expected reward (eat iff edible);
    - ``oracle_reward`` (float): the optimal action's reward under this round's draws
      (5 if edible, else 0);
    - ``regret`` (float): ``oracle_reward - reward``, as in the paper's Figure 6 (it is
      -5 when a poisonous mushroom is eaten without harm);
    - ``expected_regret`` (float): expected reward of the optimal action minus that of
      the action taken, always ``>= 0``.

    ## Arguments
    ```python
    import envs, gymnasium
    env = gymnasium.make("bandits/Mushroom-v0", data_dir=None, reward_eat=5.0,
                         reward_poisoned=-35.0, reward_no_eat=0.0, poison_prob=0.5)
    ```
    - ``data_dir``: directory holding ``mushroom/agaricus-lepiota.data``; default
      ``$BANDITS_DATA_DIR``, else the cache, else a download (:func:`load_mushroom`).
    - ``reward_eat``, ``reward_poisoned``, ``reward_no_eat``, ``poison_prob``: the reward
      constants above (eating a poisonous mushroom pays ``reward_poisoned`` with
      probability ``poison_prob``, else ``reward_eat``). The optimal action and the oracle
      reward follow from them.

    ## Version History
    - v0: initial version.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike | None = None,
        reward_eat: float = 5.0,
        reward_poisoned: float = -35.0,
        reward_no_eat: float = 0.0,
        poison_prob: float = 0.5,
        render_mode: str | None = None,
    ) -> None:
        problem = MushroomProblem(data_dir, reward_eat, reward_poisoned, reward_no_eat, poison_prob)
        super().__init__(problem, render_mode=render_mode)


class MushroomVectorEnv(BanditVectorEnv):
    """``num_envs`` independent copies of :class:`MushroomEnv`, stepped as arrays.

    ``info`` holds the keys of :class:`MushroomEnv` as arrays with leading dimension
    ``num_envs`` (``edible`` is bool ``(R,)``, ``expected_rewards`` ``(R, 2)``).

    Args:
        num_envs: Number of copies R.
        data_dir, reward_eat, reward_poisoned, reward_no_eat, poison_prob: As
            :class:`MushroomEnv`.
    """

    def __init__(
        self,
        num_envs: int,
        data_dir: str | os.PathLike | None = None,
        reward_eat: float = 5.0,
        reward_poisoned: float = -35.0,
        reward_no_eat: float = 0.0,
        poison_prob: float = 0.5,
    ) -> None:
        problem = MushroomProblem(data_dir, reward_eat, reward_poisoned, reward_no_eat, poison_prob)
        super().__init__(problem, num_envs)
