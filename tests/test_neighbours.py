"""Neighbour-free agents: every row an agent writes is the same bytes whether it runs
alone, beside any other agents, in any order, with any number of workers."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from agents import SPECS
from bandits.run import main

FILES = ("metrics.csv", "summary.csv", "phases.csv", "probes.csv", "memory.csv")
FIGURE6 = ["bbb", "greedy", "eps1", "eps5"]


def _rows(out: Path) -> dict[tuple[str, str], list[str]]:
    """Each (file, agent)'s rows, as the bytes of their lines."""
    rows: dict[tuple[str, str], list[str]] = {}
    for name in FILES:
        path = out / name
        if not path.is_file():
            continue
        lines = path.read_text().splitlines()
        for line in lines[1:]:
            agent = next(csv.reader(io.StringIO(line)))[0]
            rows.setdefault((name, agent), []).append(line)
        rows[(name, "header")] = lines[:1]
    return rows


def _run(tmp_path: Path, label: str, agents: list[str], args: list[str]) -> dict:
    out = tmp_path / label
    assert main([*args, "--agent", *agents, "--no-progress", "--out", str(out)]) == 0
    return _rows(out)


def _check(tmp_path: Path, agents: list[str], args: list[str], neural: list[str] = ()
           ) -> None:
    """``neural``: flags only the agents with a network read (refused for the others)."""
    together = _run(tmp_path, "together", agents, [*args, *neural, "--workers", "1"])
    reversed_ = _run(tmp_path, "reversed", agents[::-1], [*args, *neural, "--workers", "2"])
    for name in agents:
        own = [*args, *(neural if SPECS[name].neural else ())]
        alone = _run(tmp_path, f"alone-{name}", [name], [*own, "--workers", "1"])
        mine = {key: lines for key, lines in alone.items() if key[1] != "header"}
        assert mine, f"{name} wrote no rows"
        for key, lines in mine.items():
            assert together[key] == lines, f"{key[0]} of {name}: other bytes beside others"
            assert reversed_[key] == lines, f"{key[0]} of {name}: other bytes in reverse order"


@pytest.mark.slow
def test_figure6_agents_give_the_same_bytes_alone_and_together(tmp_path, mushroom_data_dir):
    """The four agents of Figure 6, 2,000 steps on Mushroom: alone, together, reversed."""
    _check(tmp_path, FIGURE6, ["--data-dir", str(mushroom_data_dir), "--steps", "2000",
                               "--seeds", "2", "--updates-per-step", "4"])


@pytest.mark.slow
def test_every_agent_gives_the_same_bytes_alone_and_together(tmp_path, mushroom_data_dir):
    """Every agent of the registry, 300 steps on Mushroom with a small network."""
    _check(tmp_path, list(SPECS), ["--data-dir", str(mushroom_data_dir), "--steps", "300",
                                   "--seeds", "2", "--updates-per-step", "2"],
           neural=["--hidden", "16", "--batch-size", "16"])
