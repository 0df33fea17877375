"""The one rule for tests that compare a rerun's bytes with a shipped result's: those bytes
are promised only under the torch the result was made with (its ``config.json``'s
``versions.torch``), so under another torch such a test skips, with one line naming both
versions; with ``$BANDITS_REQUIRE_PINNED=1`` (CI installs the pinned torch and sets it) it
fails instead: CI never passes by skipping them. No test depends on which torch a user
happened to install.

Nothing here imports a test module: they import this one (``from pinned import ...``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REQUIRE = "BANDITS_REQUIRE_PINNED"
"""Set to 1 to turn a skip for another torch into a failure (CI)."""


def recorded_torch(config: Path) -> str | None:
    """The torch version a shipped result's ``config.json`` records (None: none)."""
    versions = json.loads(Path(config).read_text()).get("versions") or {}
    return versions.get("torch")


def needs_recorded_torch(config: Path) -> None:
    """Skip the calling test (fail it under ``$BANDITS_REQUIRE_PINNED=1``) unless the
    installed torch is the one the shipped result of ``config`` (its ``config.json``)
    records."""
    import torch

    made, here = recorded_torch(config), torch.__version__
    if made == here:
        return
    result = Path(config).resolve().parent
    name = result.relative_to(REPO) if result.is_relative_to(REPO) else result
    why = (f"{name} was made with torch {made} and its bytes are promised under that torch "
           f"only; this is torch {here}")
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{why} ({REQUIRE}=1: install torch {made})")
    pytest.skip(why)
