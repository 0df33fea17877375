"""What a run's command line gives beyond its flags' own values: a worker's settings file
(the run's settings as they are, written by :mod:`bandits.simulator.parallel`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from bandits.core.config import UsageError, convert


def per_process(cls: type) -> frozenset[str]:
    """The settings of the dataclass ``cls`` that each process has of its own (declared
    ``per_process=True``): a worker's own command line gives them; every other setting
    comes from the run's settings file (``--settings-file``)."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get("per_process"))


def read_settings_file(path: Path, cls: type) -> dict[str, Any]:
    """The settings of the run in the JSON file ``path`` (every field of ``cls`` but
    those :func:`per_process` names), converted as the command line converts them; one
    line (:class:`UsageError`) where it cannot be read."""
    try:
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--settings-file {path}: cannot be read ({e})") from None
    own = per_process(cls)
    return convert(cls, {k: v for k, v in saved.items() if k not in own and v is not None})
