"""The math kernels (bandits.core.kernels): the libraries' own by default; in exact mode
(--exact, BANDITS_EXACT=1) pinned by every entry point before torch loads; recorded in
config.json with the mode MKL reports; a variable the user set is kept as it is."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bandits.core import kernels

ROOT = Path(__file__).parents[1]
PROBE = ("from bandits.core import kernels; kernels.pin(); import json, torch; "
         "print(json.dumps(kernels.record()))")
x86 = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                         reason="the pin is set on x86-64 only")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in (*kernels.PIN, kernels.RETIRED, kernels.EXACT)}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _probe(**extra: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], env=_env(**extra),
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


@x86
def test_exact_mode_pins_before_torch_loads_and_records_what_mkl_ran():
    assert _probe(BANDITS_EXACT="1") == {
        "mode": "exact", "pinned": True, "aten": "AVX2", **kernels.PIN,
        "mkl_ran": "COMPATIBLE", "processor": kernels.processor()}


@x86
def test_the_default_is_the_libraries_own_kernels():
    got = _probe()
    assert got["mode"] == "native" and got["pinned"] is False
    assert all(got[k] is None for k in kernels.PIN) and got["mkl_ran"] == "OFF"


@x86
def test_a_mode_mkl_ignores_is_recorded_as_what_it_ran():
    # MKL_CBWR=BOGUS is not a mode: MKL runs AUTO, and the record says so
    got = _probe(MKL_CBWR="BOGUS")
    assert got["MKL_CBWR"] == "BOGUS" and got["mkl_ran"] == "AUTO"


@pytest.mark.parametrize("value", ["maybe", "TRUEISH", "2"])
def test_a_malformed_switch_is_one_line(value):
    done = subprocess.run([sys.executable, "-m", "bandits.run", "--agent", "greedy"],
                          env=_env(BANDITS_EXACT=value), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "BANDITS_EXACT" in done.stderr


@pytest.mark.parametrize("value", ["1", "maybe"])
def test_the_retired_native_switch_is_said_once_and_read_no_more(value):
    # exact mode is what --exact says, whatever the old variable holds; the processes a
    # command starts say nothing more
    code = ("from bandits.core import kernels; import subprocess, sys; "
            "print(kernels.requested(['--exact'])); "
            "subprocess.run([sys.executable, '-c', "
            "'from bandits.core import kernels; print(kernels.requested([]))'])")
    done = subprocess.run([sys.executable, "-c", code], env=_env(BANDITS_NATIVE_KERNELS=value),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["True", "False"]
    (line,) = done.stderr.strip().splitlines()
    assert "BANDITS_NATIVE_KERNELS is no longer read" in line and "--exact" in line


def test_the_record_names_the_processor():
    name = kernels.processor()
    assert name and name == kernels.processor()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        text = cpuinfo.read_text()
        vendor = next((ln.split(":", 1)[1].strip() for ln in text.splitlines()
                       if ln.startswith("vendor_id")), None)
        if vendor:
            assert name.startswith(vendor)
        first = text.split("\n\n")[0]
        assert name.endswith(" avx512") == (" avx512f" in first)


@x86
def test_the_default_leaves_the_choice_to_the_libraries():
    got = _probe()
    assert got["pinned"] is False
    assert all(got[k] is None for k in kernels.PIN)


@x86
def test_a_variable_the_user_set_is_kept_and_the_record_says_it_is_not_the_pin():
    got = _probe(MKL_CBWR="AVX2", BANDITS_EXACT="1")
    assert got["MKL_CBWR"] == "AVX2" and got["pinned"] is False


@x86
def test_a_pin_after_torch_loaded_is_not_taken_for_one():
    code = ("import torch; from bandits.core import kernels; kernels.pin(); import json; "
            "print(json.dumps(kernels.record()))")
    done = subprocess.run([sys.executable, "-c", code], env=_env(BANDITS_EXACT="1"),
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout)["pinned"] is False


@x86
@pytest.mark.parametrize("how", ["default", "flag", "variable"])
def test_a_run_records_its_mode_and_its_command_reproduces_it(tmp_path, how):
    extra = {kernels.EXACT: "1"} if how == "variable" else {}
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "bandits.run", "--env", "wheel", "--agent", "greedy",
                    "--seeds", "1", "--steps", "5", "--hidden", "8", "--no-progress",
                    *(["--exact"] if how == "flag" else []), "--out", str(out)],
                   env=_env(**extra), capture_output=True, timeout=300, check=True)
    config = json.loads((out / "config.json").read_text())
    record = config["versions"]["kernels"]
    exact = how != "default"
    assert record["mode"] == ("exact" if exact else "native") and record["pinned"] is exact
    assert record["ATEN_CPU_CAPABILITY"] == ("avx2" if exact else None)
    assert config["exact"] is exact
    assert ("--exact" in config["command"].split()) is exact


@pytest.mark.slow
@x86
def test_a_run_resumes_only_in_its_own_mode(tmp_path):
    out = tmp_path / "run"
    base = [sys.executable, "-m", "bandits.run"]
    subprocess.run([*base, "--env", "wheel", "--agent", "greedy", "--seeds", "1", "--steps",
                    "5", "--hidden", "8", "--no-progress", "--exact", "--out", str(out)],
                   env=_env(), capture_output=True, timeout=300, check=True)
    native = subprocess.run([*base, "--resume", str(out), "--steps", "6"], env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert native.returncode == 2 and "--exact" in native.stderr
    exact = subprocess.run([*base, "--resume", str(out), "--steps", "6", "--exact"],
                           env=_env(), capture_output=True, text=True, timeout=300)
    assert exact.returncode == 0, exact.stderr


def test_this_test_process_runs_in_exact_mode_where_it_applies():
    # conftest.py pins before torch loads, as --exact does: the byte-for-byte reruns of
    # the shipped results compare like with like
    if not kernels.x86_64():
        pytest.skip("no exact mode here (not x86-64)")
    assert kernels.in_force()


MNIST_TINY = ["--quick", "--epochs", "1", "--train-size", "64", "--test-size", "32",
              "--hidden", "8", "--eval-samples", "1", "--ood-images", "8", "--prune", "0",
              "--threads", "1", "--no-progress", "--no-download"]


@x86
@pytest.mark.parametrize("how", ["default", "flag", "variable"])
def test_an_mnist_run_records_its_mode_and_its_command_reproduces_it(tmp_path, how,
                                                                      mnist_data_dir):
    extra = {kernels.EXACT: "1"} if how == "variable" else {}
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "bandits.mnist", *MNIST_TINY, "--data-dir",
                    str(mnist_data_dir), *(["--exact"] if how == "flag" else []),
                    "--out", str(out)],
                   env=_env(**extra), capture_output=True, timeout=300, check=True)
    summary = json.loads((out / "summary.json").read_text())
    exact = how != "default"
    assert summary["kernels"]["mode"] == ("exact" if exact else "native")
    assert summary["kernels"]["pinned"] is exact and summary["settings"]["exact"] is exact
    assert ("--exact" in summary["command"].split()) is exact


@x86
def test_an_mnist_run_resumes_only_in_its_own_mode(tmp_path, mnist_data_dir):
    out = tmp_path / "run"
    base = [sys.executable, "-m", "bandits.mnist"]
    subprocess.run([*base, *MNIST_TINY, "--data-dir", str(mnist_data_dir), "--exact",
                    "--out", str(out)], env=_env(), capture_output=True, timeout=300,
                   check=True)
    native = subprocess.run([*base, "--resume", str(out), "--data-dir", str(mnist_data_dir)],
                            env=_env(), capture_output=True, text=True, timeout=300)
    assert native.returncode == 2 and "--exact" in native.stderr
    assert len(native.stderr.strip().splitlines()) == 1
    exact = subprocess.run([*base, "--resume", str(out), "--data-dir", str(mnist_data_dir),
                            "--exact"], env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert exact.returncode == 0, exact.stderr
    resumed = json.loads((out / "summary.json").read_text())
    assert resumed["kernels"]["mode"] == "exact" and resumed["settings"]["exact"] is True
    # a default-mode run is not resumed in exact mode
    default = tmp_path / "default"
    subprocess.run([*base, *MNIST_TINY, "--data-dir", str(mnist_data_dir), "--out",
                    str(default)], env=_env(), capture_output=True, timeout=300, check=True)
    refused = subprocess.run([*base, "--resume", str(default), "--data-dir",
                              str(mnist_data_dir), "--exact"], env=_env(),
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "not an exact-mode one" in refused.stderr


@x86
@pytest.mark.parametrize("how", ["default", "variable"])
def test_the_learner_screen_and_the_gradient_variance_record_their_mode(
        tmp_path, how, mnist_data_dir, mushroom_data_dir):
    """Every command that computes results takes ``--exact`` and records the kernels it ran
    under; made exact by ``BANDITS_EXACT=1``, its recorded command has the flag."""
    extra = {kernels.EXACT: "1"} if how == "variable" else {}
    # folders with a space in their names: each recorded command quotes them
    screen, variance = tmp_path / "the screen", tmp_path / "the variance"
    for args in (["bandits.learner_screen", "--learner", "greedy", "--draws-per-item", "2",
                  "--buffers", "2", "--buffer-size", "320", "--data-dir",
                  str(mushroom_data_dir), "--out", str(screen)],
                 ["bandits.gradient_variance", "--draws", "2", "--batch", "8", "--data-dir",
                  str(mnist_data_dir), "--out", str(variance)]):
        subprocess.run([sys.executable, "-m", *args], env=_env(**extra), capture_output=True,
                       timeout=300, check=True)
    screen_json = json.loads((screen / "screen.json").read_text())
    variance_json = json.loads((variance / "gradient_variance.json").read_text())
    exact = how != "default"
    for record, command in ((screen_json["kernels"], screen_json["command"]),
                            (variance_json["versions"]["kernels"], variance_json["command"])):
        assert record["mode"] == ("exact" if exact else "native")
        assert ("--exact" in command.split()) is exact
        assert str(screen if record is screen_json["kernels"] else variance) in \
            shlex.split(command)
    assert screen_json["settings"]["exact"] is exact


def test_the_shipped_results_torch_is_the_one_their_records_name():
    for run in ("results/regression", "results/mushroom/quick"):
        record = json.loads((ROOT / run / "config.json").read_text())
        assert record["versions"]["torch"] == kernels.SHIPPED_TORCH, run
        assert record["versions"]["kernels"]["pinned"] is True, run


def test_exact_mode_under_another_torch_is_told_in_one_line():
    assert kernels.other_torch(kernels.SHIPPED_TORCH) is None
    line = kernels.other_torch("2.99.0+cpu")
    assert "\n" not in line and "torch 2.99.0+cpu" in line
    assert f"torch {kernels.SHIPPED_TORCH}" in line and "promised under it only" in line


@x86
def test_a_run_given_exact_under_another_torch_warns_once_and_runs(tmp_path, monkeypatch,
                                                                   capsys):
    import torch

    from bandits.run import main

    monkeypatch.setattr(torch, "__version__", "2.99.0+cpu")
    tiny = ["--env", "wheel", "--agent", "greedy", "--seeds", "1", "--steps", "3",
            "--no-progress", "--workers", "1"]
    assert main([*tiny, "--exact", "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bandits.run: warning: --exact under torch "
                                               "2.99.0+cpu"), err
    assert kernels.SHIPPED_TORCH in err[0]
    # exact mode without the flag (BANDITS_EXACT=1, as here) and a worker's run: silent
    assert main([*tiny, "--out", str(tmp_path / "b")]) == 0
    assert main([*tiny, "--exact", "--progress-file", str(tmp_path / "p"),
                 "--out", str(tmp_path / "c")]) == 0
    assert "warning" not in capsys.readouterr().err
