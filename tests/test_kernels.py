"""The pinned math kernels (bandits.core.kernels): set by every entry point before torch loads,
recorded in config.json, left to the libraries with BANDITS_NATIVE_KERNELS=1, and a
variable the user set is kept as it is."""

from __future__ import annotations

import json
import os
import platform
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
    env = {k: v for k, v in os.environ.items() if k not in (*kernels.PIN, kernels.NATIVE)}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _probe(**extra: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], env=_env(**extra),
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


@x86
def test_the_pin_set_before_torch_loads_is_in_force():
    assert _probe() == {"pinned": True, "aten": "AVX2", **kernels.PIN,
                        "processor": kernels.processor()}


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
def test_native_kernels_leave_the_choice_to_the_libraries():
    got = _probe(BANDITS_NATIVE_KERNELS="1")
    assert got["pinned"] is False
    assert all(got[k] is None for k in kernels.PIN)


@x86
def test_a_variable_the_user_set_is_kept_and_the_record_says_it_is_not_the_pin():
    got = _probe(MKL_CBWR="AVX2")
    assert got["MKL_CBWR"] == "AVX2" and got["pinned"] is False


@x86
def test_a_pin_after_torch_loaded_is_not_taken_for_one():
    code = ("import torch; from bandits.core import kernels; kernels.pin(); import json; "
            "print(json.dumps(kernels.record()))")
    done = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                          text=True, timeout=120, check=True)
    assert json.loads(done.stdout)["pinned"] is False


@x86
@pytest.mark.parametrize("native", [False, True])
def test_a_run_records_its_kernels_in_config_json(tmp_path, native):
    extra = {kernels.NATIVE: "1"} if native else {}
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "bandits.run", "--env", "wheel", "--agent", "greedy",
                    "--seeds", "1", "--steps", "5", "--hidden", "8", "--no-progress",
                    "--out", str(out)], env=_env(**extra), capture_output=True, timeout=300,
                   check=True)
    record = json.loads((out / "config.json").read_text())["versions"]["kernels"]
    assert record["pinned"] is (not native)
    assert record["ATEN_CPU_CAPABILITY"] == (None if native else "avx2")


def test_this_test_process_runs_under_the_pin_where_it_applies():
    # conftest.py pins before torch loads, as the entry points do: the byte-for-byte
    # reruns of the shipped results compare like with like
    if not kernels.applies():
        pytest.skip("no pin here (BANDITS_NATIVE_KERNELS set, or not x86-64)")
    assert kernels.in_force()
