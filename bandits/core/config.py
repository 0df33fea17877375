"""Settings as dataclasses, and the command line made from them, once for every entry point.

A setting is a dataclass field made with :func:`setting`: its default, its help text
and, for numbers, its allowed range. :func:`build_parser` turns such a dataclass into
an argparse parser with one ``--kebab-case`` flag per field, :func:`given_flags` says
which flags a command line names, :func:`check_ranges` checks values against the
ranges, and :func:`refuse_with_resume` names the first flag a ``--resume`` may not
change. Every entry point declares its settings this way; plain argparse, no patching.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Collection, Sequence
from typing import Any

from bandits.core.version import __version__


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
    command's settings by :func:`compose`). ``option``: the keyword an environment
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


def compose(name: str, parts: Sequence[type], doc: str, module: str,
            filled_later: Collection[str] = (), cli_only: bool = False) -> type:
    """One settings dataclass made of the fields of the dataclasses ``parts``, in their
    order: how a command's settings are put together from the run's own, the
    environments' and the agents' (each declared where it belongs). A part listed twice
    counts once; a setting declared by two parts is a mistake, named at import.
    ``filled_later``: settings whose default becomes ``None`` (a preset fills them).
    ``cli_only``: leave out the settings declared with ``cli=False``. The class is named
    ``name`` in ``module`` (where it must be importable by that name)."""
    fields, owner = [], {}
    for part in dict.fromkeys(parts):
        for f in dataclasses.fields(part):
            if cli_only and not f.metadata.get("cli", True):
                continue
            if f.name in owner:
                raise TypeError(f"the setting {f.name!r} is declared by both "
                                f"{owner[f.name].__qualname__} and {part.__qualname__}")
            owner[f.name] = part
            if f.name in filled_later:
                default = (f.default if f.default_factory is dataclasses.MISSING
                           else f.default_factory())
                meta = {**f.metadata, "type": f.metadata.get("type", type(default))}
                new = dataclasses.field(default=None, metadata=meta)
            elif f.default_factory is not dataclasses.MISSING:
                new = dataclasses.field(default_factory=f.default_factory, metadata=f.metadata)
            else:
                new = dataclasses.field(default=f.default, metadata=f.metadata)
            fields.append((f.name, f.type, new))
    cls = dataclasses.make_dataclass(name, fields)
    cls.__doc__, cls.__module__ = doc, module
    return cls


def flag(name: str) -> str:
    """The command-line flag of a setting: ``noise_sigma`` -> ``--noise-sigma``."""
    return "--" + name.replace("_", "-")


def option(f: dataclasses.Field) -> str:
    """The flag that gives the field ``f``: ``--no-NAME`` for a switch that is on by
    default, else :func:`flag`."""
    if f.default is True:
        return "--no-" + f.name.replace("_", "-")
    return flag(f.name)


def show(value) -> str:
    """A default as the help text shows it (lists space-separated)."""
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


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


def first_paragraph(doc: str | None) -> str:
    """A module docstring's first paragraph as one line (the start of a ``--help``)."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def with_flags(base: Sequence[str], extra: Sequence[str]) -> list[str]:
    """The command line ``base`` with ``extra`` added, each flag given once: a flag of
    ``extra`` replaces ``base``'s value of it (a flag given twice is an error)."""
    named = {a.split("=")[0] for a in extra if a.startswith("--")}
    out, skip = [], False
    for a in base:
        if skip and not a.startswith("--"):
            continue
        skip = a.split("=")[0] in named
        if not skip:
            out.append(a)
    return [*out, *extra]


class PlainParser(argparse.ArgumentParser):
    """An argparse parser that records the flags each parse was given (``given``): a flag
    given twice is an error (argparse would keep the last: ``--agent bbb --agent greedy``
    would run greedy alone). Its errors are argparse's own (usage, one line, status 2)."""

    def parse_known_args(self, args=None, namespace=None):
        self.given = set()
        return super().parse_known_args(args, namespace)


class Parser(PlainParser):
    """A :class:`PlainParser` whose errors raise :class:`UsageError` (one line, no usage
    dump) for the entry point to report."""

    def error(self, message: str):
        raise UsageError(f"{message} (see --help)")


def _given_once(parser: argparse.ArgumentParser, dest: str, option_string: str | None) -> None:
    given = getattr(parser, "given", None)
    if given is None:  # a parser of another class records nothing
        return
    if dest in given:
        parser.error(f"{option_string or dest} is given twice; give it once "
                     "(with several values where it takes a list)")
    given.add(dest)


class Store(argparse.Action):
    """A flag that takes its value (or values), given at most once per command line."""

    def __call__(self, parser, namespace, values, option_string=None):
        _given_once(parser, self.dest, option_string)
        setattr(namespace, self.dest, values)


class Switch(argparse.Action):
    """A flag without a value setting ``const`` (False for a ``--no-NAME``), given once."""

    def __init__(self, option_strings, dest, const=True, default=None, required=False,
                 help=None):  # noqa: A002 - argparse's own keyword
        super().__init__(option_strings, dest, nargs=0, const=const, default=default,
                         required=required, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        _given_once(parser, self.dest, option_string)
        setattr(namespace, self.dest, self.const)


def build_parser(cls, prog: str, description: str,
                 presets: dict[str, dict] | None = None,
                 argument_default: Any = None,
                 parser_class: type[argparse.ArgumentParser] = Parser,
                 parse_choices: bool = True) -> argparse.ArgumentParser:
    """A parser with one ``--kebab-case`` flag per field of the dataclass ``cls``: a bool
    field is a switch (one that is on by default a ``--no-NAME`` flag, whose help says
    what giving it does), a grid field takes one or more values, a positional field is
    an argument without a flag, a field's range and its presets' values are added to its
    help, and its default is shown (unless its help states it). Each flag is given at
    most once (:class:`Store`, :class:`Switch`).
    ``argument_default=argparse.SUPPRESS`` leaves unset flags out of the parsed
    namespace. ``parser_class``: :class:`Parser` (errors raise :class:`UsageError`), or
    :class:`PlainParser` (``argparse.ArgumentParser`` is taken as it) for argparse's own
    errors. ``parse_choices=False``: a field's ``choices`` are left to
    :func:`check_choices` after parsing (the command's own messages)."""
    if parser_class is argparse.ArgumentParser:
        parser_class = PlainParser
    p = parser_class(prog=prog, description=description, argument_default=argument_default,
                     epilog=f"bbb-bandits {__version__}")
    p.add_argument("--version", action="version", version=f"bbb-bandits {__version__}")
    suppress = argument_default is argparse.SUPPRESS
    for f in dataclasses.fields(cls):
        meta = dict(f.metadata)
        help_ = meta.pop("help")
        for key in ("allow_inf", "cli", "option", *DECLARED,
                    *(() if parse_choices else ("choices",))):
            meta.pop(key, None)
        grid = meta.pop("grid", False)
        if meta.pop("positional", False):
            p.add_argument(f.name, help=help_, action=Store, **meta)
            continue
        if help_ is argparse.SUPPRESS:
            meta.setdefault("action", Store)
            p.add_argument(flag(f.name), help=argparse.SUPPRESS, **meta,
                           **({} if suppress else {"default": f.default}))
            continue
        bounds = meta.pop("range", None)
        if bounds is not None and bounds != COUNT:
            help_ += f"; in {show_range(bounds)}"
        in_presets = [n for n in presets or {} if f.name in presets[n]]
        if in_presets:
            help_ += " [from the preset: " + ", ".join(
                f"{n}: {show(presets[n][f.name])}" for n in in_presets) + "]"
        if f.default is True:  # its help says what the --no-NAME flag does
            p.add_argument(option(f), dest=f.name, action=Switch, const=False, help=help_,
                           **({} if suppress else {"default": True}))
            continue
        stated = "(default:" in help_  # the help says the default in its own words
        if isinstance(f.default, bool):
            p.add_argument(flag(f.name), action=Switch,
                           help=help_ + ("" if stated else " (default: off)"),
                           **({} if suppress else {"default": False}))
            continue
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        meta.setdefault("type", type(default[0] if isinstance(default, tuple) else default))
        if grid:
            meta["nargs"] = "+"
            help_ += "; several values: one model per value"
        if default is not None and default != [] and not stated:
            help_ += f" (default: {show(default)})"
        meta.setdefault("action", Store)
        p.add_argument(flag(f.name), help=help_, **meta,
                       **({} if suppress else {"default": default}))
    return p


def given_values(make_parser: Callable[[], argparse.ArgumentParser],
                 argv: Sequence[str] | None) -> dict[str, Any]:
    """The settings named on the command line ``argv``, with their parsed values (none
    filled by a default)."""
    p = make_parser()
    values = vars(p.parse_args(argv))
    return {k: v for k, v in values.items() if k in p.given}


def given_flags(make_parser: Callable[[], argparse.ArgumentParser],
                argv: Sequence[str] | None) -> set[str]:
    """The settings named on the command line ``argv`` (not filled by a default)."""
    return set(given_values(make_parser, argv))


def refuse_with_resume(given: Collection[str], allowed: Collection[str],
                       cls=None) -> None:
    """One line naming the first flag of ``given`` that is not in ``allowed`` (the
    settings that may be given beside ``--resume`` because they do not change the
    results; the hidden ones are left out of the message). With the settings' dataclass
    ``cls``, the allowed ones are listed in its order, each by its own flag
    (``--no-NAME`` for a switch that is on by default)."""
    refused = sorted(set(given) - set(allowed))
    if refused:
        shown: dict[str, str] = {}
        if cls is not None:
            fields = dataclasses.fields(cls)
            allowed = [f.name for f in fields if f.name in allowed]
            shown = {f.name: option(f) for f in fields}
        may = ", ".join(shown.get(n, flag(n)) for n in allowed
                        if n not in ("resume", "progress_file"))
        first = shown.get(refused[0], flag(refused[0]))
        raise UsageError(f"{first} cannot be given with --resume: it would change "
                         "the results (--resume takes every setting from the run's "
                         f"config.json; only {may} may be added)")


def to_flags(settings: dict[str, Any]) -> list[str]:
    """Settings as the command line that gives them (``True`` is a bare switch, a list
    follows its flag): how a run made from settings records its command."""
    argv: list[str] = []
    for name, value in settings.items():
        if isinstance(value, bool):
            if value:
                argv.append(flag(name))
        elif isinstance(value, (list, tuple)):
            argv += [flag(name), *map(str, value)]
        else:
            argv += [flag(name), str(value)]
    return argv


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
        kind = meta.get("type") or type(default[0] if isinstance(default, tuple) else default)
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
