"""Shared test fixtures.

Tests that need the real data sets take the ``mushroom_data_dir`` or ``mnist_data_dir``
fixture: the directory named by ``$BANDITS_DATA_DIR`` when it holds the data set. Without
it the Mushroom tests use the copy the package ships, and the MNIST tests skip, unless
``$BANDITS_REQUIRE_DATA=1`` (CI sets it), in which case they fail: CI must never pass by
skipping the data tests.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from bandits.core import kernels

# exact mode before anything imports torch, as --exact does: the byte-for-byte reruns of
# the shipped results compare like with like (and the processes the tests start inherit it)
kernels.pin(exact=True)

import pytest  # noqa: E402

from envs.mushroom_data import MUSHROOM_FILE  # noqa: E402


def _data_dir(subdir: str) -> Path | None:
    raw = os.environ.get("BANDITS_DATA_DIR", "")
    return Path(raw) if raw and (Path(raw) / subdir).is_dir() else None


@pytest.fixture(scope="session")
def mushroom_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding ``mushroom/agaricus-lepiota.data``: ``$BANDITS_DATA_DIR``'s,
    else one made from the copy the package ships (so these tests never skip)."""
    if (found := _data_dir("mushroom")) is not None:
        return found
    root = tmp_path_factory.mktemp("packaged-data")
    (root / "mushroom").mkdir()
    (root / "mushroom" / MUSHROOM_FILE.name).write_bytes(
        gzip.decompress(MUSHROOM_FILE.packaged_path.read_bytes()))
    return root


@pytest.fixture
def mnist_data_dir() -> Path:
    """A data directory holding ``mnist/*.gz``: ``$BANDITS_DATA_DIR``'s, else the test skips
    (fails with ``$BANDITS_REQUIRE_DATA=1``, as in CI: CI never passes by skipping them)."""
    if (found := _data_dir("mnist")) is not None:
        return found
    msg = ("MNIST not found: set BANDITS_DATA_DIR=DIR with DIR/mnist/ holding its four "
           "IDX .gz files (train-images-idx3-ubyte.gz, ...) to run this test")
    if os.environ.get("BANDITS_REQUIRE_DATA") == "1":
        pytest.fail(msg + " (BANDITS_REQUIRE_DATA=1 forbids skipping)")
    pytest.skip(msg)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never touch the user's cache (or the network's results) from a test."""
    monkeypatch.setenv("BANDITS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _one_worker_unless_asked(monkeypatch):
    """Runs stay in the test's process (where monkeypatches reach them) unless a test
    asks for ``--workers``: the default would use every core."""
    monkeypatch.setenv("BANDITS_WORKERS", "1")

