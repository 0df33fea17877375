"""Any labelled data set as a contextual bandit: one arm per class.

Each round shows one example, drawn uniformly with replacement from the data set; the agent
names a class (pulls an arm) and is paid 1 if the class is the example's label, else 0. The
optimal arm is the label, so the regret is 1 per wrong arm, 0 per right one. This is the
set-up of the NeuralUCB and NeuralTS papers (Zhou et al. 2020, Zhang et al. 2021) and of
the data-set bandits of Riquelme et al. 2018. Rewards carry no noise: what is hard is the
classification, learnt from bandit feedback (only the chosen arm's reward is seen).

Data sets are :class:`LabelledData` entries of :data:`DATASETS`, by name:

- ``"mushroom"``: UCI Mushroom (:func:`envs.mushroom.load_mushroom`), 117 one-hot features,
  2 arms: 0 = poisonous, 1 = edible;
- ``"mnist"``: the 60,000 MNIST training images (:func:`bandits.core.idx.load_mnist`), 784 pixels
  divided by 126 (Blundell et al.'s MNIST scaling; ``normalize="l2"`` gives the NeuralUCB
  and NeuralTS papers' unit-norm contexts), 10 arms: the digit.

:class:`ClassificationEnv` and :class:`ClassificationVectorEnv` take the name; the envs
registered on ``import envs`` are ``bandits/MushroomClasses-v0`` (short name
``mushroom-classes``) and ``bandits/MNIST-v0`` (``mnist``).

**A new data set** is a loader: a function of a data directory (``None``: the default
places) returning ``(features, labels)``, features ``(n, d)`` float32 and labels ``(n,)``
integers in ``0 .. K-1``. Register it once, in the process that makes the envs::

    import envs
    envs.register_dataset("iris", load_iris, context_size=4, n_classes=3)
    venv = envs.make_vec("iris", num_envs=8)         # or gymnasium.make("bandits/iris-v0")

and it is an environment like the others (``bandits.run`` takes it as ``--env iris`` when
the registering module is imported first, see the docs).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from bandits.core.data import DataError
from bandits.core.idx import load_mnist, preprocess
from envs.core import BanditEnv, BanditProblem, Rounds
from envs.mushroom import load_mushroom
from envs.vector import BanditVectorEnv

Loader = Callable[[str | os.PathLike | None], tuple[np.ndarray, np.ndarray]]
"""A data set's loader: data directory (or ``None``) -> ``(features (n, d), labels (n,))``."""


@dataclass(frozen=True)
class LabelledData:
    """A labelled data set the bandit can draw from.

    Attributes:
        loader: Reads the data: data directory (``None``: the default places) ->
            ``(features, labels)``.
        context_size: Features per example ``d`` (known without loading the data).
        n_classes: Number of classes ``K``, the arms.
        description: One line for the docs and the command's help.
    """

    loader: Loader
    context_size: int
    n_classes: int
    description: str = ""


def _mushroom(data_dir: str | os.PathLike | None) -> tuple[np.ndarray, np.ndarray]:
    features, edible = load_mushroom(data_dir)
    return features, edible.astype(np.int64)  # arm 1 = edible, as "eat" on Mushroom-v0


def _mnist(data_dir: str | os.PathLike | None) -> tuple[np.ndarray, np.ndarray]:
    data = load_mnist(data_dir)
    return preprocess(data.train_images), data.train_labels.astype(np.int64)


DATASETS: dict[str, LabelledData] = {
    "mushroom": LabelledData(_mushroom, 117, 2,
                             "UCI Mushroom, 8124 rows; arm 1 = edible, arm 0 = poisonous"),
    "mnist": LabelledData(_mnist, 784, 10,
                          "MNIST's 60,000 training images, pixels / 126; arm = digit"),
}
"""Name -> data set. :func:`envs.register_dataset` adds to it."""

_LOADED: dict[tuple[str, str | None], tuple[np.ndarray, np.ndarray]] = {}


def load(name: str, data_dir: str | os.PathLike | None = None
         ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """A registered data set's ``(features, labels)``, checked, read-only and cached
    in-process (many envs of one data set share one copy).

    Raises:
        ValueError: An unknown name, a loader that raises (but for a data file missing,
            malformed or changed, :class:`bandits.core.data.DataError`, raised as it is),
            or a loader whose result does not match its entry (not a pair of arrays,
            shapes, features that are not real numbers, labels outside ``0 .. K-1``); one
            line naming the data set.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown labelled data set {name!r}; choose from "
                         f"{', '.join(DATASETS)} or register one with envs.register_dataset")
    key = (name, None if data_dir is None else os.fspath(data_dir))
    if key not in _LOADED:
        entry = DATASETS[name]
        features, labels = _arrays(name, entry.loader, data_dir)
        features = np.ascontiguousarray(features, dtype=np.float32)
        n = len(labels)
        if features.shape != (n, entry.context_size) or labels.shape != (n,) or n == 0:
            raise ValueError(
                f"data set {name!r}: the loader gave features {features.shape} and labels "
                f"{labels.shape}; expected (n, {entry.context_size}) and (n,) with n > 0")
        if not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"data set {name!r}: labels must be integers, got {labels.dtype}")
        if labels.min() < 0 or labels.max() >= entry.n_classes:
            raise ValueError(f"data set {name!r}: labels must lie in 0..{entry.n_classes - 1}, "
                             f"got {labels.min()}..{labels.max()}")
        if not np.isfinite(features).all():
            raise ValueError(f"data set {name!r}: features must be finite")
        labels = labels.astype(np.int64)
        features.flags.writeable = False
        labels.flags.writeable = False
        _LOADED[key] = features, labels
    return _LOADED[key]


def _arrays(name: str, loader: Loader, data_dir: str | os.PathLike | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """What ``loader`` returns, as two arrays of real features and labels; anything else
    is one ``ValueError`` naming the data set."""
    try:
        got = loader(data_dir)
    except DataError:
        raise  # a data file missing, malformed or changed: its message names the file
    except Exception as e:
        text = " ".join(str(e).split())
        raise ValueError(f"data set {name!r}: its loader raised {type(e).__name__}"
                         + (f": {text}" if text else "")) from e
    if not (isinstance(got, tuple | list) and len(got) == 2):
        what = ("None" if got is None else f"a {type(got).__name__} of {len(got)} items"
                if isinstance(got, tuple | list) else f"a {type(got).__name__}")
        raise ValueError(f"data set {name!r}: the loader returned {what}; it must return "
                         "a pair (features, labels)")
    try:
        features, labels = np.asarray(got[0]), np.asarray(got[1])
    except (TypeError, ValueError) as e:  # ragged rows, values numpy cannot hold
        raise ValueError(f"data set {name!r}: the loader's features and labels must be "
                         f"arrays: {' '.join(str(e).split())}") from None
    if features.dtype.kind == "c":  # float32 would keep the real part only
        raise ValueError(f"data set {name!r}: features are complex ({features.dtype}); give "
                         "real features (e.g. the real and imaginary parts as columns of "
                         "their own)")
    if features.dtype.kind not in "biuf":
        raise ValueError(f"data set {name!r}: features must be real numbers, got dtype "
                         f"{features.dtype}; convert them in the loader (e.g. "
                         ".astype(np.float32))")
    return features, labels


NORMALIZATIONS = ("none", "l2")
"""How the contexts are scaled: as the data set gives them, or each to unit L2 norm (the
NeuralUCB and NeuralTS papers' contexts)."""


def l2_normalized(features: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row divided by its L2 norm (a row of zeros stays zero), read-only."""
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    out = (features / np.where(norms > 0, norms, 1)).astype(np.float32)
    out.flags.writeable = False
    return out


ORDERS = ("random", "pass")
"""How each round's example is drawn: uniformly with replacement, or in a shuffled pass
through the data set without replacement (the NeuralUCB and NeuralTS papers' one pass; a
new shuffle begins after every ``n`` rounds)."""


class ClassificationProblem(BanditProblem):
    """The rules of a classification bandit; see :class:`ClassificationEnv`.

    Args:
        dataset: A name of :data:`DATASETS`.
        data_dir: Where the data set's files are (``None``: the default places).
        normalize: ``"none"`` (the data set's own features) or ``"l2"`` (each context
            scaled to unit L2 norm); see :data:`NORMALIZATIONS`.
        order: ``"random"`` (with replacement) or ``"pass"`` (shuffled passes without
            replacement); see :data:`ORDERS`.
    """

    def __init__(self, dataset: str, data_dir: str | os.PathLike | None = None,
                 normalize: str = "none", order: str = "random") -> None:
        if normalize not in NORMALIZATIONS:
            raise ValueError(f"normalize={normalize!r}: choose from {', '.join(NORMALIZATIONS)}")
        if order not in ORDERS:
            raise ValueError(f"order={order!r}: choose from {', '.join(ORDERS)}")
        self.order = order
        self.features, self.labels = load(dataset, data_dir)
        if normalize == "l2":
            self.features = l2_normalized(self.features)
        self.n_actions = DATASETS[dataset].n_classes

    def observation_space(self) -> spaces.Box[np.float32]:
        # the data's own bounds, per feature
        return spaces.Box(self.features.min(axis=0), self.features.max(axis=0), dtype=np.float32)

    def draw(self, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        return {"row": rng.integers(0, len(self.labels), size=size)}  # with replacement

    def draw_stream(self, rng: np.random.Generator, size: int, carry: dict[str, Any]
                    ) -> dict[str, np.ndarray]:
        if self.order == "random":
            return self.draw(rng, size)
        n, parts = len(self.labels), []  # "pass": the next rows of the copy's shuffles
        while size > 0:
            if carry.get("pos", n) == n:  # a pass is used up (or none began): shuffle anew
                carry["perm"], carry["pos"] = rng.permutation(n), 0
            take = min(size, n - carry["pos"])
            parts.append(carry["perm"][carry["pos"]:carry["pos"] + take])
            carry["pos"] += take
            size -= take
        return {"row": np.concatenate(parts)}

    def observe(self, rounds: Rounds) -> NDArray[np.float32]:
        return self.features[rounds["row"]]

    def rewards(self, rounds: Rounds) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        label = self.labels[rounds["row"]]
        paid = np.zeros((len(label), self.n_actions))
        paid[np.arange(len(label)), label] = 1.0
        return paid, paid.copy()  # no noise: the expected reward is the reward

    def info(self, rounds: Rounds) -> dict[str, np.ndarray]:
        return {"label": self.labels[rounds["row"]], "row": rounds["row"].copy()}


class ClassificationEnv(BanditEnv):
    """A labelled data set as a K-armed contextual bandit.

    ## Description
    Each round shows an example drawn uniformly with replacement from the data set (all
    randomness of a round is drawn before the action, as for every env here: common random
    numbers). The agent names a class.

    ## Action Space
    ``Discrete(K)``: the class.

    ## Observation Space
    ``Box(low, high, (d,), float32)``: the example's features; ``low`` and ``high`` are
    each feature's minimum and maximum over the data set.

    ## Rewards
    1 if the action is the example's label, else 0. ``regret`` and ``expected_regret`` are 1
    for a wrong class, 0 for the right one.

    ## Episode End
    Never (a continuing task); the horizon comes from the runner or ``max_episode_steps``.

    ## Information
    The keys of every env (:mod:`envs.core`) and ``label`` (the right class) and ``row``
    (the example's row in the data set).

    ## Arguments
    ``dataset``: a name of :data:`DATASETS`; ``data_dir``: where its files are;
    ``normalize``: ``"l2"`` scales each context to unit L2 norm (default ``"none"``);
    ``order``: ``"pass"`` draws the examples in shuffled passes without replacement
    (default ``"random"``: uniformly with replacement).

    ## Version History
    - v0: initial version.
    """

    def __init__(self, dataset: str, data_dir: str | os.PathLike | None = None,
                 normalize: str = "none", order: str = "random",
                 render_mode: str | None = None) -> None:
        super().__init__(ClassificationProblem(dataset, data_dir, normalize, order),
                         render_mode=render_mode)


class ClassificationVectorEnv(BanditVectorEnv):
    """``num_envs`` independent copies of :class:`ClassificationEnv`, stepped as arrays."""

    def __init__(self, num_envs: int, dataset: str,
                 data_dir: str | os.PathLike | None = None, normalize: str = "none",
                 order: str = "random") -> None:
        super().__init__(ClassificationProblem(dataset, data_dir, normalize, order), num_envs)

