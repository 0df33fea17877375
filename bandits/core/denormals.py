"""Denormal floats flushed to zero while the simulator runs.

Adam's first moment of a weight whose gradient is mostly zero (the first-layer weights of
a pixel that is rarely lit, or of a Mushroom feature that is rarely set) decays by
``beta1 = 0.9`` per update after each nonzero gradient, and passes through the denormal
range (below about 1.2e-38 in float32) on its way to zero. x86 processors do arithmetic on
denormals many times slower: on MNIST with the papers' disjoint inputs a fifth of the
first moments were denormal by round 1,000, which slowed Adam's step there
(``results/bench/agents-per-step-papers``). Flushed to zero, such a number becomes the
zero it was decaying to; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def flushing() -> bool:
    """Whether denormal floats are flushed to zero now (the processor's setting)."""
    tiny = torch.tensor([1e-39], dtype=torch.float32)  # a denormal, or 0 if flushed
    return bool((tiny * 1.0).item() == 0.0)


@contextmanager
def flushed() -> Iterator[None]:
    """Flush denormal floats to zero on the CPU inside the block (where the processor
    supports it), and put the earlier setting back after it."""
    before = flushing()
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(before)
