"""The numbers of the pages' prose that are written from the shipped files, as the tables
are (:mod:`bandits.tools.doc_tables` writes and checks both).

A generated value sits in a sentence between two inline markers::

    BBB's update is <!-- value: floor-bbb-1 -->5.1x<!-- end value --> its floor.

and NAME is one of :data:`VALUES`, each a function of the repository's root that reads the
shipped files and returns the text (a number, or a phrase with its numbers). Markdown
hides the markers. The text is compared with the page's word for word, line breaks and
runs of spaces read as one space, so a value may wrap where the page wraps; a value that
changed is written back with its line breaks indented as the line it starts on (a list
item's continuation stays in its item).

A page's value markers are found in every Markdown page of the repository
(:func:`pages`): a number left in prose outside a marker is what a page's own tests read
as a setting or a citation."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from bandits.tools.table_cells import TableError
from bandits.tools.values import VALUES

VALUE = re.compile(r"<!-- value: (?P<name>[\w.-]+) -->(?P<body>.*?)<!-- end value -->", re.S)
OPEN, CLOSE = "<!-- value:", "<!-- end value -->"


def flat(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) one space."""
    return " ".join(text.split())


def pages(root: Path) -> list[str]:
    """Every Markdown page a value may sit in: the README, the docs, the results' pages
    (paths from ``root``, sorted)."""
    found = [root / "README.md", *root.glob("docs/**/*.md"), *root.glob("results/**/*.md")]
    return sorted(str(p.relative_to(root)) for p in found if p.is_file())


def check_values(text: str, name: str) -> None:
    """Every ``value`` marker closed by its ``end value`` before the next opens.

    Raises:
        TableError: A marker without its end, an end without its marker, a damaged one.
    """
    spans = [m.span() for m in VALUE.finditer(text)]
    inside = "".join(text[a:b] for a, b in spans)
    outside = VALUE.sub("", text)
    bad = (outside.count(OPEN) or outside.count(CLOSE)
           or inside.count(OPEN) != len(spans) or inside.count(CLOSE) != len(spans))
    if bad or any(OPEN in m["body"] for m in VALUE.finditer(text)):
        line = next((i for i, ln in enumerate(text.splitlines(), 1)
                     if OPEN in ln or CLOSE in ln), 0)
        raise TableError(f"{name}: a value marker is damaged or not closed (first marker on "
                         f"line {line}): each is <!-- value: NAME -->TEXT<!-- end value -->")


def _indent_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    line = text[start:at]
    return line[: len(line) - len(line.lstrip(" "))]


def written(kind: str, name: str, generators: dict[str, Callable[[Path], str]],
            root: Path) -> str:
    """What the generator ``name`` (a table or a value, as ``kind`` says) writes from the
    files under ``root``.

    Raises:
        ValueError: An unknown name.
        TableError: A file it reads that is not what it was.
    """
    if name not in generators:
        raise ValueError(f"unknown generated {kind} {name!r}; known: {', '.join(generators)}")
    try:
        return generators[name](root)
    except (OSError, KeyError, IndexError, TypeError) as e:  # a file not what it was
        raise TableError(f"{kind} {name!r}: {type(e).__name__}: {e}") from None


def fill_values(text: str, root: Path, name: str = "text",
                values: dict[str, Callable[[Path], str]] | None = None
                ) -> tuple[str, list[str]]:
    """``text`` with every value rewritten from its files where it differs from them (its
    words, not its line breaks), and the names of those that changed.

    Raises:
        TableError: A damaged marker, or a file a value is written from.
        ValueError: An unknown value name.
    """
    values = VALUES if values is None else values
    check_values(text, name)
    changed: list[str] = []

    def fill(m: re.Match) -> str:
        key = m["name"]
        new = written("value", key, values, root)
        if flat(new) == flat(m["body"]):
            return m.group(0)
        changed.append(key)
        body = new.replace("\n", "\n" + _indent_of(text, m.start()))
        return f"<!-- value: {key} -->{body}{CLOSE}"

    return VALUE.sub(fill, text), changed


__all__ = ["VALUE", "check_values", "fill_values", "flat", "pages", "written"]
