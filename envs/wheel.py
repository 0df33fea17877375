"""The wheel bandit of Riquelme, Tucker and Snoek 2018, "Deep Bayesian Bandits Showdown".

A synthetic bandit that needs no data files: a fast second benchmark, and the env of the
fast tests. :class:`WheelEnv` is the Gymnasium environment, :class:`WheelVectorEnv` R copies
of it at once.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from envs.core import BanditEnv, BanditProblem, Rounds
from envs.vector import BanditVectorEnv

N_ARMS = 5


def quadrant_arm(x: NDArray[np.floating], y: NDArray[np.floating]) -> NDArray[np.int64]:
    """The arm (1..4) of each context's quadrant, as in Riquelme et al.'s code.

    Arm 1 for ``x > 0, y > 0``; 2 for ``x > 0, y <= 0``; 3 for ``x <= 0, y > 0``; 4 for
    ``x <= 0, y <= 0`` (a point on an axis counts as on its non-positive side).
    """
    return (1 + 2 * (x <= 0) + (y <= 0)).astype(np.int64)


class WheelProblem(BanditProblem):
    """The wheel bandit's rules; see :class:`WheelEnv` for the specification.

    Args:
        delta: Radius beyond which a quadrant's arm pays ``mu_3``, in ``[0, 1]``.
        sigma: Standard deviation of every arm's reward noise, ``>= 0``.
        mu_1: Mean reward of arm 0, everywhere.
        mu_2: Mean reward of arms 1..4, except a quadrant's arm beyond ``delta``.
        mu_3: Mean reward of the context's quadrant arm beyond ``delta``.
    """

    n_actions = N_ARMS

    def __init__(
        self,
        delta: float = 0.95,
        sigma: float = 0.01,
        mu_1: float = 1.2,
        mu_2: float = 1.0,
        mu_3: float = 50.0,
    ) -> None:
        if not 0.0 <= delta <= 1.0:
            raise ValueError(f"delta must lie in [0, 1], got {delta!r}")
        if not (math.isfinite(sigma) and sigma >= 0.0):
            raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")
        for name, value in [("mu_1", mu_1), ("mu_2", mu_2), ("mu_3", mu_3)]:
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        self.delta = float(delta)
        self.sigma = float(sigma)
        self.mu_1, self.mu_2, self.mu_3 = float(mu_1), float(mu_2), float(mu_3)

    def observation_space(self) -> spaces.Box[np.float32]:
        return spaces.Box(-1.0, 1.0, (2,), np.float32)

    def draw(self, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        # Uniform in the disc without rejection (a fixed number of draws per round):
        # P(|c| <= r) = r^2, so |c| = sqrt(U); the angle is uniform.
        radius = np.sqrt(rng.random(size))
        angle = 2.0 * np.pi * rng.random(size)
        context = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
        return {
            "context": context.astype(np.float32),  # (size, 2), what the agent sees
            "noise": rng.standard_normal((size, N_ARMS)),  # (size, arms), every arm's noise
        }

    def observe(self, rounds: Rounds) -> NDArray[np.float32]:
        return rounds["context"].copy()  # (R, 2)

    def _means(self, context: NDArray[np.float32]) -> NDArray[np.float64]:
        # From the float32 context the agent sees, so the truth matches the observation.
        c = context.astype(np.float64)  # (R, 2)
        means = np.full((c.shape[0], N_ARMS), self.mu_2)  # (R, arms)
        means[:, 0] = self.mu_1
        outer = np.hypot(c[:, 0], c[:, 1]) > self.delta  # (R,)
        arm = quadrant_arm(c[:, 0], c[:, 1])  # (R,)
        means[np.flatnonzero(outer), arm[outer]] = self.mu_3
        return means

    def rewards(self, rounds: Rounds) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        expected = self._means(rounds["context"])
        return expected + self.sigma * rounds["noise"], expected


class WheelEnv(BanditEnv):
    """The wheel bandit of Riquelme, Tucker and Snoek 2018, "Deep Bayesian Bandits
    Showdown" (ICLR 2018).

    ## Description
    Each round the context is a point drawn uniformly in the unit disc. Arm 0 is the safe
    arm: it pays about ``mu_1`` = 1.2 everywhere. Arms 1..4 pay about ``mu_2`` = 1.0, except
    that when the context lies beyond radius ``delta`` the arm of the context's quadrant
    pays about ``mu_3`` = 50. The larger ``delta``, the rarer and harder to find the
    rewarding outer ring, and the more exploration it takes.

    Quadrant arms (as in Riquelme et al.'s code): arm 1 for ``x > 0, y > 0``, arm 2 for
    ``x > 0, y <= 0``, arm 3 for ``x <= 0, y > 0``, arm 4 for ``x <= 0, y <= 0``. The
    region and quadrant are computed from the float32 context the agent sees.

    All randomness of a round (the context and the noise of every arm) is drawn from
    ``np_random`` before the action is known: envs reset with the same seed see the same
    contexts and reward draws whatever actions they are given (common random numbers).
    Draws are taken 1024 rounds at a time (:data:`envs.core.BLOCK_SIZE`);
    :class:`WheelVectorEnv` copy ``i`` reset with seed ``s`` reproduces this env reset with
    seed ``s + i``.

    ## Action Space
    ``Discrete(5)``: arm 0 (safe) and the quadrant arms 1..4.

    ## Observation Space
    ``Box(-1, 1, (2,), float32)``: the context ``(x, y)``, ``x^2 + y^2 <= 1``.

    ## Rewards
    Arm ``a`` pays ``N(mean_a, sigma^2)`` with ``mean_0 = mu_1``; ``mean_a = mu_2`` for
    ``a >= 1``, except ``mean_a = mu_3`` for the quadrant arm when ``|context| > delta``.
    Defaults: ``mu_1 = 1.2``, ``mu_2 = 1.0``, ``mu_3 = 50``, ``sigma = 0.01`` (as in the
    paper), ``delta = 0.95``.

    ## Starting State
    ``reset`` draws the first context; ``step`` returns the reward for the current context
    and the next context.

    ## Episode End
    Never: a continuing task, ``terminated`` and ``truncated`` are always False. The
    horizon comes from ``max_episode_steps`` or from the runner.

    ## Information
    ``reset`` returns ``{}``. ``step`` returns, for the round just played:

    - ``expected_rewards`` (float64 array ``(5,)``): the mean reward of each arm;
    - ``optimal_action`` (int): the arm of highest mean (the quadrant arm beyond
      ``delta``, else arm 0, with the default means);
    - ``oracle_reward`` (float): the optimal arm's realised reward this round;
    - ``regret`` (float): ``oracle_reward - reward``;
    - ``expected_regret`` (float): mean of the optimal arm minus mean of the arm taken,
      always ``>= 0``.

    ## Arguments
    ```python
    import envs, gymnasium
    env = gymnasium.make("bandits/Wheel-v0", delta=0.95, sigma=0.01,
                         mu_1=1.2, mu_2=1.0, mu_3=50.0)
    ```
    - ``delta``: radius of the inner disc, in ``[0, 1]``. The paper uses 0.5 to 0.99;
      0.95 (about 10 % of contexts in the outer ring) is the default here.
    - ``sigma``: noise standard deviation of every arm, ``>= 0``.
    - ``mu_1``, ``mu_2``, ``mu_3``: the mean rewards above.

    ## Version History
    - v0: initial version.
    """

    def __init__(
        self,
        delta: float = 0.95,
        sigma: float = 0.01,
        mu_1: float = 1.2,
        mu_2: float = 1.0,
        mu_3: float = 50.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(WheelProblem(delta, sigma, mu_1, mu_2, mu_3), render_mode=render_mode)


class WheelVectorEnv(BanditVectorEnv):
    """``num_envs`` independent copies of :class:`WheelEnv`, stepped as arrays.

    Args:
        num_envs: Number of copies R.
        delta, sigma, mu_1, mu_2, mu_3: As :class:`WheelEnv`.
    """

    def __init__(
        self,
        num_envs: int,
        delta: float = 0.95,
        sigma: float = 0.01,
        mu_1: float = 1.2,
        mu_2: float = 1.0,
        mu_3: float = 50.0,
    ) -> None:
        super().__init__(WheelProblem(delta, sigma, mu_1, mu_2, mu_3), num_envs)
