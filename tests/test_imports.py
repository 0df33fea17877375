"""The packages import from this repository, and the library stays light to import."""

from __future__ import annotations

import ast
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


def test_packages_resolve_to_this_repository(tmp_path):
    # From an unrelated directory, so the installed packages, not the cwd, must point here.
    # find_spec locates a package without running it (importing agents would load torch).
    code = (
        "import importlib.util, json; "
        "print(json.dumps({p: importlib.util.find_spec(p).origin "
        "for p in ['bandits', 'agents', 'envs']}))"
    )
    found = json.loads(_run(code, tmp_path))
    for package, origin in found.items():
        assert Path(origin).resolve() == REPO / package / "__init__.py", package
    # And once imported, __file__ says the same.
    out = _run("import json, bandits; print(json.dumps(bandits.__file__))", tmp_path)
    assert Path(json.loads(out)).resolve() == REPO / "bandits" / "__init__.py"


def test_importing_bandits_does_not_import_the_runner(tmp_path):
    heavy = [
        "bandits.run",
        "bandits.mnist",
        "bandits.plot",
        "bandits.outputs",
        "agents",
        "envs",
        "matplotlib",
    ]
    code = (
        f"import json, sys, bandits; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    assert json.loads(_run(code, tmp_path)) == []


# The floors of the layout (README, "Layout"): a module imports only the floors above it.
APPLICATIONS = ["bandits.run", "bandits.sweep", "bandits.parallel", "bandits.mnist",
                "bandits.bench", "bandits.plot", "bandits.diagnose"]
# The simulator's own floors: settings, then the hooks, then the loop, then the command
# line (bandits.run) and the parallel runner; the sweep: grid, then its results, then the
# command line.
RUNNER = ["bandits.settings", "bandits.hooks", "bandits.loop", "bandits.parallel", "bandits.run"]
FLOORS = {
    "bandits.bayes": ["agents", "envs", "bandits.buffer", "bandits.outputs", *APPLICATIONS],
    "bandits.buffer": ["agents", "envs", "bandits.outputs", *APPLICATIONS],
    "bandits.data": ["agents", "envs", "bandits.outputs", *APPLICATIONS],
    "bandits.idx": ["agents", "envs", "torch", "bandits.outputs", *APPLICATIONS],
    "envs": ["agents", "bandits.bayes", "bandits.outputs", *APPLICATIONS],
    "agents": ["envs", "bandits.outputs", *APPLICATIONS],
    "bandits.mnist": ["agents", "envs", "bandits.run", "bandits.sweep", "bandits.parallel"],
    **{m: RUNNER[i + 1:] + ["bandits.sweep"] for i, m in enumerate(RUNNER[:3])},
    "bandits.parallel": ["bandits.run", "bandits.sweep"],
    "bandits.run": ["bandits.grid", "bandits.sweep_results", "bandits.sweep"],
    "bandits.grid": ["bandits.sweep_results", "bandits.sweep"],
    "bandits.sweep_results": ["bandits.sweep"],
}


@pytest.mark.slow
def test_each_floor_imports_only_the_floors_above_it(tmp_path):
    for module, below in FLOORS.items():
        code = (f"import importlib, json, sys; importlib.import_module({module!r}); "
                f"print(json.dumps([m for m in {below!r} if m in sys.modules]))")
        assert json.loads(_run(code, tmp_path)) == [], module


# Imports inside a function, each with its reason; any other is refused (a function-level
# import hides a dependency, and most often dodges a cycle that the floors should remove).
LAZY = {
    ("bandits/mnist/__init__.py", "bandits.mnist.cli"): "the command turns Ctrl-C on first",
    ("envs/__init__.py", "envs.classification"): "import envs loads no data module",
}


def test_no_module_imports_the_project_inside_a_function():
    found = set()
    for path in sorted(p for top in ("bandits", "agents", "envs")
                       for p in (REPO / top).rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                names = ([sub.module or ""] if isinstance(sub, ast.ImportFrom)
                         else [a.name for a in sub.names] if isinstance(sub, ast.Import) else [])
                for name in names:
                    if name.split(".")[0] in ("bandits", "agents", "envs"):
                        found.add((path.relative_to(REPO).as_posix(), name))
    assert found - set(LAZY) == set()
