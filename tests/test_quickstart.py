"""The README's Python quickstart runs as written and returns the agents' ranking."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _quickstart() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(import bandits\n.*?)```", text, re.S)
    assert len(blocks) == 1, "the README has one Python quickstart starting 'import bandits'"
    return blocks[0]


def test_the_quickstart_is_five_lines_or_fewer():
    assert len([line for line in _quickstart().splitlines() if line.strip()]) <= 5


@pytest.mark.slow
def test_the_readme_quickstart_runs_and_ranks_the_agents(mushroom_data_dir, tmp_path,
                                                         monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # its outputs go under runs/ here
    monkeypatch.setenv("BANDITS_DATA_DIR", str(mushroom_data_dir))
    scope: dict = {}
    exec(compile(_quickstart(), "README.md", "exec"), scope)
    table = scope["table"]
    assert set(table["agent"]) == {"bbb", "greedy"}
    assert table["mean"].is_monotonic_increasing  # lowest first
    assert "next" in capsys.readouterr().out
    assert len(list((tmp_path / "runs").glob("*/summary.csv"))) == 1


def test_the_software_is_citable_and_its_version_is_shown_and_recorded(tmp_path):
    import bandits
    from bandits.core.files import package_versions
    from bandits.simulator.settings import build_parser

    cff = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version:" in cff and f"version: {bandits.__version__}" in cff
    assert (REPO / "CHANGELOG.md").is_file()
    assert f"bbb-bandits {bandits.__version__}" in build_parser().format_help()
    assert package_versions()["bbb-bandits"] == bandits.__version__
