"""What the checks of the pages' numbers (tests/test_quoted_numbers.py and
tests/test_numbers_*.py) share: a page's prose, flattened, and the numbers of it; the rows
and cells of its hand-written tables; the snippets the checks build for a page, and the
numbers left in its prose once they and the declared settings are taken out; and the
tests every such module runs, made here from its page-specific data (:func:`quoted_test`,
:func:`checked_test`, :func:`settings_test`, :func:`table_test`).

Nothing here imports a test module: they import this one."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]

# A group of snippets: a callable giving one snippet of a page, or a list of them.
Group = Callable[[], str | list[str]]


def page_text(page: str) -> str:
    """The text of ``page``, a path from the repository's root."""
    return (REPO / page).read_text(encoding="utf-8")


def flat(text: str) -> str:
    """The text with every run of whitespace (line breaks included) one space."""
    return " ".join(text.split())


def prose(text: str, lists: bool = True) -> str:
    """A page's prose: no generated tables or values, no code blocks (fenced, or indented by four
    spaces outside a list, by eight in one); the lines that continue a list item
    (indented by four) are prose. Without ``lists``, every line indented by four spaces is
    code, in a list or not."""
    text = re.sub(r"<!-- generated:.*?<!-- end generated -->", "", text, flags=re.S)
    text = re.sub(r"<!-- value:.*?<!-- end value -->", " ", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    if not lists:
        return "\n".join(line for line in text.splitlines() if not line.startswith("    "))
    out, in_list = [], False
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            out.append("")
        elif indent == 0:
            in_list = bool(re.match(r"(?:[-*+]|\d+\.)\s", line))
            out.append(line)
        elif indent < 4 or (indent < 8 and in_list):
            out.append(line.strip())
    return "\n".join(out)


def prose_numbers(text: str) -> list[str]:
    """The numbers of a page's prose with a decimal point or of three digits or more (code,
    generated tables, link targets and wall times left out; small counts such as "3
    seeds" are not read)."""
    text = prose(text, lists=False)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"(?:\d+ h\s+)?\d+ min\s+\d+ s\b", "", text)  # test_quoted_numbers checks
    found = re.findall(r"(?<![\w./])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w/])", text)
    return [n for n in found if "." in n or len(n.replace(",", "")) >= 3]


# ---------------------------------------------------------------- hand-written tables

# A number of a table cell (its sign kept): the text "x0.03" (a factor) holds none.
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w.])")


def cell_numbers(text: str) -> list[str]:
    """The numbers of a table cell, as :data:`NUMBER` reads them."""
    return NUMBER.findall(str(text))


def row_cells(line: str) -> list[str]:
    """The cells of a table's row, stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def same(doc: str, value: float) -> bool:
    """Whether the page's number ``doc`` is ``value`` as the page rounds it."""
    digits = len(doc.split(".")[1]) if "." in doc else 0
    return abs(float(doc.replace(",", "")) - value) <= 0.5 * 10 ** -digits + 1e-9


def tables(text: str, header: str, prefix: bool = False) -> list[list[tuple[int, str]]]:
    """Every table of ``text`` headed by ``header``, as its data rows (line index, line):
    the lines from the second after the header on that start with ``|``, leading spaces
    aside. With ``prefix``, every table whose first line starts with ``header``, its
    lines read as they are written (leading spaces not aside)."""
    lines = text.splitlines()
    read = lines if prefix else [line.strip() for line in lines]
    out = []
    for k, line in enumerate(read):
        if not (line.startswith(header) if prefix else line == header):
            continue
        rows = []
        for j in range(k + 2, len(lines)):
            if not read[j].startswith("|"):
                break
            rows.append((j, lines[j]))
        out.append(rows)
    return out


def rows_of(text: str, header: str, prefix: bool = False) -> list[tuple[int, str]]:
    """The data rows (line index, line) of every table of ``text`` headed by ``header``
    (:func:`tables`)."""
    return [row for table in tables(text, header, prefix) for row in table]


# ---------------------------------------------------------------- the shipped files


def starved(run: str) -> tuple[pd.DataFrame, tuple[int, int, int]]:
    """A run's greedy phases (``phases.csv``, with their ``eats``), and the longest
    stretch of them in which a seed ate nothing: its first step, its last, its seed."""
    p = pd.read_csv(REPO / run / "phases.csv")
    p = p[p["agent"] == "greedy"].assign(eats=lambda t: t["a1_best0"] + t["a1_best1"])
    best = (0, 0, None)
    for seed, g in p.groupby("seed"):
        start = None
        for r in g.sort_values("start").itertuples():
            if r.eats == 0:
                start = r.start if start is None else start
                if r.end - start > best[1] - best[0]:
                    best = (start, r.end, seed)
            else:
                start = None
    return p, best


# ---------------------------------------------------------------- what a page quotes


def listed(group: Group) -> list[str]:
    """The snippets of ``group``, as a list."""
    out = group()
    return [out] if isinstance(out, str) else out


def snippets(page: str, *quotes: Iterable[tuple[str, Group]]) -> list[str]:
    """Every snippet the checks ``quotes`` build for ``page`` (each a list of (page, a
    group of snippets)), in their order."""
    return [s for q in quotes for p, group in q if p == page for s in listed(group)]


def uncovered(text: str, snippets: Iterable[str], settings: set[str],
              also: Collection[str] = (),
              read: Callable[[str], list[str]] = prose_numbers) -> list[str]:
    """The numbers of the flattened prose ``text`` (as ``read`` reads them) that no snippet
    holds (each snippet taken out, in the order given) and that no setting declares (a
    setting with words counts only in its context: it is taken out, longest first; a bare
    number counts anywhere), nor ``also``."""
    for snippet in snippets:
        text = text.replace(flat(snippet), " ")
    for setting in sorted(settings, key=len, reverse=True):
        if not re.fullmatch(r"[\d,.]+", setting):
            text = text.replace(setting, " ")
    return [n for n in read(text) if n not in settings and n not in also]


# A number of a snippet: digits and commas, a decimal part; or, stricter, one whose commas
# separate thousands (a comma that ends a clause is not part of it).
SNIPPET_NUMBER = r"\d[\d,]*(?:\.\d+)?"
GROUPED_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"


def unquoted(page: str, snippets: Iterable[str], settings: set[str],
             number: str = SNIPPET_NUMBER,
             read: Callable[[str], list[str]] = prose_numbers) -> list[str]:
    """The numbers of ``page``'s prose (as ``read`` reads them) that are no number of a
    snippet (as the pattern ``number`` reads them) and no setting, sorted."""
    checked = set(re.findall(number, " ".join(snippets)))
    return sorted({n for n in read(page_text(page)) if n not in checked and n not in settings})


# ---------------------------------------------------------------- the tests


def quoted_test(quotes: list[tuple[str, Group]], whitespace: bool = True, ids=None):
    """The test that each group of snippets of ``quotes`` (a page, a group) is on its
    page; with ``whitespace`` the page's line breaks and runs of spaces are read as one
    space, in the page and in a snippet; without, they must be the same."""
    @pytest.mark.parametrize("page, group", quotes, ids=ids)
    def test(page: str, group: Group) -> None:
        text, out = page_text(page), group()
        wants = [out] if isinstance(out, str) else out
        if whitespace:
            missing = [want for want in wants if flat(want) not in flat(text)]
        else:
            missing = [want for want in wants if want not in text]
        assert missing == [], (f"{page} should quote {out!r}" if isinstance(out, str)
                               else f"{page} should quote: {missing}")

    return test


def checked_test(pages: Iterable[str], unchecked: Callable[[str], list[str]],
                 add: str = "a check to QUOTES or TABLES, or a setting", ids=None):
    """The test that no number of a page's prose is left ``unchecked``: built by no check
    and declared by no setting."""
    @pytest.mark.parametrize("page", pages, ids=ids)
    def test(page: str) -> None:
        left = unchecked(page)
        assert left == [], (f"{page} quotes numbers no check builds from its files (add "
                            f"{add}): {left}")

    return test


def settings_test(settings: Mapping[str, set[str]],
                  written: Callable[[str], str | set[str]] = lambda text: flat(prose(text)),
                  pages: Iterable[str] | None = None, ids=None):
    """The test that no setting is declared for a page (of ``pages``, every page of
    ``settings`` if None) that no longer writes it: each setting, its line breaks and
    runs of spaces read as one space, must be in what the page's text has ``written``
    (its flattened prose, or the set of its numbers)."""
    @pytest.mark.parametrize("page", sorted(settings) if pages is None else pages, ids=ids)
    def test(page: str) -> None:
        text = written(page_text(page))
        missing = sorted(s for s in settings[page] if flat(s) not in text)
        assert missing == [], f"{page} no longer writes these declared settings: {missing}"

    return test


def _table_id(spec) -> str:
    return f"{spec.page}:{spec.header[:40]}"


def table_test(specs: Iterable, errors: Callable, what: str, ids=_table_id):
    """The test that no row of a hand-written table (each spec of ``specs`` has a ``page``
    and a ``header``) is wrong: ``errors(spec, text)`` gives the rows of the page's text
    that are (reported as rows that ``what``), or how many rows it read and those; then
    a page that has no such table fails too."""
    @pytest.mark.parametrize("spec", specs, ids=ids)
    def test(spec) -> None:
        found = errors(spec, page_text(spec.page))
        if isinstance(found, tuple):
            n, found = found
            assert n, f"{spec.page} has no table headed {spec.header!r}"
        assert found == [], f"{spec.page}: rows that {what}: {found}"

    return test
