"""python -m bandits.same_bytes: each check's files compared between this processor and an
emulated one (the emulator replaced by nothing here, except in the slow test)."""

from __future__ import annotations

import shutil

import pytest

from bandits.tools import same_bytes
from bandits.tools.same_bytes import Check, run_checks

WRITE = "import sys, pathlib; p = pathlib.Path(sys.argv[1]); p.mkdir(); "


def _check(name: str, body: str, **kw) -> Check:
    return Check(name, lambda out: ["-c", WRITE + body, str(out)], ("a.txt",), **kw)


def test_each_file_is_compared_with_the_other_processor_or_the_shipped_one(tmp_path):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "a.txt").write_text("42")
    checks = {
        "steady": _check("steady", "(p / 'a.txt').write_text('42')", unpinned=True),
        "shipped": _check("shipped", "(p / 'a.txt').write_text('42')", shipped=shipped),
        "drifts": _check("drifts", "import time; (p / 'a.txt').write_text(str(time.time_ns()))"),
    }
    rows = run_checks(["steady", "shipped", "drifts"], [], None, checks)
    got = {(r["check"], r["processor"], r["kernels"]): (r["compared_with"], r["same"])
           for r in rows}
    assert got == {
        ("steady", "emulated", "pinned"): ("this processor", True),
        ("steady", "emulated", "native"): ("this processor", True),
        ("shipped", "this", "pinned"): ("shipped", True),
        ("shipped", "emulated", "pinned"): ("shipped", True),
        ("drifts", "emulated", "pinned"): ("this processor", False),
    }
    assert all(r["file"] == "a.txt" and r["seconds"] >= 0 for r in rows)


def test_a_failing_command_names_itself_in_one_line(tmp_path):
    checks = {"bad": _check("bad", "sys.exit('no such data set')")}
    with pytest.raises(RuntimeError, match=r"failed \(exit 1\): no such data set"):
        run_checks(["bad"], [], None, checks)


def test_no_emulator_is_a_one_line_error_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(same_bytes.shutil, "which", lambda name: None)
    assert same_bytes.main(["--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "qemu-x86_64 not found" in err
    assert "apt install qemu-user" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which(same_bytes.EMULATOR) is None or
                    same_bytes.platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="needs QEMU's user-mode emulator (qemu-x86_64) on x86-64")
def test_a_short_bandit_run_is_the_same_bytes_on_an_emulated_haswell(mushroom_data_dir):
    emulated = same_bytes.emulator_prefix("Haswell-v4")
    assert same_bytes.capability(emulated) == "AVX2"  # the emulator is in effect
    short = Check("bandit", lambda out: ["-m", "bandits.run", "--agent", "bbb", "--seeds",
                                         "1", "--steps", "60", "--workers", "1",
                                         "--no-progress", "--out", str(out)],
                  ("metrics.csv", "summary.csv"))
    rows = run_checks(["bandit"], emulated, str(mushroom_data_dir), {"bandit": short})
    assert [r["same"] for r in rows] == [True, True], rows
