"""The packages import from this repository, and the library stays light to import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(code: str, cwd: Path) -> str:
    """Run ``code`` in a fresh interpreter (so this process's imports do not matter)."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("package", ["bandits", "agents", "envs"])
def test_package_resolves_to_this_repository(package, tmp_path):
    # Run from an unrelated directory: the installed package, not the cwd, must point here.
    out = _run(f"import json, {package}; print(json.dumps({package}.__file__))", tmp_path)
    path = Path(json.loads(out)).resolve()
    assert path == REPO / package / "__init__.py"


def test_importing_bandits_does_not_import_the_runner(tmp_path):
    heavy = [
        "bandits.run",
        "bandits.mnist",
        "bandits.plot",
        "bandits.results",
        "agents",
        "envs",
        "matplotlib",
    ]
    code = (
        f"import json, sys, bandits; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    assert json.loads(_run(code, tmp_path)) == []
