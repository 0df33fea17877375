"""A type checker sees the settings' fields: a run's record (``Config``) holds parts composed
at import time from every owner's dataclasses, as ``AgentConfig`` is, and each module gives
type checkers a static view of them that names every built-in part (no ``Any``); an agent
class names the settings it receives (``config: Config``: the common settings and its
own)."""

from __future__ import annotations

import ast
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
    return cfg.run.steps  # line 14: int | None, not str


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
    assert '"int | None"' in errors[0] and '"tuple[int, ...]"' in errors[1], done.stdout
    assert '"TrainingSettings" has no attribute "lr"' in errors[2], done.stdout
    assert "hidden" in errors[4], done.stdout


def _type_checking_body(path: str) -> list[ast.stmt]:
    """The statements ``path`` runs under ``if TYPE_CHECKING:``."""
    tree = ast.parse((REPO / path).read_text())
    return [item for node in ast.walk(tree)
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
            for item in node.body]


def _static_bases(path: str, name: str) -> set[str]:
    """The base classes of the class ``name`` that ``path`` defines under TYPE_CHECKING."""
    for item in _type_checking_body(path):
        if isinstance(item, ast.ClassDef) and item.name == name:
            return {ast.unparse(b) for b in item.bases}
    raise AssertionError(f"{path} has no class {name} under TYPE_CHECKING")


def _static_aliases(path: str) -> dict[str, str]:
    """The names ``path`` binds to another class under TYPE_CHECKING (``Run = RunSettings``)."""
    return {item.targets[0].id: ast.unparse(item.value) for item in _type_checking_body(path)
            if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name)}


def _dotted(part: type) -> str:
    module = part.__module__.rsplit(".", 1)[-1]
    return part.__name__ if module in ("base", "settings", "envs") else f"{module}.{part.__name__}"


def test_the_static_views_name_every_part_the_composed_classes_hold():
    import dataclasses

    import envs
    from agents import SPECS, AgentConfig
    from bandits.simulator import settings

    agent_parts = {part for spec in SPECS.values() for part in spec.settings}
    assert _static_bases("agents/__init__.py", "AgentConfig") == \
        {_dotted(p) for p in agent_parts} | {"CommonSettings"}
    cli = {p for p in agent_parts if all(f.metadata.get("cli", True)
                                         for f in dataclasses.fields(p))}
    env_parts = {p.__name__ for spec in envs.SPECS.values() for p in spec.settings}
    path = "bandits/simulator/settings.py"
    assert _static_bases(path, "Agents") == {_dotted(p) for p in cli}
    assert _static_bases(path, "Environment") == env_parts
    assert _static_bases(path, "Flags") == {
        "Run", "Environment", "Network", "Training", "Agents", "Output"}
    # a part of one class is that class itself in the static view
    assert _static_aliases(path) == {
        part.__name__: settings.GROUPS[name][0].__name__
        for name, part in settings.PART_CLASSES.items() if len(settings.GROUPS[name]) == 1}
    assert [f.name for f in dataclasses.fields(settings.Config)] == list(settings.GROUPS) \
        == list(settings.PART_CLASSES)
    # and the fields are the same, one for one
    static = {f.name for p in agent_parts for f in dataclasses.fields(p)}
    assert {f.name for f in dataclasses.fields(AgentConfig)} == static | {
        f.name for f in dataclasses.fields(settings.CommonSettings)}


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
