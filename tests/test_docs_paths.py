"""Every file of the repository a page names in code (`` `tests/test_results.py` ``)
exists: a renamed or removed file leaves no page pointing at nothing. A name in capitals
(`` `bandits/NAME.py` ``) is a placeholder, not a file."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted(REPO.glob("docs/*.md")),
         *sorted(REPO.glob("results/**/README.md"))]
NAMED = re.compile(r"`((?:bandits|agents|envs|tests|docs|results)/[\w./-]+"
                   r"\.(?:py|md|csv|json|png|toml|txt|yml))`")
MADE_BY_THE_PAGE = {("docs/worked-example.md", "agents/softmax.py")}  # its diff adds it


def missing_paths(page: Path, text: str) -> list[str]:
    """``page: path`` for each path ``text`` (the page's) names that is neither in the
    repository nor beside the page."""
    name = page.relative_to(REPO).as_posix()
    return [f"{name}: {path}" for path in NAMED.findall(text)
            if (name, path) not in MADE_BY_THE_PAGE and not re.search(r"\b[A-Z]{2,}\b", path)
            and not (REPO / path).exists() and not (page.parent / path).exists()]


def test_every_file_a_page_names_exists() -> None:
    assert [m for p in PAGES for m in missing_paths(p, p.read_text(encoding="utf-8"))] == []


def test_a_page_naming_a_file_that_is_not_there_is_found() -> None:
    text = ("see `tests/test_results_size.py`, `tests/test_results.py`, `bandits/NAME.py` "
            "and `agents/softmax.py`")
    assert missing_paths(REPO / "docs" / "layout.md", text) == [
        "docs/layout.md: tests/test_results_size.py", "docs/layout.md: agents/softmax.py"]
