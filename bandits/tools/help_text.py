"""``python -m bandits.tools.help_text [--check]``: the ``--help`` text of every command,
stored in the package (:data:`bandits.core.startup.HELP`) so that ``--help`` answers
without importing torch. Each text is what the command's own parser prints, 80 columns
wide; with ``--check`` nothing is written and the exit status is 1, naming the commands,
when a stored text differs from its parser's (the tests check it so)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
from collections.abc import Iterator, Sequence
from importlib.metadata import distribution
from pathlib import Path

from bandits.core.startup import HELP, Command

WIDTH = "80"
"""The columns the stored texts are formatted for (argparse reads ``COLUMNS``)."""
PYTHON_FILE = "python.txt"
"""The Python (``3.11``) whose argparse formatted the stored texts: another formats some
lines differently, so the texts are checked only under that one."""


def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def commands() -> list[Command]:
    """Every command of the installed project: its console scripts' entries."""
    out = []
    for ep in distribution("bbb-bandits").entry_points:
        if ep.group == "console_scripts":
            module, _, name = ep.value.partition(":")
            out.append(getattr(importlib.import_module(module), name).__self__)
    return sorted(out, key=lambda c: c.prog)


@contextlib.contextmanager
def _columns(width: str) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def parser_help(command: Command) -> str:
    """What ``command``'s parser prints for ``--help``, :data:`WIDTH` columns wide."""
    out = io.StringIO()
    with _columns(WIDTH), contextlib.redirect_stdout(out):
        try:
            command.main(["--help"])
        except SystemExit:
            pass
    return out.getvalue()


def stale() -> dict[str, str]:
    """Per command whose stored text is missing or differs from its parser's: the
    parser's text."""
    found = {}
    version = Path(HELP) / PYTHON_FILE
    if not version.is_file() or version.read_text(encoding="utf-8").strip() != python_version():
        found[PYTHON_FILE] = python_version() + "\n"
    for command in commands():
        text, path = parser_help(command), Path(HELP) / f"{command.prog}.txt"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            found[command.prog] = text
    return found


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv not in ([], ["--check"]):
        print("bandits.tools.help_text: error: give no argument, or --check", file=sys.stderr)
        return 2
    found = stale()
    if argv == ["--check"]:
        if found:
            print(f"bandits.tools.help_text: stored --help differs from the parser of: "
                  f"{', '.join(found)} (write them: python -m bandits.tools.help_text)",
                  file=sys.stderr)
        return 1 if found else 0
    Path(HELP).mkdir(exist_ok=True)
    for name, text in found.items():
        file = name if name == PYTHON_FILE else f"{name}.txt"
        (Path(HELP) / file).write_text(text, encoding="utf-8")
    print(f"bandits.tools.help_text: written: {', '.join(found) or 'none (all current)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
