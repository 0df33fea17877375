"""What the registry (:data:`envs.SPECS`) knows of an environment without loading any
data: its names, shape and entry points, and what the runner and the diagnosis read
from it (the ``info`` key naming the data item shown, the names of its mistakes)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


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
        data: Whether the env reads a data directory (passed as ``data_dir=``).
        columns: ``info`` keys recorded at every step of every run, each a column of
            ``metrics.csv`` after the regret's (one number per run and step).
        settings: The dataclasses of the env's own settings (fields made with
            :func:`bandits.core.config.setting`: flags of ``bandits.run``), each passed to the
            env as the keyword its field's ``option`` metadata names (else its own name).
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
    data: bool = True
    columns: tuple[str, ...] = ()
    settings: tuple[type, ...] = ()

    def options(self, values: Any) -> dict[str, Any]:
        """The env's keyword arguments for its own settings, read from ``values`` (an
        object with one attribute per setting, as a run record's environment part,
        ``Config.environment``, is)."""
        return {f.metadata.get("option", f.name): getattr(values, f.name)
                for part in self.settings for f in dataclasses.fields(part)}

    @property
    def kwargs(self) -> dict[str, str] | None:
        """The keyword arguments the env is registered with."""
        return {"dataset": self.dataset} if self.dataset is not None else None


class SpecField(Mapping[str, Any]):
    """A read-only view of a registry (short name -> :class:`EnvSpec`): short name -> one
    attribute of its spec, for every spec the registry holds when it is read, in the
    registry's order. It keeps nothing of its own, so it cannot drift from the registry."""

    def __init__(self, specs: Mapping[str, EnvSpec], attribute: str) -> None:
        self._specs = specs
        self._attribute = attribute

    def __getitem__(self, name: str) -> Any:
        return getattr(self._specs[name], self._attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return repr(dict(self))
