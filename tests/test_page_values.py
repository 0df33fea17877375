"""The generated values of the pages' prose (bandits.tools.page_values): a value that no
longer matches its files is found and rewritten, its page's layout kept; a damaged marker
or an unknown name is an error, not a number left unchecked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from bandits.tools import doc_tables, page_values
from bandits.tools.table_cells import TableError

REPO = Path(__file__).resolve().parents[1]
VALUES = {"two": lambda root: "2.0 s\nper step", "x": lambda root: "3"}


def test_a_value_matching_its_files_is_left_as_the_page_wraps_it():
    text = "- takes <!-- value: two -->2.0 s per\n  step<!-- end value --> here\n"
    assert page_values.fill_values(text, Path("."), values=VALUES) == (text, [])


def test_a_changed_value_is_rewritten_inside_its_list_item():
    text = "- takes <!-- value: two -->1.5 s per step<!-- end value --> here\n"
    new, changed = page_values.fill_values(text, Path("."), values=VALUES)
    assert changed == ["two"]
    assert new == "- takes <!-- value: two -->2.0 s\nper step<!-- end value --> here\n"
    indented = "    - takes <!-- value: two -->1.5 s<!-- end value -->\n"
    new, _ = page_values.fill_values(indented, Path("."), values=VALUES)
    assert "2.0 s\n    per step" in new


@pytest.mark.parametrize("text", [
    "a <!-- value: x -->3 and no end",
    "a 3<!-- end value --> with no start",
    "a <!-- value: x -->3 <!-- value: x -->3<!-- end value -->",
])
def test_a_damaged_marker_is_an_error(text):
    with pytest.raises(TableError, match="value marker is damaged"):
        page_values.fill_values(text, Path("."), values=VALUES)


def test_an_unknown_value_is_an_error():
    with pytest.raises(ValueError, match="unknown generated value 'nope'"):
        page_values.fill_values("<!-- value: nope -->1<!-- end value -->", Path("."),
                                values=VALUES)


def test_every_value_is_on_a_page():
    used = {m["name"] for page in page_values.pages(REPO)
            for m in page_values.VALUE.finditer((REPO / page).read_text(encoding="utf-8"))}
    assert used == set(page_values.VALUES)


def test_a_changed_file_is_caught_and_its_value_rewritten(tmp_path, capsys):
    shutil.copytree(REPO / "results", tmp_path / "results")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    csv = tmp_path / "results/bench/scaling.csv"
    t = pd.read_csv(csv)
    t.loc[t.workers == 1, "seconds_per_step"] = 9.876
    t.to_csv(csv, index=False)
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 1
    assert "docs/speed.md: speed-scaling" in capsys.readouterr().err
    assert doc_tables.main(["--root", str(tmp_path)]) == 0
    assert "**9.876 s per step with one worker" in (tmp_path / "docs/speed.md").read_text()
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 0
