"""Python's garbage collector while the simulator's loop runs.

A profile of the loop put the collector at 10-13 % of all CPU time: its full collections
scan every object the run made before the loop (networks, optimisers, buffers, data), and
none of them is garbage. Inside :func:`quiet` those objects are frozen (``gc.freeze``: the
collector no longer scans them) and the youngest generation is collected every 50,000
allocations instead of 700. Reference counting still frees every tensor a step drops at
once; only cycles wait a little longer. Nothing a run computes changes.
``BANDITS_GC=python`` keeps Python's own settings (``python -m bandits.bench --gc``
times the two side by side).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

VARIABLE = "BANDITS_GC"
THRESHOLD = (50_000, 20, 100)
"""The collector's thresholds inside the loop (Python's default: 700, 10, 10)."""


def keeps_python_settings() -> bool:
    """Whether ``$BANDITS_GC`` asks for Python's own collector settings (``python``);
    unset or empty: the quiet loop. Anything else is refused in one line."""
    value = os.environ.get(VARIABLE, "").strip().lower()
    if value not in ("", "quiet", "python"):
        raise ValueError(f"{VARIABLE}={os.environ[VARIABLE]!r}: use 'python' (Python's own "
                         "collector settings in the loop) or leave it unset")
    return value == "python"


@contextmanager
def quiet() -> Iterator[None]:
    """Freeze what exists and collect rarely inside the block; put Python's settings back
    after it (the frozen objects become collectable again)."""
    if keeps_python_settings():
        yield
        return
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
