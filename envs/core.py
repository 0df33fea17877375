"""What every bandit here shares: the problem definition, its random stream, the single env.

A contextual bandit is a :class:`BanditProblem`: how one round's randomness is drawn (the
context *and* every arm's reward noise) and what each arm pays given those draws. The
single environment (:class:`BanditEnv`) and the vectorised one
(:class:`envs.vector.BanditVectorEnv`) are thin shells around a problem; the problem never
sees an action before its round's randomness is fixed.

**Common random numbers.** A round's draws do not depend on the action taken, so two envs
reset with the same seed show the same contexts and the same reward draws whatever their
agents do: differences between agents are then differences of policy, not of luck.

**Streams.** Each copy of an environment owns one ``np.random.Generator``, created as
Gymnasium creates ``Env.np_random`` in ``reset(seed=...)``. Its draws are taken
:data:`BLOCK_SIZE` rounds at a time by :meth:`BanditProblem.draw`: round ``t`` of an
episode is row ``t % BLOCK_SIZE`` of the episode's block number ``t // BLOCK_SIZE``; every
reset starts a fresh block. Single and vector envs read their draws through the same
:class:`RoundStream`, so copy ``i`` of a vector env reset with seed ``s`` produces exactly
the stream of a single env reset with seed ``s + i``. The block size is part of the
stream's definition: changing it changes every trajectory (a new env version).

**Outcome of a round.** :func:`evaluate` turns a problem's realised and expected rewards
into the reward received and the ground-truth ``info`` (regret from the env, never from the
agent): ``optimal_action`` is the arm of highest *expected* reward (the first on ties),
``oracle_reward`` that arm's *realised* reward under the same draws, ``regret`` is
``oracle_reward - reward`` (it can be negative in a round where luck favours a worse arm)
and ``expected_regret`` the expected reward of the optimal arm minus that of the arm taken
(always ``>= 0``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

BLOCK_SIZE = 1024
"""Rounds of randomness drawn at once per copy; part of the definition of every stream."""

Rounds = Mapping[str, np.ndarray]
"""One round's draws for R copies: arrays with leading dimension R."""


class BanditProblem(ABC):
    """A contextual bandit: how rounds are drawn and what each arm pays.

    Subclasses set :attr:`n_actions` and implement the four methods below. Every method but
    :meth:`draw` works on R copies at once: ``rounds`` maps each name returned by
    :meth:`draw` to an array whose leading dimension is R.
    """

    n_actions: int
    """Number of arms."""

    @abstractmethod
    def observation_space(self) -> spaces.Box[np.float32]:
        """A new observation space for one copy (each env owns its spaces and their rngs)."""

    def item_features(self) -> np.ndarray | None:
        """The context of every data item, ``(items, d)``, where each context is a row of a
        fixed table that the info key of the env's spec (``item_key``) names at every step;
        None otherwise. A replay buffer then keeps row indices instead of contexts."""
        return None

    @abstractmethod
    def draw(self, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """Draw the randomness of ``size`` consecutive rounds of one copy.

        Args:
            rng: The copy's generator; the only source of randomness.
            size: Number of rounds.

        Returns:
            Arrays with leading dimension ``size``; the same names and trailing shapes on
            every call.
        """

    def draw_stream(self, rng: np.random.Generator, size: int, carry: dict[str, Any]
                    ) -> dict[str, np.ndarray]:
        """:meth:`draw` for a problem whose rounds depend on the rounds before them in the
        copy's stream (one pass through a data set without replacement): ``carry`` is the
        copy's own dict, kept by the stream from one block to the next (empty at first).
        By default the rounds are independent: :meth:`draw`."""
        return self.draw(rng, size)

    @abstractmethod
    def observe(self, rounds: Rounds) -> NDArray[np.float32]:
        """The contexts of one round of R copies, a new ``(R, *obs_shape)`` float32 array."""

    @abstractmethod
    def rewards(self, rounds: Rounds) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Every arm's realised and expected reward in one round of R copies.

        Returns:
            ``(realised, expected)``, both new ``(R, n_actions)`` float64 arrays: the
            reward each arm would pay under the round's draws, and its expectation given
            the context only.
        """

    def info(self, rounds: Rounds) -> dict[str, np.ndarray]:
        """Extra ground truth for ``info`` (new arrays with leading dimension R)."""
        return {}


class RoundStream:
    """The randomness of R independent copies, drawn :data:`BLOCK_SIZE` rounds at a time.

    All copies share the position in the block: they are reset and stepped together. The
    only Python loop over copies is in the refill, once every :data:`BLOCK_SIZE` rounds.

    Args:
        problem: The bandit whose rounds are drawn.
        rngs: One generator per copy. They are used, not copied: the stream advances them.
    """

    def __init__(self, problem: BanditProblem, rngs: Sequence[np.random.Generator]) -> None:
        if len(rngs) == 0:
            raise ValueError("a stream needs at least one generator")
        self._problem = problem
        self._rngs = list(rngs)
        self._carry: list[dict[str, Any]] = [{} for _ in self._rngs]  # see draw_stream
        self._pos = 0
        self._block = self._draw_block()

    def _draw_block(self) -> dict[str, np.ndarray]:
        blocks = [self._problem.draw_stream(rng, BLOCK_SIZE, carry)
                  for rng, carry in zip(self._rngs, self._carry)]
        # Round-major layout, (BLOCK_SIZE, R, ...), so that one round is a contiguous slice.
        return {name: np.stack([b[name] for b in blocks], axis=1) for name in blocks[0]}

    def current(self) -> dict[str, np.ndarray]:
        """The current round's draws, views of shape ``(R, ...)``: do not modify them."""
        return {name: arr[self._pos] for name, arr in self._block.items()}

    def advance(self) -> None:
        """Move to the next round, drawing a new block when this one is used up."""
        self._pos += 1
        if self._pos == BLOCK_SIZE:
            self._block = self._draw_block()
            self._pos = 0


def evaluate(
    problem: BanditProblem, rounds: Rounds, actions: NDArray[np.integer]
) -> tuple[NDArray[np.float64], dict[str, np.ndarray]]:
    """The rewards of ``actions`` in one round of R copies, and the ground-truth info.

    Args:
        problem: The bandit.
        rounds: The round's draws, leading dimension R.
        actions: Valid arms, shape ``(R,)``.

    Returns:
        ``(reward, info)``: reward of shape ``(R,)``; info with ``oracle_reward``,
        ``expected_rewards`` ``(R, n_actions)``, ``optimal_action``, ``regret``,
        ``expected_regret`` and the problem's own keys, all new arrays.
    """
    realised, expected = problem.rewards(rounds)  # (R, n_actions) each
    rows = np.arange(actions.shape[0])
    optimal = np.argmax(expected, axis=1)  # (R,), first best arm on ties
    reward = realised[rows, actions]
    oracle = realised[rows, optimal]
    info = {
        "oracle_reward": oracle,
        "expected_rewards": expected,
        "optimal_action": optimal,
        "regret": oracle - reward,
        # max - x >= 0 holds exactly in floating point, so this is never negative.
        "expected_regret": expected[rows, optimal] - expected[rows, actions],
        **problem.info(rounds),
    }
    return reward, info


class BanditEnv(gym.Env[NDArray[np.float32], np.int64]):
    """A single copy of a :class:`BanditProblem` as a Gymnasium environment.

    ``reset`` shows the first context; ``step(action)`` pays the reward of ``action`` for
    the current context, then shows the next one. The task never ends by itself
    (``terminated`` and ``truncated`` are always False): the horizon comes from
    ``max_episode_steps`` or from the runner. Subclasses document the problem (see
    :class:`envs.mushroom.MushroomEnv`, :class:`envs.wheel.WheelEnv`).

    Args:
        problem: The bandit.
        render_mode: Only ``None``: nothing to render.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, problem: BanditProblem, render_mode: str | None = None) -> None:
        if render_mode is not None:
            raise ValueError(f"{type(self).__name__} has no render modes, got {render_mode!r}")
        self.render_mode = render_mode
        self.problem = problem
        self.observation_space = problem.observation_space()
        self.action_space = spaces.Discrete(problem.n_actions)
        self._stream: RoundStream | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Start a new episode; with ``seed``, reseed ``np_random`` first.

        Args:
            seed: Seed of the generator, as in Gymnasium; ``None`` continues the current one.
            options: Unused.

        Returns:
            The first context and an empty info dict.
        """
        super().reset(seed=seed)
        self._stream = RoundStream(self.problem, [self.np_random])
        return self.problem.observe(self._stream.current())[0], {}

    def step(
        self, action: int | np.integer
    ) -> tuple[NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        """Pay ``action``'s reward for the current context and move to the next context.

        Args:
            action: An arm in ``range(n_actions)``.

        Returns:
            ``(next_context, reward, False, False, info)``; ``info`` describes the round
            just played: scalars, and ``expected_rewards`` of shape ``(n_actions,)``.
        """
        if self._stream is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(
                f"invalid action {action!r} ({type(action).__name__}): "
                f"expected an integer in [0, {self.problem.n_actions})"
            )
        rounds = self._stream.current()
        reward, info = evaluate(self.problem, rounds, np.array([action], dtype=np.int64))
        self._stream.advance()
        obs = self.problem.observe(self._stream.current())[0]
        # One copy: unwrap to Python scalars, keeping per-arm arrays as (n_actions,).
        single = {k: v[0].item() if v.ndim == 1 else v[0] for k, v in info.items()}
        return obs, float(reward[0]), False, False, single
