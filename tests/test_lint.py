"""The library is ruff clean under pyproject.toml's rules, the complexity limit among them
(``C90``: no function of bandits, agents or envs branches more than ten ways), so that a
function that no longer reads top to bottom fails the suite, not only a reviewer's eye.
ruff comes with the test extra (``pip install -c constraints.txt -e '.[test]'``); without
it the check skips, saying so, except under ``$BANDITS_REQUIRE_PINNED=1`` (CI), where it
fails."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pinned import REQUIRE

REPO = Path(__file__).resolve().parents[1]


def _ruff_or_skip() -> None:
    if importlib.util.find_spec("ruff") is not None:
        return
    why = "ruff is not installed: pip install -c constraints.txt -e '.[test]'"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{why} ({REQUIRE}=1)")
    pytest.skip(why)


def test_the_library_is_ruff_clean_with_no_function_over_complexity_ten():
    _ruff_or_skip()
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "bandits",
                           "agents", "envs"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_complexity_limit_is_ten_in_pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    lint = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "C90" in lint["select"]
    assert lint["mccabe"]["max-complexity"] == 10
