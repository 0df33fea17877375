"""Contextual-bandit environments, registered with Gymnasium on import.

``import envs`` registers (and loads no data; the env modules are imported on first use):

- ``bandits/Mushroom-v0``: the UCI Mushroom bandit of Blundell et al. 2015, section 5.3
  (:class:`envs.mushroom.MushroomEnv`);
- ``bandits/Wheel-v0``: the wheel bandit of Riquelme et al. 2018, no data needed
  (:class:`envs.wheel.WheelEnv`).

One env::

    import envs, gymnasium
    env = gymnasium.make("bandits/Mushroom-v0", data_dir="data")

R independent copies stepped as numpy arrays (copy ``i`` reset with ``seed=s`` is the
single env reset with ``seed=s + i``)::

    venv = envs.make_vec("mushroom", num_envs=16)   # or gymnasium.make_vec(id, 16)
    obs, _ = venv.reset(seed=0)                     # (16, 117)
    obs, rewards, terminated, truncated, info = venv.step(actions)  # actions (16,) ints

Every env gives every agent the same draws (common random numbers), and ground truth in
``info``: ``oracle_reward``, ``expected_rewards``, ``optimal_action``, ``regret``,
``expected_regret`` (and ``edible`` and ``mushroom``, the row shown, for the mushroom);
see :mod:`envs.core`.
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_IDS: dict[str, str] = {
    "mushroom": "bandits/Mushroom-v0",
    "wheel": "bandits/Wheel-v0",
}
"""Short name -> registered id."""

SHAPES: dict[str, tuple[int, int]] = {
    "mushroom": (117, 2),
    "wheel": (2, 5),
}
"""Short name -> (context size, arms), known without loading any data (a test checks them
against the environments' spaces)."""

_ENTRY_POINTS: dict[str, tuple[str, str]] = {
    "bandits/Mushroom-v0": ("envs.mushroom:MushroomEnv", "envs.mushroom:MushroomVectorEnv"),
    "bandits/Wheel-v0": ("envs.wheel:WheelEnv", "envs.wheel:WheelVectorEnv"),
}

for _id, (_entry, _vector_entry) in _ENTRY_POINTS.items():
    if _id not in gymnasium.registry:  # importing twice (e.g. a reload) must not re-register
        gymnasium.register(id=_id, entry_point=_entry, vector_entry_point=_vector_entry)


def env_id(name: str) -> str:
    """The registered id for a short name (``"mushroom"``, ``"wheel"``) or an id itself."""
    if name in ENV_IDS.values():
        return name
    if name.lower() in ENV_IDS:
        return ENV_IDS[name.lower()]
    choices = ", ".join([*ENV_IDS, *ENV_IDS.values()])
    raise ValueError(f"unknown environment {name!r}; choose from {choices}")


def make_vec(name: str, num_envs: int, **kwargs: Any) -> gymnasium.vector.VectorEnv:
    """Make ``num_envs`` independent copies of an env, stepped as numpy arrays.

    Args:
        name: ``"mushroom"`` or ``"wheel"``, or a registered id (``"bandits/Mushroom-v0"``).
        num_envs: Number of copies R.
        **kwargs: The env's keyword arguments (e.g. ``data_dir``, ``delta``).

    Returns:
        A :class:`envs.vector.BanditVectorEnv`: ``reset(seed=s)`` seeds copy ``i`` with
        ``s + i``; ``step(actions)`` takes integer arms of shape ``(R,)``.
    """
    return gymnasium.make_vec(
        env_id(name), num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs
    )


__all__ = ["ENV_IDS", "SHAPES", "env_id", "make_vec"]
