"""python -m bandits.same_bytes: each check's files compared between this processor and an
emulated one (the emulator replaced by nothing here, except in the slow test)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from bandits.tools import same_bytes
from bandits.tools.same_bytes import Check, run_checks

# a fake command: writes a.txt (BODY) and the kernels record a run's config.json holds
WRITE = ("import json, os, sys, pathlib; p = pathlib.Path(sys.argv[1]); p.mkdir(); "
         "pinned = os.environ.get('BANDITS_EXACT') == '1'; "
         "(p / 'config.json').write_text(json.dumps({'versions': {'kernels': {"
         "'pinned': pinned and os.environ.get('MKL_CBWR', 'COMPATIBLE') == 'COMPATIBLE', "
         "'MKL_CBWR': os.environ.get('MKL_CBWR', 'COMPATIBLE'), 'ATEN_CPU_CAPABILITY': 'avx2', "
         "'ONEDNN_MAX_CPU_ISA': 'AVX2'}}})); ")


def _check(name: str, body: str, **kw) -> Check:
    return Check(name, lambda out: ["-c", WRITE + body, str(out)], ("a.txt",), **kw)


def _shipped(tmp_path, text="42", pinned=True, torch_version=torch.__version__):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "a.txt").write_text(text)
    (shipped / "config.json").write_text(json.dumps(
        {"versions": {"torch": torch_version, "kernels": {"pinned": pinned}}}))
    return shipped


STEADY = "(p / 'a.txt').write_text('42')"
DRIFTS = "import time; (p / 'a.txt').write_text(str(time.time_ns()))"


def test_each_file_is_compared_with_the_other_processor_and_the_shipped_one(tmp_path):
    checks = {
        "steady": _check("steady", STEADY, unpinned=True),
        "shipped": _check("shipped", STEADY, shipped=_shipped(tmp_path)),
        "drifts": _check("drifts", DRIFTS),
    }
    rows = run_checks(["steady", "shipped", "drifts"], [], None, checks)
    got = [(r["check"], r["processor"], r["kernels"], r["compared_with"], r["same"])
           for r in rows]
    assert got == [
        ("steady", "emulated", "pinned", "this processor", True),
        ("steady", "emulated", "native", "this processor", True),
        ("shipped", "this", "pinned", "shipped", True),
        ("shipped", "emulated", "pinned", "shipped", True),
        ("shipped", "emulated", "pinned", "this processor", True),
        ("drifts", "emulated", "pinned", "this processor", False),
    ]
    assert all(r["file"] == "a.txt" and r["seconds"] >= 0 for r in rows)


@pytest.mark.parametrize("body, match", [
    ("sys.exit('no such data set')", r"failed \(exit 1\): no such data set"),
    ("pass", "cannot read a.txt"),  # wrote no file
    ("(p / 'config.json').unlink(); (p / 'a.txt').write_text('1')", "records no kernels"),
])
def test_a_check_that_cannot_be_made_is_one_clear_error(body, match):
    with pytest.raises(RuntimeError, match=match):
        run_checks(["bad"], [], None, {"bad": _check("bad", body)})


def test_a_run_with_other_kernels_than_asked_is_refused(monkeypatch):
    # the user's own variables are cleared: a pinned run is pinned whatever the parent has
    monkeypatch.setenv("BANDITS_EXACT", "1")
    rows = run_checks(["x"], [], None, {"x": _check("x", STEADY, unpinned=True)})
    assert [r["kernels"] for r in rows] == ["pinned", "native"]
    liar = "(p / 'config.json').write_text(json.dumps({'versions': {'kernels': {'pinned': " \
           "not pinned}}})); (p / 'a.txt').write_text('1')"
    with pytest.raises(RuntimeError, match="not pinned"):
        run_checks(["x"], [], None, {"x": _check("x", liar)})


@pytest.mark.parametrize("kw, match", [
    ({"pinned": False}, "kernels unpinned"),
    ({"torch_version": "1.0.0"}, "made with torch 1.0.0"),
])
def test_a_shipped_result_not_made_under_this_pin_is_not_compared(tmp_path, kw, match):
    check = _check("s", STEADY, shipped=_shipped(tmp_path, **kw))
    with pytest.raises(RuntimeError, match=match):
        run_checks(["s"], [], None, {"s": check})


def _fake_emulator(monkeypatch, checks):
    monkeypatch.setattr(same_bytes, "CHECKS", checks)
    monkeypatch.setattr(same_bytes, "emulator_prefix", lambda cpu: [])
    monkeypatch.setattr(same_bytes, "capability", lambda prefix: "AVX2")


@pytest.mark.parametrize("status", [0, 1])
def test_the_exit_status_says_whether_a_pinned_file_differs(tmp_path, monkeypatch, capsys,
                                                            status):
    # the check named "bandit" replaced by a fake one
    _fake_emulator(monkeypatch, {"bandit": _check("bandit", DRIFTS if status else STEADY)})
    monkeypatch.setattr(same_bytes.subprocess, "run", _with_version(same_bytes.subprocess.run))
    assert same_bytes.main(["--checks", "bandit", "--out", str(tmp_path / "o")]) == status
    text = capsys.readouterr().out
    assert ("DIFFERENT" in text) == bool(status)
    rows = (tmp_path / "o" / "checks.csv").read_text().splitlines()
    assert rows[0].startswith("check,processor,kernels,file,compared_with,same,seconds")
    record = json.loads((tmp_path / "o" / "config.json").read_text())
    assert record["command"].startswith("python -m bandits.same_bytes")
    assert record["versions"]["torch"] == torch.__version__


def test_a_file_shown_only_is_reported_but_not_in_the_exit_status(tmp_path, monkeypatch):
    check = Check("bandit", lambda out: ["-c", WRITE + DRIFTS, str(out)], ("a.txt",),
                  shown_only=("a.txt",))
    _fake_emulator(monkeypatch, {"bandit": check})
    monkeypatch.setattr(same_bytes.subprocess, "run", _with_version(same_bytes.subprocess.run))
    assert same_bytes.main(["--checks", "bandit", "--out", str(tmp_path / "o")]) == 0
    assert "False" in (tmp_path / "o" / "checks.csv").read_text()  # still reported


def _with_version(run):
    """subprocess.run, with the emulator's --version answered here."""
    import subprocess

    def patched(cmd, *args, **kw):
        if cmd[-1] == "--version":
            return subprocess.CompletedProcess(cmd, 0, "qemu-x86_64 version 0\n", "")
        return run(cmd, *args, **kw)
    return patched


def test_a_check_that_fails_leaves_no_output_folder_and_no_traceback(tmp_path, monkeypatch,
                                                                   capsys):
    _fake_emulator(monkeypatch, {"bandit": _check("bandit", "sys.exit('broken')")})
    assert same_bytes.main(["--checks", "bandit", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "broken" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_no_emulator_is_a_one_line_error_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(same_bytes.platform, "machine", lambda: "x86_64")
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
def test_on_an_emulated_haswell_the_pinned_operations_agree_and_native_ones_do_not(tmp_path):
    """What the docs say of the pin (docs/simulator.md, results/same-bytes): pinned, an
    emulated Intel Haswell gives the same bytes for every operation the project's runs take
    (torch's own sqrt, MKL's, is not one of them); with the libraries' own kernels MKL's
    matrix products and vector functions differ."""
    emulated = same_bytes.emulator_prefix("Haswell-v4")
    assert same_bytes.capability(emulated) == "AVX2"  # the emulator is in effect
    rows = run_checks(["ops"], emulated, None, keep=tmp_path)
    assert [(r["kernels"], r["same"]) for r in rows if r["file"] == "ops.csv"] == [
        ("pinned", True), ("native", False)]

    def read(kernels, where, name):
        lines = (tmp_path / f"ops-{kernels}-{where}" / name).read_text().splitlines()
        return dict(line.rsplit(",", 1) for line in lines[1:])

    here, there = read("native", "this", "ops.csv"), read("native", "emulated", "ops.csv")
    assert [op for op in ("mm", "addmm", "bmm", "exp", "log") if here[op] == there[op]] == []
    roots = read("pinned", "emulated", "sqrt.csv")
    assert roots["bandits.bayes.sqrt: values not correctly rounded (of 4096)"] == "0"


def test_a_kept_check_leaves_each_processors_files_in_the_output(tmp_path):
    kept = tmp_path / "out"
    rows = run_checks(["k"], [], None, {"k": _check("k", STEADY, unpinned=True, keep=True)},
                      keep=kept)
    assert [r["same"] for r in rows] == [True, True]
    assert sorted(p.parent.name for p in kept.glob("*/a.txt")) == [
        "k-native-emulated", "k-native-this", "k-pinned-emulated", "k-pinned-this"]


@pytest.mark.slow
def test_the_ops_check_hashes_every_operation_and_counts_sqrts_off_by_a_rounding(tmp_path):
    rows = run_checks(["ops"], [], None, keep=tmp_path)
    assert all(r["same"] for r in rows)  # one processor: the same bytes twice
    table = (tmp_path / "ops-pinned-this" / "ops.csv").read_text().splitlines()
    assert table[0] == "op,sha256" and {"mm", "exp", "log", "bandits.bayes.sqrt"} <= {
        line.split(",")[0] for line in table}
    roots = (tmp_path / "ops-pinned-this" / "sqrt.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in roots] == [
        "op", "torch.sqrt", "bandits.bayes.sqrt",
        "torch.sqrt: values not correctly rounded (of 4096)",
        "bandits.bayes.sqrt: values not correctly rounded (of 4096)"]
    assert 0 <= int(roots[3].rsplit(",", 1)[1]) <= 4096
    assert roots[4].endswith(",0")  # the square root the project's runs take is exact


def test_another_mkl_mode_is_run_checked_and_named_for_what_it_is(tmp_path):
    rows = run_checks(["k"], [], None, {"k": _check("k", STEADY, keep=True)}, keep=tmp_path,
                      mkl_cbwr="AVX2")
    assert [(r["kernels"], r["same"]) for r in rows] == [("MKL_CBWR=AVX2", True)]
    assert (tmp_path / "k-mkl_cbwr-avx2-emulated" / "a.txt").is_file()


def test_no_native_skips_the_libraries_own_kernels(tmp_path):
    rows = run_checks(["k"], [], None, {"k": _check("k", STEADY, unpinned=True, keep=True)},
                      keep=tmp_path, mkl_cbwr="AVX2", native=False)
    assert [(r["kernels"], r["same"]) for r in rows] == [("MKL_CBWR=AVX2", True)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "k-mkl_cbwr-avx2-emulated", "k-mkl_cbwr-avx2-this"]


# ---- the shipped check: results/same-bytes, its page built from its files

SHIPPED = Path(__file__).resolve().parents[1] / "results" / "same-bytes"


def checks_table(folder: Path) -> list[str]:
    """The page's rows of a shipped folder's ``checks.csv``."""
    import csv

    with open(folder / "checks.csv", newline="") as f:
        return [f"| {r['check']} | {r['processor']} | {r['kernels']} | {r['file']} | "
                f"{r['compared_with']} | {'same' if r['same'] == 'True' else '**other bytes**'}"
                f" | {float(r['seconds']):.0f} |" for r in csv.DictReader(f)]


def ops_table(modes: dict[str, tuple[Path, Path]], name: str = "ops.csv") -> list[str]:
    """The page's rows of the ``ops`` check's ``name`` file: per operation and kernels
    mode, whether this processor and the emulated one gave the same bytes; a count of
    values not correctly rounded as the two counts."""
    read = {}
    for mode, (here, there) in modes.items():
        a = dict(line.rsplit(",", 1) for line in (here / name).read_text().splitlines()[1:])
        b = dict(line.rsplit(",", 1) for line in (there / name).read_text().splitlines()[1:])
        read[mode] = (a, b)
    first = next(iter(read.values()))[0]
    rows = []
    for op in first:
        if "not correctly rounded" in op:
            cells = [f"{a[op]} here, {b[op]} emulated" for a, b in read.values()]
        else:
            cells = ["same" if a[op] == b[op] else "**other bytes**" for a, b in read.values()]
        rows.append(f"| {op} | " + " | ".join(cells) + " |")
    return rows


FOLDERS = ("pinned", "regression", "agents", "mkl-avx2")


def _ops_modes() -> dict[str, tuple[Path, Path]]:
    pinned, avx2 = SHIPPED / "pinned", SHIPPED / "mkl-avx2"
    return {"pinned": (pinned / "ops-pinned-this", pinned / "ops-pinned-emulated"),
            "MKL_CBWR=AVX2": (avx2 / "ops-mkl_cbwr-avx2-this", avx2 / "ops-mkl_cbwr-avx2-emulated"),
            "native": (pinned / "ops-native-this", pinned / "ops-native-emulated")}


def test_the_shipped_page_is_its_files():
    import csv

    bandit = same_bytes.CHECKS["bandit"].argv(Path("o"))
    assert bandit[bandit.index("--steps") + 1] == "400"  # "a 400-step ... run" (and docs)
    agents = same_bytes.CHECKS["agents"].argv(Path("o"))
    assert agents[agents.index("--steps") + 1] == "200"  # "200 steps of every other agent"
    page = (SHIPPED / "README.md").read_text()
    flat = " ".join(page.split())
    for folder in FOLDERS:
        for row in checks_table(SHIPPED / folder):
            assert row in page, row
        record = json.loads((SHIPPED / folder / "config.json").read_text())
        assert f"    {record['command']}" in page
        assert record["versions"]["kernels"]["MKL_CBWR"] == "COMPATIBLE"  # made under the pin
    for name in ("ops.csv", "sqrt.csv"):
        for row in ops_table(_ops_modes(), name):
            assert row in page, row
    with open(SHIPPED / "pinned" / "checks.csv", newline="") as f:
        pinned = list(csv.DictReader(f))
    for folder in ("regression", "agents"):
        with open(SHIPPED / folder / "checks.csv", newline="") as f:
            pinned += list(csv.DictReader(f))
    # "under the pin every file a run writes is the same bytes; torch's own sqrt is not"
    assert {(r["check"], r["file"]) for r in pinned
            if r["kernels"] == "pinned" and r["same"] != "True"} == {("ops", "sqrt.csv")}
    # "with MKL's AVX2 mode, or the libraries' own kernels, the bandit run differs"
    with open(SHIPPED / "mkl-avx2" / "checks.csv", newline="") as f:
        avx2 = list(csv.DictReader(f))
    assert not any(r["same"] == "True" for r in avx2 if r["check"] == "bandit")
    assert not any(r["same"] == "True" for r in pinned
                   if r["check"] == "bandit" and r["kernels"] == "native")
    # the prose's numbers: the emulated run's seconds, the wall times, the sqrt counts
    bandit_s = next(float(r["seconds"]) for r in pinned
                    if (r["check"], r["processor"], r["kernels"]) == ("bandit", "emulated",
                                                                      "pinned"))
    assert f"a 400-step bandit run took {bandit_s:.0f} s there" in flat
    for folder in FOLDERS:
        seconds = json.loads((SHIPPED / folder / "config.json").read_text())["wall_seconds"]
        minutes, rest = divmod(round(seconds), 60)
        assert f"`{folder}` {minutes} min {rest} s" in flat, folder
    counts = {m: [dict(line.rsplit(",", 1) for line in (d / "sqrt.csv").read_text()
                       .splitlines()[1:])["torch.sqrt: values not correctly rounded (of 4096)"]
                  for d in pair] for m, pair in _ops_modes().items()}
    assert counts["pinned"][0] == counts["MKL_CBWR=AVX2"][0]  # "here" in both modes
    assert f"not correctly rounded here ({counts['pinned'][0]} of 4096 values)" in flat
    assert counts["MKL_CBWR=AVX2"][1] == "0"  # "emulated it is correctly rounded in AVX2"
    assert f"off in {counts['pinned'][1]} values in the compatible one" in flat


# the command as ``python -m bandits.same_bytes`` starts it, but its regression check is
# not compared with the shipped result: being stopped needs no particular torch
UNCOMPARED = """import dataclasses, sys
from bandits.core.startup import start
start("bandits.same_bytes")
from bandits.tools import same_bytes
checks = same_bytes.CHECKS
checks["regression"] = dataclasses.replace(checks["regression"], shipped=None)
sys.exit(same_bytes.main())
"""


@pytest.mark.skipif(same_bytes.platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the command runs on x86-64 only")
def test_sigterm_leaves_no_temporary_folder_no_output_and_no_child(tmp_path):
    """A stand-in emulator on PATH (it runs the program as it is): the command starts a
    check, is stopped by SIGTERM, and leaves nothing behind. Under any torch: the check
    is not compared with the shipped result (:data:`UNCOMPARED`)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    bin_dir, scratch = tmp_path / "bin", tmp_path / "scratch"
    bin_dir.mkdir()
    scratch.mkdir()
    fake = bin_dir / same_bytes.EMULATOR
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo fake; exit 0; fi\n'
                    'shift 2\nexec "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "TMPDIR": str(scratch), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", UNCOMPARED, "--checks", "regression",
                             "--out", str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 120
    while not any(scratch.glob("*/regression-*")):  # a check's run has begun
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert "stopped by signal SIGTERM" in err
    time.sleep(1)  # the child, killed with its parent, is gone
    assert list(scratch.iterdir()) == [] and not out.exists()


XEON = SHIPPED / "xeon-host"
XEON_CPUS = {"haswell": "Haswell-v4", "epyc": "EPYC-v3"}


def _xeon_ops_modes(cpu: str) -> dict[str, tuple[Path, Path]]:
    ops, strict = XEON / f"{cpu}-ops", XEON / f"{cpu}-strict"
    return {"pinned": (ops / "ops-pinned-this", ops / "ops-pinned-emulated"),
            "MKL_CBWR=AVX2,STRICT": (strict / "ops-mkl_cbwr-avx2,strict-this",
                                     strict / "ops-mkl_cbwr-avx2,strict-emulated"),
            "native": (ops / "ops-native-this", ops / "ops-native-emulated")}


def test_the_xeon_hosts_page_is_its_files():
    import csv

    page = (XEON / "README.md").read_text()
    flat = " ".join(page.split())
    rows: dict[str, list[dict]] = {}
    for cpu, model in XEON_CPUS.items():
        for part in ("ops", "strict", "", *(("agents",) if cpu == "epyc" else ())):
            folder = XEON / f"{cpu}-{part}".rstrip("-")
            for row in checks_table(folder):
                assert row in page, row
            record = json.loads((folder / "config.json").read_text())
            assert f"    {record['command']}" in page
            assert record["cpu"] == model and "GenuineIntel" in \
                record["versions"]["kernels"]["processor"]  # this processor: an Intel one
            hours, minutes = divmod(round(record["wall_seconds"]), 3600)
            minutes, rest = divmod(minutes, 60)
            took = (f"{hours} h {minutes} min {rest} s" if hours else
                    f"{minutes} min {rest} s" if minutes else f"{rest} s")
            assert f"`{folder.name}` {took}" in flat, folder.name
            with open(folder / "checks.csv", newline="") as f:
                rows[folder.name] = list(csv.DictReader(f))
        for name in ("ops.csv", "sqrt.csv"):
            for row in ops_table(_xeon_ops_modes(cpu), name):
                assert row in page, (cpu, row)
    # "in exact mode every file a run writes is the same bytes on all three processors"
    exact = [r for name, rs in rows.items() if not name.endswith("strict") for r in rs
             if r["kernels"] == "pinned"]
    assert {(r["check"], r["file"]) for r in exact if r["same"] != "True"} == \
        {("ops", "sqrt.csv")}
    assert {r["check"] for r in exact} == {"ops", "bandit", "regression", "agents"}
    # "MKL's AVX2,STRICT mode: the same bytes on the emulated Intel, not on the AMD"
    assert all(r["same"] == "True" for r in rows["haswell-strict"])
    assert not any(r["same"] == "True" for r in rows["epyc-strict"] if r["file"] == "ops.csv")
    # "the libraries' own kernels differ on both": the emulated processors take other paths
    assert not any(r["same"] == "True" for cpu in XEON_CPUS for r in rows[f"{cpu}-ops"]
                   if r["kernels"] == "native")
