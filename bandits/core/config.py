"""Settings as dataclasses, declared once for every entry point.

A setting is a dataclass field made with :func:`setting`: its default, its help text,
for numbers its allowed range, and its own properties (whether it decides results,
whether each process has its own, under which other setting it acts). A command's
settings are plain dataclasses declared in source, grouped by their owner.
:func:`check_ranges` and :func:`check_choices` check values against their declarations,
and :func:`convert` takes values given in a file or in code as the command line would.
The command line made from such a dataclass: :mod:`bandits.core.command_line`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any


class UsageError(Exception):
    """Bad input: reported as one line with exit status 2."""


class OPEN(float):
    """An open end of a setting's range: ``(OPEN(0), 1)`` is ``0 < v <= 1``."""


BIG = 10**9  # a count above this is a typo, not a setting
COUNT = (1, BIG)  # a positive integer
SIGMA = (1e-8, 1e4)  # any standard deviation of a model: finite in float32 arithmetic
POSITIVE = (1e-8, 1e8)
DECLARED = ("resume", "per_process", "acts_when", "preset_everywhere")  # (setting())


def setting(default, help: str, range: tuple | None = None,  # noqa: A002
            grid: bool = False, allow_inf: bool = False, positional: bool = False,
            cli: bool = True, option: str | None = None, **kw):
    """A setting: its default, its CLI help and, for numbers, its allowed ``range``
    ``(low, high)``: both ends included, an end written as :class:`OPEN` excluded; a
    value must be finite unless ``allow_inf`` (then an infinite end admits itself).
    ``grid``: the setting takes one or more values (a model per value). ``positional``:
    an argument named by its place, not by a flag (``DIR``; with ``nargs="+"``, one or
    more). ``cli=False``: a setting that code sets and no flag gives (left out of a
    command's settings). ``option``: the keyword an environment
    takes the setting as, where it differs from the setting's name. A list default is
    copied for every instance. The setting's own properties, declared here and read from
    its metadata by what needs them: ``resume=True``, it may be given beside ``--resume``
    (it decides no result, so the identity leaves it out); ``per_process=True``, each
    process's own (a worker gets it on its command line, not from the run's settings);
    ``acts_when=(condition, fix)``, it acts only where ``condition(settings as a dict)``
    holds, and is refused elsewhere, saying ``fix``; ``preset_everywhere=True``, an agent's
    own setting that a preset's value fills in every run, even one listing no agent that
    reads it (else such a run keeps the setting's own default). Other keywords go to
    ``argparse.add_argument`` (``choices``, ``nargs``, ``type``, ``metavar``, ``action``)."""
    flags = {"grid": grid, "allow_inf": allow_inf, "positional": positional}
    meta = {"help": help, **kw, **{k: True for k, on in flags.items() if on},
            **({} if range is None else {"range": range}), **({} if cli else {"cli": False}),
            **({} if option is None else {"option": option})}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def flag(name: str) -> str:
    """The command-line flag of a setting: ``noise_sigma`` -> ``--noise-sigma``."""
    return "--" + name.replace("_", "-")


def show_range(bounds: tuple) -> str:
    """``(0, 1)``, ``[1, 1024]``: open ends in round brackets."""
    def num(x) -> str:
        return f"{x:,}" if isinstance(x, int) else f"{x:g}"

    low, high = bounds
    return (("(" if isinstance(low, OPEN) else "[") + num(low) + ", " + num(high)
            + (")" if isinstance(high, OPEN) or high == math.inf else "]"))


def check_range(name: str, v, bounds: tuple, allow_inf: bool = False,
                error: type[Exception] = UsageError) -> None:
    """One line naming ``name`` (a flag) and its allowed range when ``v`` lies outside
    ``bounds`` (or is not finite, unless ``allow_inf``), raised as ``error``."""
    low, high = bounds
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and (
        not math.isnan(v) if allow_inf else math.isfinite(v))
    if ok:
        ok = (v > low if isinstance(low, OPEN) else v >= low) and (
            v < high if isinstance(high, OPEN) else v <= high)
    if ok:
        return
    if isinstance(v, float) and not math.isfinite(v) and not allow_inf:
        raise error(f"{name} must be a finite number in {show_range(bounds)}, got {v}")
    if bounds == COUNT:
        raise error(f"{name} must be a positive integer (at most {BIG:,}), got {v}")
    raise error(f"{name} must be in {show_range(bounds)}, got {v}")


def check_ranges(settings, error: type[Exception] = UsageError) -> None:
    """Every field of the dataclass instance ``settings`` that declares a range (each
    element of a list), raised as ``error``; ``None`` is a default decided later."""
    for f in dataclasses.fields(settings):
        if "range" not in f.metadata:
            continue
        value = getattr(settings, f.name)
        if value is None:
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            check_range(flag(f.name), v, f.metadata["range"], "allow_inf" in f.metadata, error)


def check_choices(settings, error: type[Exception] = UsageError) -> None:
    """Every field of the dataclass instance ``settings`` that declares ``choices`` (each
    element of a list): one line naming the flag, its choices and the value, raised as
    ``error``. ``None`` is a default decided later and passes."""
    for f in dataclasses.fields(settings):
        choices = f.metadata.get("choices")
        value = getattr(settings, f.name)
        if choices is None or value is None:
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v not in choices:
                names = [repr(c) for c in choices]
                raise error(f"{flag(f.name)} must be one of {', '.join(names[:-1])} or "
                            f"{names[-1]}, got {v!r}")


def convert(cls, settings: dict[str, Any]) -> dict[str, Any]:
    """Settings given as values (from a TOML file or code) converted as the command line
    would convert their text: each field's ``type``, a list for ``nargs``, ``choices``
    checked, a switch only ``True``/``False``. One line names the first bad one."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for name, value in settings.items():
        f = fields.get(name)
        if f is None:
            raise UsageError(f"unknown setting {name!r}")
        meta = f.metadata
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise UsageError(f"argument {flag(name)}: a switch takes true or false, "
                                 f"got {value!r}")
            out[name] = value
            continue
        kind: Callable[[Any], Any] = (meta.get("type")
                                      or type(default[0] if isinstance(default, tuple)
                                              else default))
        many = "nargs" in meta
        values = list(value) if many and isinstance(value, (list, tuple)) else [value]
        if not many and isinstance(value, (list, tuple)):
            raise UsageError(f"argument {flag(name)}: takes one value, got {list(value)}")
        converted = []
        for v in values:
            if kind is int and (isinstance(v, bool) or (isinstance(v, float) and v != int(v))):
                raise UsageError(f"argument {flag(name)}: invalid int value: '{v}'")
            try:
                c = kind(v)
            except (TypeError, ValueError):
                raise UsageError(f"argument {flag(name)}: invalid {kind.__name__} value: "
                                 f"'{v}'") from None
            if "choices" in meta and c not in meta["choices"]:
                choose = ", ".join(repr(x) for x in meta["choices"])
                raise UsageError(f"argument {flag(name)}: invalid choice: {c!r} (choose from "
                                 f"{choose})")
            converted.append(c)
        out[name] = converted if many else converted[0]
    return out
