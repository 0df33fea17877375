"""What the checks of the pages' numbers (tests/test_numbers_*.py) share: a page's prose,
flattened, and the numbers left in it once the checked snippets and the declared
settings are taken out."""

from __future__ import annotations

import re
from collections.abc import Iterable

from test_quoted_numbers import _prose_numbers


def flat(text: str) -> str:
    """The text with every run of whitespace (line breaks included) one space."""
    return " ".join(text.split())


def prose(text: str) -> str:
    """A page's prose: no generated tables, no code blocks (fenced, or indented by four
    spaces outside a list, by eight in one); the lines that continue a list item
    (indented by four) are prose."""
    text = re.sub(r"<!-- generated:.*?<!-- end generated -->", "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
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


def uncovered(text: str, snippets: Iterable[str], settings: set[str]) -> list[str]:
    """The numbers of the flattened prose ``text`` that no snippet holds (each snippet
    taken out, in the order given) and that no setting declares (a setting with words
    counts only in its context: it is taken out, longest first; a bare number counts
    anywhere)."""
    for snippet in snippets:
        text = text.replace(flat(snippet), " ")
    for setting in sorted(settings, key=len, reverse=True):
        if not re.fullmatch(r"[\d,.]+", setting):
            text = text.replace(setting, " ")
    return [n for n in _prose_numbers(text) if n not in settings]
