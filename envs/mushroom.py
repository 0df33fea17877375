"""The UCI Mushroom contextual bandit of Blundell et al. 2015 (section 5.3).

:class:`MushroomEnv` is the bandit as a Gymnasium environment, :class:`MushroomVectorEnv`
R copies of it at once; the data (the file, the 117 one-hot features in the order of
:data:`FEATURE_NAMES`) is read by :mod:`envs.mushroom_data`, whose names this module
re-exports.
"""

from __future__ import annotations

import math
import os

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from envs.core import BanditEnv, BanditProblem, Rounds
from envs.mushroom_data import (  # noqa: F401  (re-exported)
    ATTRIBUTES,
    CLASSES,
    FEATURE_NAMES,
    MUSHROOM_FILE,
    N_FEATURES,
    N_ROWS,
    VALUES,
    MushroomFormatError,
    load_mushroom,
    parse_mushroom,
)
from envs.vector import BanditVectorEnv


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

    def observation_space(self) -> spaces.Box[np.float32]:
        return spaces.Box(0.0, 1.0, (N_FEATURES,), np.float32)

    def draw(self, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        # A uniform draw, not a coin: the same draws serve every poison_prob.
        return {
            "row": rng.integers(0, len(self.edible), size=size),  # mushroom, with replacement
            "harm": rng.random(size),  # the eaten poisonous mushroom harms if < poison_prob
        }

    def observe(self, rounds: Rounds) -> NDArray[np.float32]:
        return self.features[rounds["row"]]  # (R, 117), a new array

    def item_features(self) -> NDArray[np.float32]:
        return self.features  # info["mushroom"] names the row shown

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
      ``$BANDITS_DATA_DIR``, else the copy the package ships (:func:`load_mushroom`).
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
