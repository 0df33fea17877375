"""The library is ruff clean under pyproject.toml's rules, the complexity limit among them
(``C90``: no function of bandits, agents or envs branches more than ten ways), so that a
function that no longer reads top to bottom fails the suite, not only a reviewer's eye;
and ``python -m mypy bandits agents envs`` reports no error under pyproject.toml's
``[tool.mypy]``, so that a wrong annotation or an unchecked ``None`` fails it too.
ruff and mypy (with the stubs it reads) come with the test extra
(``pip install -c constraints.txt -e '.[test]'``); without one the check skips, saying so,
except under ``$BANDITS_REQUIRE_PINNED=1`` (CI), where it fails."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pinned import REQUIRE

REPO = Path(__file__).resolve().parents[1]


def _installed_or_skip(tool: str) -> None:
    if importlib.util.find_spec(tool) is not None:
        return
    why = f"{tool} is not installed: pip install -c constraints.txt -e '.[test]'"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{why} ({REQUIRE}=1)")
    pytest.skip(why)


def test_the_library_is_ruff_clean_with_no_function_over_complexity_ten():
    _installed_or_skip("ruff")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "bandits",
                           "agents", "envs"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # some 20 s (a minute on a busy machine) without .mypy_cache, 2 s with it
def test_the_library_has_no_type_error_under_mypy():
    _installed_or_skip("mypy")
    done = subprocess.run([sys.executable, "-m", "mypy", "bandits", "agents", "envs"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout, done.stdout + done.stderr


def test_mypy_checks_every_module_of_ours_and_skips_none():
    """No error is hidden by the settings: only third-party modules without types are
    read as Any, and no module of the project has its errors ignored."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    mypy = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert not {"ignore_errors", "disable_error_code", "follow_imports"} & set(mypy)
    for part in mypy.get("overrides", []):
        modules = part["module"] if isinstance(part["module"], list) else [part["module"]]
        assert not any(m.split(".")[0] in ("bandits", "agents", "envs") for m in modules), part
        assert set(part) <= {"module", "ignore_missing_imports"}, part


def test_the_complexity_limit_is_ten_in_pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    lint = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "C90" in lint["select"]
    assert lint["mccabe"]["max-complexity"] == 10
