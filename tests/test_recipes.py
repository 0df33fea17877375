"""The docs' recipes, done as the docs say: docs/worked-example.md's diffs (a toy agent
with its own flag and its own per-step quantity) and docs/layout.md's (an env's per-step
quantity) applied to a copy of the code, and run from the command line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]


def _diffs(page: str) -> list[str]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    found = re.findall(r"^( *)```diff\n(.*?)^\1```", text, flags=re.S | re.M)
    return [re.sub(f"^{indent}", "", body, flags=re.M) for indent, body in found]


def _touched(diff: str) -> list[str]:
    return sorted(set(re.findall(r"^\+\+\+ b/(\S+)", diff, flags=re.M)))


@pytest.mark.slow
def test_the_docs_recipes_are_an_agent_module_its_registry_entry_and_a_declaration(tmp_path):
    module, registry = _diffs("worked-example.md")  # a new agent, end to end
    agent = module + registry
    (metric,) = _diffs("layout.md")
    assert _touched(agent) == ["agents/__init__.py", "agents/softmax.py"]
    assert _touched(metric) == ["envs/__init__.py"]
    assert len(re.findall(r"^\+ ", metric, flags=re.M)) == 2  # one statement, two lines
    code = tmp_path / "code"
    for package in ("agents", "bandits", "envs"):
        shutil.copytree(REPO / package, code / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for k, diff in enumerate((agent, metric)):
        (tmp_path / f"{k}.diff").write_text(diff)
        subprocess.run(["git", "apply", "--unsafe-paths", str(tmp_path / f"{k}.diff")],
                       cwd=code, check=True, capture_output=True, text=True)
    env = {"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "bandits.run", "--env", "wheel", "--agent", "softmax",
               "greedy", "--steps", "30", "--seeds", "2", "--updates-per-step", "2",
               "--no-progress"]
    done = subprocess.run([*command, "--temperature", "0.5", "--out", str(tmp_path / "run"),
                           "--workers", "1"], cwd=code, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "run/config.json").read_text())
    assert config["temperature"] == 0.5
    summary = pd.read_csv(tmp_path / "run/summary.csv")
    assert set(summary.agent) == {"softmax", "greedy"}
    assert (tmp_path / "run/regret.png").exists()
    # the declared quantities are columns of metrics.csv: the agent's where it has one
    metrics = pd.read_csv(tmp_path / "run/metrics.csv")
    assert list(metrics.columns[-2:]) == ["oracle_reward", "entropy"]
    soft, greedy = metrics[metrics.agent == "softmax"], metrics[metrics.agent == "greedy"]
    assert soft.entropy.between(0, np.log(5) + 1e-6).all() and soft.entropy.std() > 0
    assert greedy.entropy.isna().all() and metrics.oracle_reward.notna().all()
    # two workers (one agent each) merge to the bytes one process writes
    two = subprocess.run([*command, "--temperature", "0.5", "--out", str(tmp_path / "two"),
                          "--workers", "2"], cwd=code, env=env, capture_output=True, text=True)
    assert two.returncode == 0, two.stderr
    for name in ("metrics.csv", "summary.csv", "phases.csv"):
        assert (tmp_path / "two" / name).read_bytes() == (tmp_path / "run" / name).read_bytes()
    # the flag's range is checked like every other setting's, in one line
    bad = subprocess.run([*command, "--temperature", "0", "--out", str(tmp_path / "bad")],
                         cwd=code, env=env, capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].endswith(
        "--temperature must be in (0, 1e+06], got 0.0")
    # another agent's run refuses the flag in one line
    other = subprocess.run([*command[:6], "greedy", *command[8:], "--temperature", "0.5",
                            "--out", str(tmp_path / "other")],
                           cwd=code, env=env, capture_output=True, text=True)
    assert other.returncode == 2 and len(other.stderr.strip().splitlines()) == 1
    assert "--temperature 0.5 is read by --agent softmax" in other.stderr
    # and the new setting leaves every shipped run's identity as it recorded it
    check = ("import json, sys, pathlib; from bandits.simulator.resume import RUN; "
             "bad = [str(p) for p in pathlib.Path(sys.argv[1]).rglob('config.json') "
             "if 'identity' in (c := json.loads(p.read_text())) "
             "and RUN.identity(c) != c['identity']]; print(len(bad), bad)")
    kept = subprocess.run([sys.executable, "-c", check, str(REPO / "results")], cwd=code,
                          env=env, capture_output=True, text=True)
    assert kept.returncode == 0 and kept.stdout.startswith("0 "), kept.stdout + kept.stderr
    # it counts in a run's identity only away from its default
    ids = ("import json, sys; from bandits.simulator.resume import RUN; "
           "c = json.loads(open(sys.argv[1]).read()); c.pop('identity', None); "
           "print(json.dumps([RUN.identity({**c, 'temperature': t}) for t in (1.0, 0.5)] + "
           "[RUN.identity({k: v for k, v in c.items() if k != 'temperature'})]))")
    at_default, given, without = json.loads(subprocess.run(
        [sys.executable, "-c", ids, str(tmp_path / "run/config.json")], cwd=code, env=env,
        capture_output=True, text=True, check=True).stdout)
    assert at_default == without != given
    # in the run's record it is a field of the agents' part, and of no other part
    record = ("from bandits.simulator.settings import parse_config; "
              "cfg = parse_config(['--env', 'wheel', '--agent', 'softmax', '--temperature', "
              "'0.5']); print(cfg.agents.temperature, "
              "[type(p).__name__ for p in cfg.parts() if hasattr(p, 'temperature')])")
    shown = subprocess.run([sys.executable, "-c", record], cwd=code, env=env,
                           capture_output=True, text=True)
    assert shown.stdout.split() == ["0.5", "['Agents']"], shown.stdout + shown.stderr
    # beside --resume it is refused, since it decides results; declared resume=True in
    # the agent's module alone, it is accepted there (nothing else lists it)
    resume = [sys.executable, "-m", "bandits.run", "--resume", str(tmp_path / "run"),
              "--steps", "40", "--temperature", "0.7", "--no-progress"]
    refused = subprocess.run(resume, cwd=code, env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "--temperature" in refused.stderr, refused.stderr
    softmax = code / "agents/softmax.py"
    softmax.write_text(softmax.read_text().replace("range=(OPEN(0), 1e6)",
                                                   "range=(OPEN(0), 1e6), resume=True"))
    fresh = subprocess.run([*command, "--out", str(tmp_path / "declared"), "--workers", "1"],
                           cwd=code, env=env, capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr  # (the declaration moves the identity: a run
    resume[4] = str(tmp_path / "declared")     # made before it is another run's checkpoint)
    accepted = subprocess.run(resume, cwd=code, env=env, capture_output=True, text=True)
    assert accepted.returncode == 0, accepted.stderr
    # the flag is the toy agent's: the code without the diff does not know it
    plain = subprocess.run([sys.executable, "-m", "bandits.run", "--temperature", "0.5"],
                           cwd=REPO, capture_output=True, text=True)
    assert plain.returncode == 2 and "--temperature" in plain.stderr
