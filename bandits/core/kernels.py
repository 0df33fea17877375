"""The same bytes on every x86-64 machine with AVX2: the math kernels pinned before torch
loads.

torch's own vectorised kernels (ATen), MKL (the BLAS of torch's CPU wheels) and oneDNN
each choose their code path by the processor they find, and two paths round differently:
the same seed then gives another bandit run on an AVX-512 machine than on an AVX2 one,
or on an Intel processor than on an AMD one, where MKL chooses differently. Every
entry point (``python -m bandits.run`` and the others) calls :func:`pin` before it
imports torch, which sets

- ``ATEN_CPU_CAPABILITY=avx2``: ATen's AVX2 kernels, even where AVX-512 is there;
- ``MKL_CBWR=AVX2``: MKL's conditional numerical reproducibility, its AVX2 path on every
  processor that has AVX2;
- ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN's kernels at most AVX2.

A variable the user set already is left as it is (and recorded as it is). The pin is
set only on x86-64: elsewhere (ARM) these variables mean nothing. ``config.json``
records what was in force (:func:`record`). To let the libraries choose their fastest
kernels instead (other bytes; ``python -m bandits.bench --kernels`` measures the
difference), set ``BANDITS_NATIVE_KERNELS=1``.

What the pin promises: the same bytes for the same command and torch version on any
x86-64 processor with AVX2, for any number of workers. Not promised: another torch (or
MKL) version, a GPU, a processor without AVX2, ARM. The pin acts only where it is set
before torch is first imported: a program that imports torch first and then calls an
entry point's ``main`` runs with whatever kernels torch chose (:func:`record` says so).

This module imports only the standard library.
"""

from __future__ import annotations

import os
import platform
import sys

PIN: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2",
                       "ONEDNN_MAX_CPU_ISA": "AVX2"}
"""The environment variables of the pin and their values."""

NATIVE = "BANDITS_NATIVE_KERNELS"
"""Set to 1 to leave the kernels to the libraries (faster on AVX-512, other bytes)."""

_pinned_before_torch: bool | None = None  # what pin() found: None if it was never called


def applies() -> bool:
    """Whether the pin is set on this machine: an x86-64 processor and no
    ``BANDITS_NATIVE_KERNELS=1``."""
    return (platform.machine().lower() in ("x86_64", "amd64")
            and os.environ.get(NATIVE, "") not in ("1", "true", "yes"))


def pin() -> None:
    """Set the pin's variables that are unset (see the module docstring), before torch
    loads. Safe to call again; does nothing where :func:`applies` is false."""
    global _pinned_before_torch
    if not applies():
        return
    if _pinned_before_torch is None:
        _pinned_before_torch = "torch" not in sys.modules
    for name, value in PIN.items():
        os.environ.setdefault(name, value)


def in_force() -> bool:
    """Whether this process runs under the pin: set before torch loaded, every variable
    at its pinned value, and torch's kernels at AVX2."""
    if not applies() or not _pinned_before_torch:
        return False
    if any(os.environ.get(k) != v for k, v in PIN.items()):
        return False
    import torch

    return torch.backends.cpu.get_cpu_capability() == "AVX2"


def record() -> dict[str, object]:
    """What ``config.json`` records of the kernels: whether the pin is in force, torch's
    kernel set, and each of the pin's variables as this process has it (None: unset)."""
    import torch

    return {"pinned": in_force(), "aten": torch.backends.cpu.get_cpu_capability(),
            **{name: os.environ.get(name) for name in PIN}}
