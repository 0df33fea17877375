"""A type checker sees the settings' fields: a run's record (``Config``) holds parts that are
plain dataclasses declared in source by their owners (no class composed at run time, no
second copy for type checkers), as ``AgentConfig`` is; an agent class names the settings
it receives (``config: Config``: the common settings and its own)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SNIPPET = '''
from agents import AgentConfig
from agents.bbb import BBBAgent
from agents.linear import LinFullPostAgent
from bandits.simulator.settings import Config


def fine(cfg: Config, agent: AgentConfig, bbb: BBBAgent) -> float:
    return (cfg.network.lr + cfg.output.checkpoint_every + cfg.agents.heads + agent.lr
            + agent.heads + bbb.config.mean_decay)


def run_setting(cfg: Config) -> str:
    return cfg.run.steps  # line 14: int (a preset fills it before the record), not str


def common_setting(agent: AgentConfig) -> str:
    return agent.hidden  # line 18: tuple[int, ...], not str


def unknown(cfg: Config) -> int:
    return cfg.training.lr  # line 22: no Any behind the parts (lr is the network's)


def own_setting(bbb: BBBAgent) -> str:
    return bbb.config.kl_scale + 1  # line 26: str + int


def not_its_own(agent: LinFullPostAgent) -> int:
    return agent.config.hidden  # line 30: a linear agent receives no network settings
'''


@pytest.mark.slow
def test_a_type_checker_sees_the_settings_fields(tmp_path):
    pytest.importorskip("mypy")
    (tmp_path / "snippet.py").write_text(SNIPPET)
    done = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                           "--ignore-missing-imports", "--no-incremental",
                           str(tmp_path / "snippet.py")], cwd=REPO, capture_output=True,
                          text=True)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [int(line.split(":")[1]) for line in errors] == [14, 18, 22, 26, 30], done.stdout
    assert '(got "int", expected "str")' in errors[0], done.stdout
    assert '"tuple[int, ...]"' in errors[1], done.stdout
    assert '"TrainingSettings" has no attribute "lr"' in errors[2], done.stdout
    assert "hidden" in errors[4], done.stdout


def test_the_settings_are_declared_in_source_once():
    import dataclasses

    from agents import SPECS, AgentConfig, Agents, CommonSettings
    from bandits.simulator import settings

    for path in ("agents/__init__.py", "agents/base.py", "bandits/core/config.py",
                 "bandits/simulator/settings.py", "bandits/simulator/parts.py"):
        text = (REPO / path).read_text()
        assert "make_dataclass" not in text and "TYPE_CHECKING" not in text, path
    # the record's parts are its owners' classes; the flat view holds each field once,
    # part by part, in the record's order
    parts = list(settings.PART_CLASSES.values())
    assert [f.name for f in dataclasses.fields(settings.Config)] == list(settings.PART_CLASSES)
    flat = [f.name for p in parts for f in dataclasses.fields(p)]
    assert [f.name for f in dataclasses.fields(settings.Flags)] == flat
    assert len(set(flat)) == len(flat)  # each setting has one owner
    # every agent's own settings with a flag are the agents' part, each class once
    own = [p for p in settings.AGENT_SETTINGS
           if all(f.metadata.get("cli", True) for f in dataclasses.fields(p))]
    declared = [f.name for p in own for f in dataclasses.fields(p)]
    assert len(set(declared)) == len(declared)  # no setting declared by two agents' classes
    assert {f.name for f in dataclasses.fields(Agents)} == set(declared)
    assert {f.name for f in dataclasses.fields(AgentConfig)} == {
        f.name for spec in SPECS.values() for p in spec.settings
        for f in dataclasses.fields(p)} | {f.name for f in dataclasses.fields(CommonSettings)}


def test_each_agent_receives_the_common_settings_and_its_own_and_nothing_else():
    import dataclasses

    from agents import SPECS, AgentConfig, CommonSettings, make_agent

    common = {f.name for f in dataclasses.fields(CommonSettings)}
    for name, spec in SPECS.items():
        agent = make_agent(name, 4, 2, 1, 0, AgentConfig(hidden=(4,)))
        got = {f.name for f in dataclasses.fields(agent.config)}
        own = {f.name for part in spec.settings for f in dataclasses.fields(part)}
        assert got == own | (common if spec.neural else set()), name
        assert isinstance(agent.config, spec.config), name
    assert not hasattr(make_agent("linucb", 4, 2, 1, 0).config, "lin_a0")  # linfullpost's
    assert not hasattr(make_agent("bbb", 4, 2, 1, 0).config, "heads")  # the bootstrap's


def test_the_record_and_its_flat_settings_make_each_other():
    import dataclasses
    import json

    from bandits.simulator.settings import Config, Flags, parse_config

    cfg = parse_config(["--env", "wheel", "--agent", "bbb", "bootstrap", "--heads", "3",
                        "--hidden", "8", "--steps", "5"])
    flat = cfg.flat()  # what config.json holds: one key per flag, in --help's order
    assert list(flat) == [f.name for f in dataclasses.fields(Flags)]
    assert flat["heads"] == 3 and cfg.agents.heads == 3 and cfg.run.agent == ["bbb", "bootstrap"]
    assert Config.of(flat) == cfg
    # a shipped run's config.json holds its settings in the same order
    shipped = json.loads((REPO / "results/mushroom/quick/config.json").read_text())
    assert [k for k in shipped if k in flat] == [k for k in flat if k in shipped]
    # read back from its JSON, as a resume does: the values as the run had them
    again = Config.recorded({**json.loads(json.dumps(flat, default=str)), "identity": "x"},
                            data_dir="data")
    assert again.network.hidden == (8,) and again.run.data_dir == Path("data")
    with pytest.raises(TypeError, match="no_such_setting"):
        Config.of({"no_such_setting": 1})
