"""Argument checks shared by the modules of :mod:`bandits.bayes`."""

from __future__ import annotations

import math
import numbers


def is_real(value: object) -> bool:
    """Whether ``value`` is a real number, numpy scalars included (``np.float32`` is not a
    ``float`` subclass, so ``isinstance(value, (int, float))`` would miss it)."""
    return isinstance(value, numbers.Real)


def is_count(value: object) -> bool:
    """Whether ``value`` is a positive integer, numpy integers included; ``True`` is not."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) > 0


def check_positive(name: str, value: float) -> float:
    """``value`` as a ``float`` if it is a positive finite number, else ``ValueError``."""
    if not (is_real(value) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)
