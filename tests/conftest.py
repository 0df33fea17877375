"""Shared test fixtures.

Tests that need the real data sets take the ``data_dir`` fixture. It is the
directory named by ``$BANDITS_DATA_DIR``; when that is unset or lacks the data,
the test is skipped, unless ``$BANDITS_REQUIRE_DATA=1`` (CI sets it), in which
case it fails: CI must never pass by skipping the data tests.
"""

from __future__ import annotations

import os
from pathlib import Path

from bandits.core import kernels

# exact mode before anything imports torch, as --exact does: the byte-for-byte reruns of
# the shipped results compare like with like (and the processes the tests start inherit it)
kernels.pin(exact=True)

import pytest  # noqa: E402


def _data_dir_or_skip(subdir: str) -> Path:
    raw = os.environ.get("BANDITS_DATA_DIR", "")
    d = Path(raw) if raw else None
    if d is not None and (d / subdir).is_dir():
        return d
    msg = f"real data not available: set BANDITS_DATA_DIR to a directory holding {subdir}/"
    if os.environ.get("BANDITS_REQUIRE_DATA") == "1":
        pytest.fail(msg + " (BANDITS_REQUIRE_DATA=1 forbids skipping)")
    pytest.skip(msg)


@pytest.fixture
def mushroom_data_dir() -> Path:
    """A data directory holding ``mushroom/agaricus-lepiota.data``."""
    return _data_dir_or_skip("mushroom")


@pytest.fixture
def mnist_data_dir() -> Path:
    """A data directory holding ``mnist/*.gz``."""
    return _data_dir_or_skip("mnist")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never touch the user's cache (or the network's results) from a test."""
    monkeypatch.setenv("BANDITS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _one_worker_unless_asked(monkeypatch):
    """Runs stay in the test's process (where monkeypatches reach them) unless a test
    asks for ``--workers``: the default would use every core."""
    monkeypatch.setenv("BANDITS_WORKERS", "1")

