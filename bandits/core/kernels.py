"""The math kernels pinned before torch loads: the same bytes on every x86-64 processor
with AVX2.

torch's own vectorised kernels (ATen), MKL (the BLAS and vector functions of torch's CPU
wheels) and oneDNN each choose their code path by the processor they find, and two paths
round differently: unpinned, the same seed gives another bandit run on an AVX-512 machine
than on an AVX2 one, or on an Intel processor than on an AMD one. Every entry point
(``python -m bandits.run`` and the others) calls :func:`pin` before it imports torch,
which sets

- ``ATEN_CPU_CAPABILITY=avx2``: ATen's AVX2 kernels, even where AVX-512 is there;
- ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility in its compatible
  mode, one code path for every x86-64 processor (its ``AVX2`` mode still lets the
  matrix products, ``exp`` and ``log`` differ between an AMD and an Intel processor);
- ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN's kernels at most AVX2.

One function no mode makes the same: MKL's vector square root, which refines an
approximate instruction that each processor model defines for itself. The project's code
takes :func:`bandits.bayes.sqrt` instead (the processor's own, correctly rounded, square
root instruction).

A variable the user set already is left as it is (and recorded as it is). The pin is
set only on x86-64: elsewhere (ARM) these variables mean nothing. ``config.json``
records what was in force (:func:`record`) and the processor (:func:`processor`). To let
the libraries choose their fastest kernels instead (other bytes; ``python -m bandits.bench
--kernels`` measures the difference), set ``BANDITS_NATIVE_KERNELS=1``.

What is promised: the same bytes for the same command and torch version under the pin on
any x86-64 processor with AVX2, for any number of workers. ``python -m
bandits.same_bytes`` checks it against an emulated Intel Haswell. The pin acts only where
it is set before torch is first imported: a program that imports torch first and then
calls an entry point's ``main`` runs with whatever kernels torch chose (:func:`record`
says so).

This module imports only the standard library.
"""

from __future__ import annotations

import os
import platform
import sys

PIN: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE",
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


def processor() -> str:
    """The processor, as ``/proc/cpuinfo`` names it: vendor and model name, and ``avx512``
    where it has AVX-512 (where there is no ``/proc/cpuinfo``: ``platform.processor()``)."""
    try:
        first = open("/proc/cpuinfo", encoding="utf-8").read().split("\n\n")[0]
    except OSError:
        return platform.processor() or platform.machine()
    fields = {}
    for line in first.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    parts = [fields.get("vendor_id", ""), fields.get("model name", "")]
    if " avx512f " in f" {fields.get('flags', '')} ":
        parts.append("avx512")
    return " ".join(p for p in parts if p) or platform.machine()


def record() -> dict[str, object]:
    """What ``config.json`` records of the kernels: whether the pin is in force, torch's
    kernel set, and each of the pin's variables as this process has it (None: unset)."""
    import torch

    return {"pinned": in_force(), "aten": torch.backends.cpu.get_cpu_capability(),
            **{name: os.environ.get(name) for name in PIN}, "processor": processor()}
