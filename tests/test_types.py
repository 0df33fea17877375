"""A type checker sees the settings' fields: ``Config`` and ``AgentConfig`` are composed at
import time from every part's dataclass, and each module gives type checkers a static
view of them (the common fields typed, an agent's own ``Any``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")
REPO = Path(__file__).resolve().parents[1]

SNIPPET = '''
from agents.base import AgentConfig
from bandits.simulator.settings import Config


def fine(cfg: Config, agent: AgentConfig) -> float:
    return cfg.lr + cfg.checkpoint_every + agent.lr + agent.heads  # heads: an agent's own


def run_setting(cfg: Config) -> str:
    return cfg.steps  # line 11: int | None, not str


def common_setting(agent: AgentConfig) -> str:
    return agent.hidden  # line 15: tuple[int, ...], not str
'''


@pytest.mark.slow
def test_a_type_checker_sees_the_settings_fields(tmp_path):
    (tmp_path / "snippet.py").write_text(SNIPPET)
    done = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                           "--ignore-missing-imports", "--no-incremental",
                           str(tmp_path / "snippet.py")], cwd=REPO, capture_output=True,
                          text=True)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [int(line.split(":")[1]) for line in errors] == [11, 15], done.stdout
    assert '"int | None"' in errors[0] and '"tuple[int, ...]"' in errors[1], done.stdout
