"""Contextual-bandit environments, registered with Gymnasium on import.

``import envs`` registers (and loads no data; the env modules are imported on first use):

- ``bandits/Mushroom-v0``: the UCI Mushroom bandit of Blundell et al. 2015, section 5.3
  (:class:`envs.mushroom.MushroomEnv`);
- ``bandits/Wheel-v0``: the wheel bandit of Riquelme et al. 2018, no data needed
  (:class:`envs.wheel.WheelEnv`);
- ``bandits/MushroomClasses-v0`` and ``bandits/MNIST-v0``: labelled data sets as bandits,
  one arm per class, reward 1 for the right class (:class:`envs.classification.ClassificationEnv`);
  :func:`register_dataset` turns any other labelled data set into one.

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

import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import gymnasium

from bandits.core.config import OPEN, setting
from envs.spec import EnvSpec, SpecField

if TYPE_CHECKING:  # what make_vec gives, not loaded before it is made
    from envs.vector import BanditVectorEnv


@dataclass
class WheelSettings:
    """The wheel bandit's own setting."""

    wheel_delta: float = setting(
        0.95, "wheel: radius delta beyond which the high-reward arms pay "
        "(Riquelme et al.: 0.5 ... 0.99; harder as it grows)",
        range=(OPEN(0), OPEN(1)), option="delta")


@dataclass
class ClassificationSettings:
    """A classification bandit's own settings (every labelled data set's)."""

    normalize: str = setting(
        "none", "classification bandits (mushroom-classes, mnist, a registered data set): "
        "'l2' scales each context to unit L2 norm, as the NeuralUCB and NeuralTS papers "
        "do; 'none' keeps the data set's own features", choices=["none", "l2"])
    order: str = setting(
        "random", "classification bandits: 'random' draws each round's example uniformly "
        "with replacement; 'pass' goes through the data set in shuffled passes without "
        "replacement (the NeuralUCB and NeuralTS papers' one pass)", choices=["random", "pass"])


_CLASSES = ("envs.classification:ClassificationEnv",
            "envs.classification:ClassificationVectorEnv")

SPECS: dict[str, EnvSpec] = {spec.name: spec for spec in (
    EnvSpec("mushroom", "bandits/Mushroom-v0", (117, 2), "envs.mushroom:MushroomEnv",
            "envs.mushroom:MushroomVectorEnv", item_key="mushroom",
            mistakes={"a1_best0": "ate_poisonous", "a0_best1": "left_edible"},
            best_actions={0: "poisonous", 1: "edible"}, memorisation=True),
    EnvSpec("wheel", "bandits/Wheel-v0", (2, 5), "envs.wheel:WheelEnv",
            "envs.wheel:WheelVectorEnv", data=False, settings=(WheelSettings,)),
    EnvSpec("mushroom-classes", "bandits/MushroomClasses-v0", (117, 2), *_CLASSES,
            dataset="mushroom", settings=(ClassificationSettings,)),
    EnvSpec("mnist", "bandits/MNIST-v0", (784, 10), *_CLASSES, dataset="mnist",
            settings=(ClassificationSettings,)),
)}
"""The registry, the one list of environments: short name -> :class:`envs.spec.EnvSpec`
(:func:`register_dataset` adds to it; the views below read it)."""

ENV_IDS: Mapping[str, str] = SpecField(SPECS, "id")
"""Short name -> registered id: a read-only view of :data:`SPECS`."""

SHAPES: Mapping[str, tuple[int, int]] = SpecField(SPECS, "shape")
"""Short name -> (context size, arms), known without loading any data (a test checks them
against the environments' spaces): a read-only view of :data:`SPECS`."""

BUILT_IN = frozenset(SPECS)
"""The short names registered on ``import envs``, known to every process (a data set
registered by :func:`register_dataset` is known only to the process that registered it)."""


def _register(spec: EnvSpec) -> None:
    if spec.id not in gymnasium.registry:  # importing twice (a reload) must not re-register
        gymnasium.register(id=spec.id, entry_point=spec.entry_point,
                           vector_entry_point=spec.vector_entry_point, kwargs=spec.kwargs)


for _spec in SPECS.values():
    _register(_spec)


def register_dataset(name: str, loader: Callable[[Any], tuple[Any, Any]], context_size: int,
                     n_classes: int, description: str = "") -> str:
    """Make a labelled data set a bandit environment: one arm per class, reward 1 for
    the right class (:class:`envs.classification.ClassificationEnv`).

    Args:
        name: The data set's and the env's short name (``make_vec(name, R)``,
            ``bandits.run --env name``); lower-case letters, digits, ``-`` and ``_``.
        loader: Data directory (``None``: the default places) -> ``(features, labels)``,
            features ``(n, context_size)``, labels ``(n,)`` integers in ``0 .. n_classes-1``.
        context_size: Features per example.
        n_classes: Number of classes, the arms (at least 2).
        description: One line for the help.

    Returns:
        The registered Gymnasium id, ``bandits/<name>-v0``.

    Raises:
        ValueError: A bad name, a name already taken, or bad sizes.
        TypeError: A loader that is not callable, or sizes that are not integers.
    """
    from envs.classification import DATASETS, LabelledData  # the data modules, on first use

    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name):
        raise ValueError(f"data set name {name!r}: use lower-case letters, digits, '-' and '_'")
    if name in SPECS or name in DATASETS:
        raise ValueError(f"data set name {name!r} is taken; choose another")
    if not callable(loader):
        raise TypeError(f"data set {name!r}: the loader must be a function of the data "
                        f"directory returning (features, labels), got {type(loader).__name__}")
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
               for v in (context_size, n_classes)):
        raise TypeError(f"data set {name!r}: context_size and n_classes must be integers, "
                        f"got {context_size!r} and {n_classes!r}")
    if context_size < 1 or n_classes < 2:
        raise ValueError(f"data set {name!r}: need context_size >= 1 and n_classes >= 2, got "
                         f"{context_size} and {n_classes}")
    DATASETS[name] = LabelledData(loader, int(context_size), int(n_classes), description)
    spec = EnvSpec(name, f"bandits/{name}-v0", (int(context_size), int(n_classes)),
                   *_CLASSES, dataset=name, settings=(ClassificationSettings,))
    SPECS[name] = spec
    _register(spec)
    return spec.id


def env_id(name: str) -> str:
    """The registered id for a short name (``"mushroom"``, ``"mnist"``) or an id itself."""
    if name in ENV_IDS.values():
        return name
    if name.lower() in ENV_IDS:
        return ENV_IDS[name.lower()]
    choices = ", ".join([*ENV_IDS, *ENV_IDS.values()])
    raise ValueError(f"unknown environment {name!r}; choose from {choices}")


def make_vec(name: str, num_envs: int, **kwargs: Any) -> BanditVectorEnv:
    """Make ``num_envs`` independent copies of an env, stepped as numpy arrays.

    Args:
        name: A short name of :data:`ENV_IDS` (``"mushroom"``, ``"wheel"``,
            ``"mushroom-classes"``, ``"mnist"``) or a registered id (``"bandits/MNIST-v0"``).
        num_envs: Number of copies R.
        **kwargs: The env's keyword arguments (e.g. ``data_dir``, ``delta``).

    Returns:
        A :class:`envs.vector.BanditVectorEnv`: ``reset(seed=s)`` seeds copy ``i`` with
        ``s + i``; ``step(actions)`` takes integer arms of shape ``(R,)``.
    """
    return cast("BanditVectorEnv", gymnasium.make_vec(
        env_id(name), num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs
    ))


__all__ = ["BUILT_IN", "ENV_IDS", "SHAPES", "SPECS", "ClassificationSettings", "EnvSpec",
           "WheelSettings", "env_id", "make_vec", "register_dataset"]
