"""The command line made from settings dataclasses (:mod:`bandits.core.config`), once
for every entry point: :func:`build_parser` turns such a dataclass into an argparse
parser with one ``--kebab-case`` flag per field, each given at most once;
:func:`given_flags` says which flags a command line names, :func:`refuse_with_resume`
names the first flag a ``--resume`` may not change, and :func:`to_flags` writes settings
back as the command line that gives them. Plain argparse, no patching.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any

from bandits.core.config import COUNT, DECLARED, UsageError, flag, show_range
from bandits.core.version import VERSION_LINE


def option(f: dataclasses.Field) -> str:
    """The flag that gives the field ``f``: ``--no-NAME`` for a switch that is on by
    default, else :func:`flag`."""
    if f.default is True:
        return "--no-" + f.name.replace("_", "-")
    return flag(f.name)


def show(value) -> str:
    """A default as the help text shows it (lists space-separated)."""
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


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

    given: set[str]

    def parse_known_args(self, args=None, namespace=None):
        self.given = set()
        return super().parse_known_args(args, namespace)


class Parser(PlainParser):
    """A :class:`PlainParser` whose errors raise :class:`UsageError` (one line, no usage
    dump), said as every command says bad input (:func:`bandits.core.startup.handled`)."""

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
                 parse_choices: bool = True) -> PlainParser:
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
                     epilog=VERSION_LINE)
    assert isinstance(p, PlainParser)  # Parser or PlainParser: it records what was given
    p.add_argument("--version", action="version", version=VERSION_LINE)
    for f in dataclasses.fields(cls):
        _add_field(p, f, presets or {}, argument_default is argparse.SUPPRESS, parse_choices)
    return p


def _add_field(p: argparse.ArgumentParser, f: dataclasses.Field, presets: dict[str, dict],
               suppress: bool, parse_choices: bool) -> None:
    """The argument of the field ``f`` (see :func:`build_parser`); ``suppress``: no
    defaults in the parsed namespace."""
    meta = dict(f.metadata)
    help_ = meta.pop("help")
    for key in ("allow_inf", "cli", "option", *DECLARED,
                *(() if parse_choices else ("choices",))):
        meta.pop(key, None)
    grid = meta.pop("grid", False)
    if meta.pop("positional", False):
        p.add_argument(f.name, help=help_, action=Store, **meta)
        return
    if help_ is argparse.SUPPRESS:
        meta.setdefault("action", Store)
        p.add_argument(flag(f.name), help=argparse.SUPPRESS, **meta,
                       **_default(f.default, suppress))
        return
    help_ = _with_range_and_presets(help_, f.name, meta.pop("range", None), presets)
    if f.default is True:  # its help says what the --no-NAME flag does
        p.add_argument(option(f), dest=f.name, action=Switch, const=False, help=help_,
                       **_default(True, suppress))
        return
    # the help says the default in its own words, or the presets give it
    stated = "(default:" in help_ or any(f.name in values for values in presets.values())
    if isinstance(f.default, bool):
        p.add_argument(flag(f.name), action=Switch,
                       help=help_ + ("" if stated else " (default: off)"),
                       **_default(False, suppress))
        return
    default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
    meta.setdefault("type", type(default[0] if isinstance(default, tuple) else default))
    if grid:
        meta["nargs"] = "+"
        help_ += "; several values: one model per value"
    if default is not None and default != [] and not stated:
        help_ += f" (default: {show(default)})"
    meta.setdefault("action", Store)
    p.add_argument(flag(f.name), help=help_, **meta, **_default(default, suppress))


def _with_range_and_presets(help_: str, name: str, bounds: Any,
                            presets: dict[str, dict]) -> str:
    """A field's help with its range (a count's goes without saying) and the values the
    presets give it."""
    if bounds is not None and bounds != COUNT:
        help_ += f"; in {show_range(bounds)}"
    in_presets = [n for n in presets if name in presets[n]]
    if in_presets:
        help_ += " [from the preset: " + ", ".join(
            f"{n}: {show(presets[n][name])}" for n in in_presets) + "]"
    return help_


def _default(value: Any, suppress: bool) -> dict[str, Any]:
    """The ``default=`` keyword of an argument, none where unset flags are left out of
    the parsed namespace (``suppress``)."""
    return {} if suppress else {"default": value}


def given_values(make_parser: Callable[[], PlainParser],
                 argv: Sequence[str] | None) -> dict[str, Any]:
    """The settings named on the command line ``argv``, with their parsed values (none
    filled by a default)."""
    p = make_parser()
    values = vars(p.parse_args(argv))
    return {k: v for k, v in values.items() if k in p.given}


def given_flags(make_parser: Callable[[], PlainParser],
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
