"""The adversarial round: every command that reads result files back or touches the
repository, given each case of :data:`adversarial_cases.CASES` (a tampered copy of a shipped
result, or a bad flag). A bad input is one line on stderr (``prog: error: ...``) holding the
case's words (a tampered file's name), exit status 2, no traceback, and nothing in the test's
folder changed, made or removed (for ``bench --against``: ``git worktree list`` the same)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from adversarial_cases import CASES, SETUPS, XFAIL

ROOT = Path(__file__).resolve().parents[1]


def _mains():
    from bandits import bench, confirm, diagnose, doc_tables, mnist, plot, same_bytes
    from bandits.tools import figures

    return {"confirm": confirm.main, "plot": plot.main, "diagnose": diagnose.main,
            "report": mnist.main, "doc_tables": doc_tables.main, "figures": figures.main,
            "same_bytes": same_bytes.main, "bench": bench.main}


def _state(d: Path) -> dict[str, bytes | None]:
    return {p.relative_to(d).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(d.rglob("*"))}


def _setup(name: str, tmp: Path) -> None:
    if name == "docs":
        from test_doc_tables import _copy

        _copy(tmp)
        (tmp / "file.txt").write_text("a user's file")
        return
    for to, src in SETUPS[name].items():
        (tmp / to).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / src).is_dir() else shutil.copyfile)(ROOT / src, tmp / to)
    (tmp / "file.txt").write_text("a user's file")


def _worktrees() -> bytes:
    return subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=ROOT,
                          capture_output=True).stdout


PARAMS = [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[c.id])]
                       if c.id in XFAIL else []) for c in CASES]


def test_the_case_ids_are_unique_and_the_xfails_are_cases():
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids)
    assert set(XFAIL) <= set(ids)


@pytest.mark.parametrize("case", PARAMS)
def test_a_bad_input_is_one_line_exit_2_and_touches_nothing(case, tmp_path, capsys,
                                                            monkeypatch):
    _setup(case.setup, tmp_path)
    if case.tamper is not None:
        rel, how, arg = case.tamper
        how(tmp_path / rel, arg)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    before, trees = _state(tmp_path), _worktrees() if case.command == "bench" else b""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    try:
        code = _mains()[case.command](argv)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err.strip()
    assert code == 2, (code, err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert re.match(r"^(python -m )?bandits[\w.]*( report)?: error: ", err), err
    for words in case.says:
        assert words in err, (words, err)
    assert _state(tmp_path) == before  # nothing of the user's changed, made or removed
    if case.command == "bench":
        assert _worktrees() == trees
