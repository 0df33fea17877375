"""Every documented command of a shipped bandit run, run today, makes the run it documents:
its settings, parsed with today's defaults and presets, give the identity the run's
``config.json`` recorded. A default or a preset that changes leaves no command behind."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")),
         *sorted((REPO / "results").rglob("*.md"))]


def _commands() -> list[tuple[str, str, Path]]:
    """(where, command, run directory) of every ``python -m bandits.run`` command written
    on a page whose ``--out`` names a shipped run (from the repository's root or the
    page's folder; backslash lines joined, a block's ``VAR="..."`` used for ``$VAR``)."""
    found = []
    for page in PAGES:
        text = page.read_text().replace("\\\n", " ")
        variables: dict[str, str] = {}  # a block's COMMON="..." lines, used as $COMMON
        for line in text.splitlines():
            if v := re.fullmatch(r"\s*([A-Z_]+)=\"(.*)\"\s*", line):
                variables[v.group(1)] = " ".join(v.group(2).split())
            m = re.search(r"python -m bandits\.run (.*)", line)
            if not m or "--resume" in line:
                continue
            command = m.group(1).split("`")[0].split("#")[0]
            for name, value in variables.items():
                command = command.replace(f"${name}", value)
            argv = shlex.split(command)
            if "--out" not in argv or "$" in command:
                continue
            out = argv[argv.index("--out") + 1]
            run = REPO / out if (REPO / out).is_dir() else page.parent / out
            if (run / "config.json").is_file() and "identity" in json.loads(
                    (run / "config.json").read_text()):
                found.append((f"{page.relative_to(REPO)}", command, run))
    return found


COMMANDS = _commands()


def test_the_pages_document_the_shipped_runs():
    assert len(COMMANDS) >= 10
    assert any(run.name == "quick" for _, _, run in COMMANDS)


@pytest.mark.parametrize("where,command,run", COMMANDS,
                         ids=[f"{w}:{r.relative_to(REPO)}" for w, _, r in COMMANDS])
def test_a_documented_command_makes_the_run_it_documents(where, command, run):
    from bandits.simulator.resume import RUN
    from bandits.simulator.settings import parse_config

    recorded = json.loads((run / "config.json").read_text())
    if recorded.get("device") == "cuda":
        pytest.skip("a GPU run: its command needs a CUDA device to parse")
    cfg = parse_config(shlex.split(command.split("`")[0].split("#")[0]))
    settings = json.loads(json.dumps(cfg.flat(), default=str))
    # a setting the run's record lacks was added after it: left out at its default
    plain = json.loads(json.dumps(parse_config(
        ["--preset", cfg.run.preset, "--env", cfg.run.env, "--agent", *cfg.run.agent]).flat(),
        default=str))
    settings = {k: v for k, v in settings.items()
                if k in recorded or v != RUN.added_later.get(k, plain[k])}
    assert RUN.identity(settings) == recorded["identity"], (
        f"{where}: the command of {run.relative_to(REPO)} now makes another run; "
        "differs: " + ", ".join(f"{k} {recorded.get(k)!r} -> {v!r}" for k, v in settings.items()
                                if recorded.get(k, RUN.added_later.get(k, plain[k])) != v
                                and k not in ("out", "overwrite", "workers", "no_progress")))
