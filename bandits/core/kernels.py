"""The math kernels: the libraries' own by default, pinned in exact mode.

torch's own vectorised kernels (ATen), MKL (the BLAS and vector functions of torch's CPU
wheels) and oneDNN each choose their code path by the processor they find, and two paths
round differently: by default, the same seed gives the same bytes on the same machine
and numbers within their standard errors elsewhere (another processor takes other code
paths). That is the fast mode, and every command runs in it unless asked otherwise.

**Exact mode** (``--exact`` on a command, or ``BANDITS_EXACT=1`` for scripts and CI):
every entry point calls :func:`pin` before it imports torch, which sets

- ``ATEN_CPU_CAPABILITY=avx2``: ATen's AVX2 kernels, even where AVX-512 is there;
- ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility in its compatible
  mode, one code path for every x86-64 processor (its ``AVX2`` mode still lets the
  matrix products, ``exp`` and ``log`` differ between an AMD and an Intel processor);
- ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN's kernels at most AVX2;
- ``BANDITS_EXACT=1``: so that the worker processes a command starts pin too.

One function no mode makes the same: MKL's vector square root, which refines an
approximate instruction that each processor model defines for itself. The project's code
takes :func:`bandits.bayes.sqrt` instead (the processor's own, correctly rounded, square
root instruction), in both modes.

What exact mode promises: the same bytes for the same command and torch version on any
x86-64 processor with AVX2, for any number of workers. ``python -m bandits.same_bytes``
checks it against an emulated Intel Haswell. It costs time, mostly for MKL's compatible
mode (``python -m bandits.bench --kernels`` measures it). A variable the user set
already is left as it is (and recorded as it is). Exact mode is for x86-64 only: elsewhere
(ARM) these variables mean nothing and ``--exact`` is refused. It acts only where it is
set before torch is first imported: a program that imports torch first and then asks for
it is refused in one line (:func:`problem`).

``config.json`` records what ran (:func:`record`): the mode, torch's kernel set, the
variables, the mode MKL reports it ran in (``MKL_VERBOSE``'s ``CNR``: a mode MKL ignores,
such as ``AVX2`` on an AMD processor, shows as ``AUTO``) and the processor.
``BANDITS_NATIVE_KERNELS`` (the way out of an old default pin) is no longer read: where it
is set, one line on stderr says so and the command goes on (:func:`requested`).

This module imports only the standard library.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
import sys
from collections.abc import Sequence

PIN: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE",
                       "ONEDNN_MAX_CPU_ISA": "AVX2"}
"""The environment variables of exact mode's pin and their values."""

EXACT = "BANDITS_EXACT"
"""Set to 1 to run every command in exact mode (as ``--exact`` does)."""

FLAG = "--exact"
"""The flag every command that computes results takes for exact mode."""

RETIRED = "BANDITS_NATIVE_KERNELS"
"""No longer read (the libraries' own kernels are the default): where it is set, one line
on stderr says so (once per process tree: it is then taken out of this process's
environment, so the processes it starts say nothing)."""

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")

_pinned_before_torch: bool | None = None  # what pin() found: None if it never pinned


def _switch(name: str) -> bool:
    """An on/off environment variable; anything else is one line (:class:`ValueError`)."""
    value = os.environ.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={os.environ[name]!r} is neither on (1, true, yes) nor off "
                     f"(0, false, no, or unset); set it to 1 or 0")


def x86_64() -> bool:
    """Whether this is an x86-64 processor (exact mode's pin means nothing elsewhere)."""
    return platform.machine().lower() in ("x86_64", "amd64")


def requested(argv: list[str] | None = None) -> bool:
    """Whether exact mode is asked for: ``--exact`` in ``argv`` (default: this process's
    arguments) or ``BANDITS_EXACT`` on (a malformed one is a :class:`ValueError`, one
    line). A :data:`RETIRED` variable is said to be no longer read."""
    if os.environ.pop(RETIRED, None) is not None:
        print(f"warning: {RETIRED} is no longer read (the libraries' own kernels are the "
              f"default; {FLAG} or {EXACT}=1 pins them); going on", file=sys.stderr, flush=True)
    argv = sys.argv[1:] if argv is None else argv
    return FLAG in argv or _switch(EXACT)


def applies() -> bool:
    """Whether this process asks for exact mode (:func:`requested`) on an x86-64 processor."""
    return x86_64() and requested()


def pin(exact: bool | None = None) -> None:
    """Exact mode's pin (see the module docstring) if ``exact`` (default:
    :func:`requested`), before torch loads: its variables that are unset, and
    ``BANDITS_EXACT=1`` for the processes this one starts. Safe to call again; does
    nothing when exact mode is not asked for or on another processor than x86-64."""
    global _pinned_before_torch
    if not (requested() if exact is None else exact) or not x86_64():
        return
    if _pinned_before_torch is None:
        _pinned_before_torch = "torch" not in sys.modules
    os.environ[EXACT] = "1"
    for name, value in PIN.items():
        os.environ.setdefault(name, value)


def in_force() -> bool:
    """Whether this process runs in exact mode: pinned before torch loaded, every
    variable at its pinned value, and torch's kernels at AVX2."""
    # pin() found torch loaded already: not in force. pin() never ran here (None): the
    # variables came with the process (a worker of a pinned command), set when torch loaded
    if not x86_64() or _pinned_before_torch is False:
        return False
    if any(os.environ.get(k) != v for k, v in PIN.items()):
        return False
    import torch

    return torch.backends.cpu.get_cpu_capability() == "AVX2"


SHIPPED_TORCH = "2.13.0+cpu"
"""The torch the shipped exact-mode results were made with (``results/regression``,
``results/mushroom/quick``: their ``config.json`` records it, a test checks): their bytes
are promised under it only."""


def other_torch(version: str) -> str | None:
    """The one line for a command run in exact mode under torch ``version``, where it is
    not :data:`SHIPPED_TORCH` (the shipped results' bytes will not come out); else None."""
    if version == SHIPPED_TORCH:
        return None
    return (f"warning: {FLAG} under torch {version}: the shipped results were made with "
            f"torch {SHIPPED_TORCH} and their bytes are promised under it only, so this run "
            f"need not reproduce them (it goes on; pip install -c constraints.txt gives "
            f"torch {SHIPPED_TORCH.split('+')[0]})")


def warn_other_torch(prog: str) -> None:
    """Say :func:`other_torch` of the torch loaded here on stderr, as the command ``prog``'s
    (once: a command calls it where it starts a run in exact mode, never its workers)."""
    import torch

    if (line := other_torch(torch.__version__)) is not None:
        print(f"{prog}: {line}", file=sys.stderr, flush=True)


EXACT_HELP = ("exact mode: the math kernels pinned before torch loads, so that the same "
              "command gives the same bytes on any x86-64 processor with AVX2 and the same "
              "torch (slower; BANDITS_EXACT=1 does the same; without it, the same bytes on "
              "the same machine)")
"""The help of every command's ``--exact``."""


def settle(exact: bool) -> bool:
    """The mode a command that was given ``--exact`` (or not) runs in: exact where asked
    or where this process is pinned (``BANDITS_EXACT=1``); a :class:`ValueError` (one line,
    :func:`problem`) where it cannot."""
    exact = exact or in_force()
    if (why := problem(exact)) is not None:
        raise ValueError(why)
    return exact


def recorded(argv: Sequence[str], exact: bool) -> list[str]:
    """``argv`` as a command records it: with ``--exact`` where the command runs in exact
    mode without the flag (``BANDITS_EXACT=1``), so that copying the recorded command
    reproduces the bytes."""
    return [*argv, FLAG] if exact and FLAG not in argv else list(argv)


def problem(exact: bool) -> str | None:
    """Why a run asked to be ``exact`` (or not) cannot run in this process as it is, in
    one line, or None: exact mode needs the pin in force; a process pinned for exact mode
    cannot make a run in the default mode."""
    if exact and not x86_64():
        return (f"{FLAG} is for x86-64 processors (this is {platform.machine()}); leave it "
                f"out")
    if exact and not in_force():
        return (f"{FLAG} needs the math kernels pinned before torch loads: give {FLAG} on "
                f"the command line, or set {EXACT}=1 before Python starts (this process "
                f"imported torch without it, or changed a pinned variable)")
    if not exact and in_force():
        return (f"this process runs in exact mode ({FLAG} or {EXACT}=1) and the run is not "
                f"an exact-mode one; leave out {FLAG} and {EXACT}")
    return None


def processor() -> str:
    """The processor, as ``/proc/cpuinfo`` names it: vendor and model name, and ``avx512``
    where it has AVX-512 (where there is no ``/proc/cpuinfo``: ``platform.processor()``)."""
    try:
        first = open("/proc/cpuinfo", encoding="utf-8").read().split("\n\n")[0]
    except OSError:
        return platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    for line in first.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    parts = [fields.get("vendor_id", ""), fields.get("model name", "")]
    if " avx512f " in f" {fields.get('flags', '')} ":
        parts.append("avx512")
    return " ".join(p for p in parts if p) or platform.machine()


@functools.lru_cache(maxsize=8)
def _mkl_reports(cbwr: str | None) -> str | None:
    """The mode MKL reports a matrix product ran in (``MKL_VERBOSE``'s ``CNR``) under
    ``MKL_CBWR=cbwr``, from a child process; None where torch has no MKL or it says
    nothing."""
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    env.update(MKL_VERBOSE="1", **({"MKL_CBWR": cbwr} if cbwr is not None else {}))
    code = "import torch; a = torch.ones(8, 8); torch.mm(a, a)"
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"\bCNR:(\S+)", done.stdout + done.stderr)
    return found.group(1) if found else None


def mkl_mode() -> str | None:
    """The mode MKL runs in here, as MKL reports it (``OFF``: none; ``COMPATIBLE``;
    ``AUTO``; a requested mode MKL ignored shows as what it ran instead)."""
    return _mkl_reports(os.environ.get("MKL_CBWR"))


def record() -> dict[str, object]:
    """What ``config.json`` records of the kernels: the mode (``exact`` where the pin is
    in force, else ``native``), whether the pin is in force, torch's kernel set, each of
    the pin's variables as this process has it (None: unset), the mode MKL reports it
    ran in and the processor."""
    import torch

    exact = in_force()
    return {"mode": "exact" if exact else "native", "pinned": exact,
            "aten": torch.backends.cpu.get_cpu_capability(),
            **{name: os.environ.get(name) for name in PIN},
            "mkl_ran": mkl_mode() if os.environ.get("MKL_CBWR") is not None else "OFF",
            "processor": processor()}
