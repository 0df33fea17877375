"""What the registry (:data:`envs.SPECS`) knows of an environment without loading any
data: its names, shape and entry points, and what the runner and the diagnosis read
from it (the ``info`` key naming the data item shown, the names of its mistakes)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EnvSpec:
    """One environment of the registry.

    Attributes:
        name: The short name ``--env`` takes (``"mushroom"``).
        id: The Gymnasium id it is registered under (``"bandits/Mushroom-v0"``).
        shape: ``(context size, arms)``, known without loading data (a test checks it
            against the environment's spaces).
        entry_point, vector_entry_point: ``"module:Class"`` of the env and of its vector
            env.
        dataset: A labelled data set's name (its classification bandit's), else None:
            passed to the env as ``dataset=``.
        item_key: The ``info`` key that names the data item shown at each step, recorded
            in ``memory.csv`` (the memorisation record), or None.
        mistakes: Readable names of the wrong ``(action, best action)`` cells of
            ``phases.csv`` (``{"a1_best0": "ate_poisonous"}``); by default each cell's own.
        best_actions: Readable names of the best actions in the diagnosis' figure
            (``{0: "poisonous"}``); by default ``best <a>``.
        memorisation: Whether the diagnosis writes ``memorisation.csv`` from
            ``memory.csv`` (its categories are Mushroom's: edible or not, the reward the
            last eating paid).
    """

    name: str
    id: str
    shape: tuple[int, int]
    entry_point: str
    vector_entry_point: str
    dataset: str | None = None
    item_key: str | None = None
    mistakes: dict[str, str] = field(default_factory=dict)
    best_actions: dict[int, str] = field(default_factory=dict)
    memorisation: bool = False

    @property
    def kwargs(self) -> dict[str, str] | None:
        """The keyword arguments the env is registered with."""
        return {"dataset": self.dataset} if self.dataset is not None else None
