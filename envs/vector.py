"""Many independent copies of a bandit stepped as numpy arrays: :class:`BanditVectorEnv`.

For R runs at once (R seeds of one experiment) without R Python envs: one ``step`` is a
handful of array operations on ``(R, ...)`` arrays. Each copy keeps its own generator and
its own stream, exactly those of a single env (see :mod:`envs.core`): copy ``i`` of a vector
env reset with ``seed=s`` shows the same contexts and reward draws as
``gymnasium.make(id)`` reset with ``seed=s + i``, Gymnasium's convention for vector envs.

``info`` holds every key for every copy at every step, so it has no ``_key`` masks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from numpy.typing import NDArray

from envs.core import BanditProblem, RoundStream, evaluate


class BanditVectorEnv(VectorEnv):
    """R independent copies of a :class:`~envs.core.BanditProblem`, stepped together.

    Spaces: ``single_observation_space`` and ``single_action_space`` (``Discrete``) are
    those of the single env; ``observation_space`` is their batch over R copies and
    ``action_space`` a ``MultiDiscrete``. No copy ever terminates or truncates, so no copy is
    ever auto-reset; ``reset`` resets all copies.

    Args:
        problem: The bandit, shared by all copies (it holds no state of a copy).
        num_envs: Number of copies R.
    """

    single_observation_space: spaces.Box[np.float32]
    single_action_space: spaces.Discrete
    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, problem: BanditProblem, num_envs: int) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise TypeError(f"num_envs must be an int, got {num_envs!r}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.problem = problem
        self.num_envs = int(num_envs)
        self.render_mode = None
        self.single_observation_space = problem.observation_space()
        self.single_action_space = spaces.Discrete(problem.n_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._rngs: list[np.random.Generator | None] = [None] * self.num_envs
        self._stream: RoundStream | None = None
        self._never = np.zeros(self.num_envs, dtype=bool)

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Reset every copy and return the first contexts, shape ``(R, *obs_shape)``.

        Args:
            seed: An int ``s`` seeds copy ``i`` with ``s + i``; a sequence gives one seed (or
                ``None``) per copy; ``None`` keeps each copy's generator (a copy without one
                gets a random seed), like ``Env.reset`` without a seed.
            options: Unused.

        Returns:
            The contexts and an empty info dict.
        """
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            super().reset(seed=int(seed))
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"got {len(seeds)} seeds for {self.num_envs} copies")
        for i, s in enumerate(seeds):
            if s is not None or self._rngs[i] is None:
                # Exactly how gymnasium.Env.reset(seed=s) creates Env.np_random.
                self._rngs[i], _ = seeding.np_random(s)
        self._stream = RoundStream(self.problem, self._rngs)  # type: ignore[arg-type]
        return self.problem.observe(self._stream.current()), {}

    def step(
        self, actions: NDArray[np.integer] | Sequence[int]
    ) -> tuple[
        NDArray[np.float32],
        NDArray[np.float64],
        NDArray[np.bool_],
        NDArray[np.bool_],
        dict[str, np.ndarray],
    ]:
        """Play one arm in every copy.

        Args:
            actions: Integer arms, shape ``(R,)``.

        Returns:
            ``(next_contexts (R, d), rewards (R,), terminated (R,), truncated (R,), info)``;
            terminated and truncated are all False; info maps each key to an array with
            leading dimension R (``expected_rewards`` is ``(R, n_actions)``).
        """
        if self._stream is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        a = np.asarray(actions)
        n = self.problem.n_actions
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(
                f"actions must be integers of shape ({self.num_envs},), "
                f"got dtype {a.dtype} and shape {a.shape}"
            )
        if np.any((a < 0) | (a >= n)):
            raise ValueError(f"actions must lie in [0, {n}), got {a[(a < 0) | (a >= n)][:5]}")
        rewards, info = evaluate(self.problem, self._stream.current(), a.astype(np.int64))
        self._stream.advance()
        obs = self.problem.observe(self._stream.current())
        return obs, rewards, self._never.copy(), self._never.copy(), info
