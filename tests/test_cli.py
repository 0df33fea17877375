"""Settings declared as a dataclass of bandits.config.setting fields: positional and
list-valued settings, and parsers whose errors are argparse's own."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest

from bandits.config import build_parser, setting


@dataclass
class Example:
    dirs: list[Path] | None = setting(None, "directories", positional=True, nargs="+",
                                      type=Path)
    tags: list[str] = setting([], "a tag (repeatable)", action="append", type=str)
    pair: list[int] = setting([1, 2], "two numbers", nargs=2, type=int)
    quiet: bool = setting(False, "say less (default: chatty)")
    level: int = setting(3, "how much (default: three)")


def test_positional_and_list_settings():
    p = build_parser(Example, "example", "An example.", parser_class=argparse.ArgumentParser)
    args = Example(**vars(p.parse_args(["a", "b", "--tags", "x", "--tags", "y"])))
    assert args == Example([Path("a"), Path("b")], ["x", "y"], [1, 2], False, 3)
    assert Example().tags == [] and Example().tags is not Example().tags
    text = p.format_help()
    assert "dirs [dirs ...]" in text and "(default: 1 2)" in text
    # a help that states its default in its own words gets no second one
    assert "(default: chatty)" in text and "(default: three)" in text
    assert "(default: off)" not in text and "(default: 3)" not in text
    with pytest.raises(SystemExit):  # argparse's own error: usage, one line, exit 2
        p.parse_args([])
    with pytest.raises(SystemExit):
        p.parse_args(["a", "--pair", "1", "2", "--pair", "3", "4"])
