"""The docs' recipes, done as the docs say: docs/layout.md's diff of a toy agent with its
own flag, applied to a copy of the code, and the agent run from the command line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def _agent_diff() -> str:
    text = (REPO / "docs/layout.md").read_text(encoding="utf-8")
    (diff,) = re.findall(r"```diff\n(.*?)```", text, flags=re.S)
    return diff


def test_the_toy_agent_of_the_docs_is_one_module_and_its_registry_entry(tmp_path):
    diff = _agent_diff()
    touched = sorted(set(re.findall(r"^\+\+\+ b/(\S+)", diff, flags=re.M)))
    assert touched == ["agents/__init__.py", "agents/softmax.py"]
    code = tmp_path / "code"
    for package in ("agents", "bandits", "envs"):
        shutil.copytree(REPO / package, code / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "agent.diff").write_text(diff)
    subprocess.run(["git", "apply", "--unsafe-paths", str(tmp_path / "agent.diff")],
                   cwd=code, check=True, capture_output=True, text=True)
    env = {"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "bandits.run", "--env", "wheel", "--agent", "softmax",
               "greedy", "--steps", "30", "--seeds", "2", "--updates-per-step", "2",
               "--no-progress", "--workers", "1"]
    done = subprocess.run([*command, "--temperature", "0.5", "--out", str(tmp_path / "run")],
                          cwd=code, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "run/config.json").read_text())
    assert config["temperature"] == 0.5
    summary = pd.read_csv(tmp_path / "run/summary.csv")
    assert set(summary.agent) == {"softmax", "greedy"}
    assert (tmp_path / "run/regret.png").exists()
    # the flag's range is checked like every other setting's, in one line
    bad = subprocess.run([*command, "--temperature", "0", "--out", str(tmp_path / "bad")],
                         cwd=code, env=env, capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].endswith(
        "--temperature must be in (0, 1e+06], got 0.0")
    # the flag is the toy agent's: the code without the diff does not know it
    plain = subprocess.run([sys.executable, "-m", "bandits.run", "--temperature", "0.5"],
                           cwd=REPO, capture_output=True, text=True)
    assert plain.returncode == 2 and "--temperature" in plain.stderr
