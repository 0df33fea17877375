"""The skeleton every command's ``main`` shares: its settings parsed and checked, a usage
error said in one line (exit status 2), and the body that writes into the output folder
the command claimed (:func:`writing`)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from bandits.core.claims import release_dir
from bandits.core.config import check_ranges
from bandits.core.outputs import remove_if_unused
from bandits.core.startup import refused as refused  # every command's one line, exit 2

T = TypeVar("T")


def parsed(settings: type[T], parser: argparse.ArgumentParser,
           argv: Sequence[str] | None) -> T:
    """The settings dataclass ``settings`` from ``argv``, every declared range checked
    (a bad value raises :class:`bandits.core.config.UsageError`)."""
    made = settings(**vars(parser.parse_args(argv)))
    check_ranges(made)
    return made


@contextlib.contextmanager
def writing(out: Path) -> Iterator[Path]:
    """The body of a command that writes into ``out``, the folder it claimed: the claim is
    given up however the body ends, and a body that fails (a usage error found late,
    missing data, Ctrl-C) before it wrote anything leaves no empty folder of its making
    behind (:func:`bandits.core.outputs.remove_if_unused`)."""
    try:
        yield out
    except BaseException:
        remove_if_unused(out)
        raise
    finally:
        release_dir(out)
