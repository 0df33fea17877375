"""``--help`` alone answers from the text stored in the package
(:mod:`bandits.tools.help_text`), without importing torch, and every stored text is what
its command's parser prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bandits.core.startup import HELP
from bandits.tools import help_text


def test_every_stored_help_is_what_its_parser_prints():
    written = (Path(HELP) / help_text.PYTHON_FILE).read_text(encoding="utf-8").strip()
    if written != help_text.python_version():
        pytest.skip(f"the stored texts are Python {written}'s argparse's; this is "
                    f"{help_text.python_version()}")
    stale = help_text.stale()
    assert not stale, (f"stored --help differs for {', '.join(stale)}: write them with "
                       "python -m bandits.tools.help_text")
    assert {p.stem for p in Path(HELP).glob("*.txt")} - {"python"} == {
        c.prog for c in help_text.commands()}


def test_help_answers_with_the_stored_text_without_importing_torch(tmp_path):
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "bandits.run", "--help"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (Path(HELP) / "bandits.run.txt").read_text(encoding="utf-8")
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()}
    assert "bandits.core.startup" in imported
    assert not {m for m in imported if m.split(".")[0] == "torch"}


def test_a_stale_or_missing_stored_help_is_found(tmp_path, monkeypatch):
    monkeypatch.setattr(help_text, "HELP", str(tmp_path))
    (tmp_path / "bandits.plot.txt").write_text("usage: an older parser\n", encoding="utf-8")
    run = next(c for c in help_text.commands() if c.prog == "bandits.run")
    (tmp_path / "bandits.run.txt").write_text(help_text.parser_help(run), encoding="utf-8")
    stale = help_text.stale()
    assert "bandits.plot" in stale and "bandits.sweep" in stale and "bandits.run" not in stale
    assert help_text.PYTHON_FILE in stale  # none written there yet
    assert help_text.main(["--check"]) == 1
    assert help_text.main([]) == 0 and help_text.stale() == {}
