"""One point of a sweep's grid (a ``bandits.run`` configuration with all its seeds), and
the sweep's error: what the grid (:mod:`bandits.experiments.grid`) makes and the results
(:mod:`bandits.experiments.sweep_results`) read."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any

from bandits.simulator.settings import config_from


class SweepError(Exception):
    """Bad input to the sweep as a whole: one line, exit status 2."""

STATUS = {0: "ok", 2: "bad setting", 3: "diverged", 130: "interrupted"}
"""A point's status by its run's exit status."""


@dataclass
class Point:
    """One configuration of the grid."""

    name: str  # its directory under DIR/points/
    settings: dict[str, Any]  # the swept settings' values
    argv: list[str]  # the bandits.run command line that runs it (without --out)
    out: str  # its output directory
    base: dict[str, Any] = dataclasses.field(default_factory=dict)  # the shared settings

    def config(self, **changes: Any):
        """Its :class:`bandits.simulator.settings.Config` (raises ``UsageError`` for a bad
        setting)."""
        return config_from({**self.base, **self.settings, "out": self.out, **changes})

    def command(self) -> str:
        return "python -m bandits.run " + shlex.join([*self.argv, "--out", self.out])
