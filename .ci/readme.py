"""The README's commands, read out of its marked blocks, so that CI runs what a user reads.

A block is marked by an HTML comment on the line before its fence::

    <!-- ci: NAME -->
    ```bash
    command one
    command two     # a comment after a command is kept: bash ignores it
    ```

    python3 .ci/readme.py print NAME      # the block's command lines
    python3 .ci/readme.py script NAME     # a bash script running them in order, each timed
    python3 .ci/readme.py script NAME --lines 1   # only the block's first command

The script stops at the first command that fails, with that command's exit status, so a
README command that does not work fails CI. Standard library only: CI runs this before
any virtual environment exists.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


class BlockError(ValueError):
    """The README has no such marked block, or the block is not a bash code block."""


def commands(name: str, readme: Path = README) -> list[str]:
    """The command lines of the block marked ``<!-- ci: name -->`` (blank lines left out)."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    marks = [i for i, line in enumerate(lines) if line.strip() == f"<!-- ci: {name} -->"]
    if len(marks) != 1:
        raise BlockError(f"{readme.name}: {len(marks)} blocks marked '<!-- ci: {name} -->', "
                         "expected exactly 1")
    start = marks[0] + 1
    if start >= len(lines) or not re.fullmatch(r"```(bash|sh)?", lines[start].strip()):
        raise BlockError(f"{readme.name}, line {start + 1}: the block marked {name!r} must "
                         "start with ```bash right after its marker")
    body = []
    for line in lines[start + 1:]:
        if line.strip() == "```":
            break
        if line.strip():
            body.append(line)
    else:
        raise BlockError(f"{readme.name}: the block marked {name!r} has no closing ```")
    if not body:
        raise BlockError(f"{readme.name}: the block marked {name!r} is empty")
    return body


def script(name: str, readme: Path = README, lines: list[int] | None = None,
           times: Path | None = None) -> str:
    """A bash script that runs the block's commands in one shell, echoing and timing each.

    ``lines``: only these of its commands (1-based), in the block's order. ``times``: a
    file to which each command's line and wall seconds are appended (tab-separated).
    """
    body = commands(name, readme)
    if lines:
        if not all(1 <= n <= len(body) for n in lines):
            raise BlockError(f"{readme.name}: the block marked {name!r} has {len(body)} "
                             f"commands; --lines {' '.join(map(str, lines))} is outside them")
        body = [line for n, line in enumerate(body, 1) if n in lines]
    out = ["set -euo pipefail"]
    for line in body:
        out += [f"echo {shlex.quote('$ ' + line)}", "_t0=$SECONDS", line,
                'echo "($((SECONDS - _t0)) s)"']
        if times is not None:
            out.append(f"printf '%s\\t%s\\t%s\\t%s\\n' {shlex.quote(name)} {shlex.quote(line)} "
                       f'"$((SECONDS - _t0))" "$(cut -d" " -f1 /proc/loadavg)" '
                       f">> {shlex.quote(str(times))}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("print", "script"))
    parser.add_argument("name", help="the block's name in its <!-- ci: NAME --> marker")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--lines", type=int, nargs="+", help="only these commands (1-based)")
    parser.add_argument("--times", type=Path, help="append each command's wall seconds here")
    args = parser.parse_args(argv)
    try:
        text = (script(args.name, args.readme, args.lines, args.times) if args.what == "script"
                else "\n".join(commands(args.name, args.readme)) + "\n")
    except (BlockError, OSError) as e:
        print(f"readme.py: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
