"""The shipped results' bytes on another processor, without a second machine: each
check's command run here and on an emulated processor, and its files compared.

Whether a command gives the same bytes on another processor, under the pinned kernels
(:mod:`bandits.core.kernels`) or not, cannot be seen on one processor, so this command
runs each check's command on this processor and again on an emulated one (QEMU's user-mode
emulator, ``qemu-x86_64 -cpu MODEL``; by default an Intel Haswell: AVX2, no AVX-512, and
an Intel vendor, for which MKL chooses its own code paths), and compares the bytes of the
files each check names. The checks:

* ``bandit``: 400 steps of BBB and greedy, one seed, under the pin and with the libraries'
  own kernels (the default): whether the pinned runs are the same bytes;
  the unpinned pair says whether the emulated processor takes other kernel paths at all (if it
  gives the same bytes too, the check shows nothing);
* ``agents``: 200 steps of every other agent (BBB with the local reparameterisation
  trick, the linear agents, NeuralUCB, NeuralTS, dropout, the bootstrap, neural-linear,
  uniform), one seed, under the pin;
* ``regression``: ``python -m bandits.regression``, against the shipped
  ``results/regression``;
* ``quick``: the default command (``--log-points 500``, as the test that reruns it),
  against the shipped ``results/mushroom/quick``;
* ``ops``: single operations on fixed inputs (matrix products, ``exp``, ``log``, a
  Cholesky factor, a fused Adam step, ...), each one's bytes hashed (``ops.csv``), and
  torch's own ``sqrt`` beside :func:`bandits.bayes.sqrt`, with the count of each one's
  values that are not correctly rounded (``sqrt.csv``): where a difference comes from.
  Both files of each processor are kept in ``--out``.

Every command runs in one process (``--workers 1``): a worker process started by exec
would run on the real processor. Emulation is slow: minutes where a run here takes seconds.

Outputs in ``--out DIR`` (default ``runs/<timestamp>-same-bytes``): ``checks.csv`` (per
check, processor, kernels and file: what it was compared with, whether it is the same,
the command's seconds) and ``config.json`` (command, machine, versions, the emulator,
torch's own kernel set on each processor). A shipped result is compared only where it was
made under the pin with this torch version (else the command says so and stops). Exit
status 0 when every pinned file is the same (``sqrt.csv``, torch's own ``sqrt``, is
reported but differs by design), 1 when one differs (from the other processor's or from
the shipped one), 2 when a check could not be run.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bandits.core import kernels
from bandits.core.command import parsed, refused, writing
from bandits.core.command_line import build_parser, first_paragraph
from bandits.core.config import UsageError, setting
from bandits.core.files import machine, package_versions, write_csv, write_json
from bandits.core.outputs import OutputDirError, output_dir, remove_if_unused
from bandits.core.processes import die_with_parent, stop_on_ctrl_c
from bandits.core.startup import on_stop

REPO = Path(__file__).resolve().parents[2]
EMULATOR = "qemu-x86_64"


@dataclass(frozen=True)
class Check:
    """A command (its arguments after ``python``, given the output directory) and the
    files of its output compared; ``shipped``: the folder of the shipped result they must
    equal (else the two processors' files are compared with each other); ``unpinned``:
    also run with the libraries' own kernels."""

    name: str
    argv: Callable[[Path], list[str]]
    files: tuple[str, ...]
    shipped: Path | None = None
    unpinned: bool = False
    keep: bool = False  # its files copied to --out/<check>-<kernels>-<processor>/
    # files compared and reported but not in the exit status: they differ by design
    shown_only: tuple[str, ...] = ()


# The ``ops`` check: each operation's output bytes hashed (sha256), on fixed inputs.
# ops.csv: the operations a run takes; sqrt.csv: torch's own sqrt (MKL's vector function,
# which no run takes) beside bandits.bayes.sqrt, and how many of each's values are not
# correctly rounded.
OPS = r"""
import hashlib, pathlib, sys
import numpy as np, torch
from bandits.bayes import sqrt
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
x, w = torch.randn(64, 119, generator=g), torch.randn(100, 119, generator=g)
b = torch.randn(100, generator=g)
v = torch.randn(4096, generator=g)
pos = v.abs() + 1e-3
a = (x.T @ x).double() + torch.eye(119, dtype=torch.float64)
chol = torch.linalg.cholesky(a)
p = torch.nn.Parameter(v.clone())
opt = torch.optim.Adam([p], lr=0.01, fused=True)
p.grad = torch.tanh(v)
opt.step()
ops = {"inputs (randn)": v, "mm": x @ w.T, "addmm": torch.addmm(b, x, w.T),
       "bmm": torch.bmm(x.expand(4, 64, 119), w.T.expand(4, 119, 100)),
       "exp": torch.exp(v), "log": torch.log(pos), "float64 exp": torch.exp(v.double()),
       "log1p": torch.log1p(pos), "softplus": torch.nn.functional.softplus(v),
       "tanh": torch.tanh(v), "sigmoid": torch.sigmoid(v), "sum": v.sum().reshape(1),
       "div": v / (v.abs() + 1.0), "cholesky (float64)": chol,
       "solve_triangular (float64)": torch.linalg.solve_triangular(chol, a[:, :8],
                                                                   upper=False),
       "Adam step (fused)": p.detach(), "bandits.bayes.sqrt": sqrt(pos)}
roots = {"torch.sqrt": torch.sqrt(pos), "bandits.bayes.sqrt": sqrt(pos)}
exact = np.sqrt(pos.numpy().astype(np.float64)).astype(np.float32)  # rounded once


def hashed(t):
    return hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest()[:16]


out = pathlib.Path(sys.argv[1]); out.mkdir()
(out / "ops.csv").write_text("\n".join(["op,sha256"] + [f"{k},{hashed(t)}"
                                                       for k, t in ops.items()]) + "\n")
(out / "sqrt.csv").write_text("\n".join(
    ["op,sha256"] + [f"{k},{hashed(t)}" for k, t in roots.items()]
    + [f"{k}: values not correctly rounded (of 4096),{int((t.numpy() != exact).sum())}"
       for k, t in roots.items()]) + "\n")
import json
from bandits.core import kernels
(out / "config.json").write_text(json.dumps({"versions": {"kernels": kernels.record()}}))
"""


# every agent but those of the bandit check: the local reparameterisation trick, the linear
# agents' linear algebra, NeuralUCB's and NeuralTS's widths, dropout, the bootstrap
OTHER_AGENTS = ("bbb-lrt", "linfullpost", "linucb", "neuralucb", "neuralts", "dropout",
                "bootstrap", "neurallinear", "uniform")


CHECKS: dict[str, Check] = {c.name: c for c in (
    Check("bandit", lambda out: ["-m", "bandits.run", "--agent", "bbb", "greedy", "--seeds",
                                 "1", "--steps", "400", "--workers", "1", "--no-progress",
                                 "--out", str(out)],
          ("metrics.csv", "phases.csv", "summary.csv"), unpinned=True),
    Check("agents", lambda out: ["-m", "bandits.run", "--agent", *OTHER_AGENTS, "--seeds", "1",
                                 "--steps", "200", "--workers", "1", "--no-progress",
                                 "--out", str(out)],
          ("metrics.csv", "phases.csv", "summary.csv")),
    Check("regression", lambda out: ["-m", "bandits.regression", "--no-plot", "--out", str(out)],
          ("regression.csv",), shipped=REPO / "results" / "regression"),
    Check("quick", lambda out: ["-m", "bandits.run", "--log-points", "500", "--workers", "1",
                                "--no-progress", "--out", str(out)],
          ("summary.csv", "metrics.csv", "phases.csv"),
          shipped=REPO / "results" / "mushroom" / "quick"),
    Check("ops", lambda out: ["-c", "from bandits.core import kernels; kernels.pin()\n" + OPS,
                              str(out)], ("ops.csv", "sqrt.csv"), unpinned=True, keep=True,
          shown_only=("sqrt.csv",)),
)}


MKL_MODES = ("AUTO", "COMPATIBLE", "SSE2", "SSSE3", "SSE4_1", "SSE4_2", "AVX", "AVX2",
             "AVX512", "AVX512_E1", "AVX512_MIC", "AVX512_MIC_E1")
"""The values of ``MKL_CBWR`` that MKL's documentation names (each may end in ``,STRICT``)."""


@dataclass
class Config:
    """Settings of the cross-processor check; each field is a CLI flag (``--kebab-case``)."""

    checks: list[str] = setting(list(CHECKS), "checks to run, from: " + ", ".join(CHECKS),
                                nargs="+", choices=list(CHECKS), type=str)
    cpu: str = setting("Haswell-v4", "the emulated processor (a model of "
                       "'qemu-x86_64 -cpu help'; it must have AVX2)", type=str)
    data_dir: str | None = setting(None, "directory with mushroom/ (else $BANDITS_DATA_DIR "
                                   "or the cache)", type=str)
    out: str | None = setting(None, "output directory (default runs/<timestamp>-same-bytes)",
                              type=str)
    mkl_cbwr: str | None = setting(
        None, "MKL_CBWR for the pinned runs instead of the pin's COMPATIBLE (e.g. AVX2, "
        "MKL's AVX2 code; one of " + ", ".join(MKL_MODES) + ", each optionally with "
        "',STRICT'); the kernels mode is then named 'MKL_CBWR=VALUE'", type=str)
    no_native: bool = setting(False, "skip the runs with the libraries' own kernels "
                              "(the default, unpinned) of the bandit and ops checks")
    overwrite: bool = setting(False, "replace this command's outputs in --out")


def parser():
    return build_parser(Config, "bandits.same_bytes", first_paragraph(__doc__))


def emulator_prefix(cpu: str) -> list[str]:
    """The command prefix that runs a program on the emulated processor ``cpu``; a
    :class:`UsageError` where there is no emulator or the host is not x86-64."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise UsageError("the pinned kernels' promise is for x86-64; this machine is "
                         f"{platform.machine()}")
    if shutil.which(EMULATOR) is None:
        raise UsageError(f"{EMULATOR} not found: install QEMU's user-mode emulator "
                         "(Debian and Ubuntu: apt install qemu-user)")
    return [EMULATOR, "-cpu", cpu]


def _run(prefix: list[str], argv: list[str], env: dict[str, str]) -> float:
    """Seconds taken by ``python ARGV`` after ``prefix``; a RuntimeError with the end of
    its output when it fails."""
    start = time.perf_counter()
    what = shlex.join([*prefix, "python", *argv])
    _call([*prefix, sys.executable, *argv], env, what if len(what) < 200 else what[:196] + " ...")
    return time.perf_counter() - start


def _call(cmd: list[str], env: dict[str, str], what: str) -> str:
    """The standard output of ``cmd`` (killed with this process; run from the repository's
    root); a RuntimeError naming ``what`` with the end of its output when it fails."""
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                          preexec_fn=die_with_parent if sys.platform.startswith("linux")
                          else None)
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines()
                 if "TCG doesn't support" not in ln]  # the emulator's feature warnings
        tail = " ".join(" ".join(lines).split()[-40:])
        raise RuntimeError(f"{what} failed (exit {done.returncode}): {tail}")
    return done.stdout


def capability(prefix: list[str]) -> str:
    """torch's own kernel set (unpinned) on the processor ``prefix`` runs on."""
    env = {**os.environ}
    for name in (*kernels.PIN, kernels.EXACT):
        env.pop(name, None)
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    return _call([*prefix, sys.executable, "-c", code], env,
                 f"{' '.join(prefix) or 'this processor'}: reading torch's kernel set").strip()


def shipped_ok(folder: Path) -> None:
    """A RuntimeError unless the shipped result in ``folder`` was made under the pin with
    this torch version (else its bytes are not promised, whatever the processor)."""
    import torch

    try:
        versions = json.loads((folder / "config.json").read_text())["versions"]
        pinned, made = versions["kernels"]["pinned"], versions["torch"]
    except (OSError, ValueError, KeyError, TypeError):
        raise RuntimeError(f"{folder}/config.json records no torch version or kernels: "
                           "not a shipped result to compare with") from None
    if pinned is not True or made != torch.__version__:
        raise RuntimeError(f"{folder} was made with torch {made}, kernels "
                           f"{'pinned' if pinned else 'unpinned'}; its bytes are promised "
                           f"only under the pin with the same torch (here {torch.__version__})")


def run_checks(names: Sequence[str], emulated: list[str], data_dir: str | None,
               checks: dict[str, Check] | None = None, keep: Path | None = None,
               mkl_cbwr: str | None = None, native: bool = True) -> list[dict]:
    """Each check (of ``checks``, else :data:`CHECKS`) on this processor (prefix ``[]``)
    and on ``emulated``, pinned (and unpinned where it says so, unless ``native`` is
    false): a row per processor, kernels and file, compared with the shipped file where
    the check has one, and the emulated processor's file with this one's."""
    checks = CHECKS if checks is None else checks
    rows = []
    base = {**os.environ, "BANDITS_WORKERS": "1"}
    for name in [*kernels.PIN, kernels.EXACT]:  # each run's own mode
        base.pop(name, None)
    if data_dir:  # the commands run from the repository's root
        base["BANDITS_DATA_DIR"] = str(Path(data_dir).expanduser().resolve())
    pinned = (("pinned", {kernels.EXACT: "1"}) if mkl_cbwr is None
              else (f"MKL_CBWR={mkl_cbwr}", {kernels.EXACT: "1", "MKL_CBWR": mkl_cbwr}))
    with tempfile.TemporaryDirectory() as tmp:
        on_stop(functools.partial(shutil.rmtree, tmp, True))  # SIGTERM: no folder left
        for name in names:
            check = checks[name]
            if check.shipped is not None:
                shipped_ok(check.shipped)
            for mode, extra in [pinned, *([("native", {})] if check.unpinned and native
                                          else [])]:
                outs = _on_both(name, check, mode, {**base, **extra}, emulated, Path(tmp),
                                keep, mkl_cbwr)
                rows += _compared(name, check, mode, outs)
    return rows


def _on_both(name: str, check: Check, mode: str, env: dict[str, str], emulated: list[str],
             tmp: Path, keep: Path | None, mkl_cbwr: str | None) -> dict[str, tuple[Path, float]]:
    """The check ``name``'s command in the kernels ``mode`` (its variables in ``env``) on
    this processor and on the emulated one: each one's output folder and seconds (its
    files copied under ``keep`` where the check keeps them)."""
    outs = {}
    for where, prefix in (("this", []), ("emulated", emulated)):
        out = tmp / f"{name}-{mode}-{where}"
        seconds = _run(prefix, check.argv(out), env)
        _ran_as_asked(out, mode != "native", mkl_cbwr)
        outs[where] = (out, seconds)
        if check.keep and keep is not None:
            kept = keep / f"{name}-{mode.replace('=', '-').lower()}-{where}"
            kept.mkdir(parents=True, exist_ok=True)
            for f in check.files:
                shutil.copyfile(out / f, kept / f)
    return outs


def _compared(name: str, check: Check, mode: str, outs: dict[str, tuple[Path, float]]
              ) -> list[dict]:
    """A row per processor and file of ``outs``: the emulated processor's compared with this
    one's, and in the pinned mode of a check with a shipped result, both with its files."""
    pairs = [("emulated", "this processor", outs["this"][0])]
    if check.shipped is not None and mode == "pinned":
        pairs = [("this", "shipped", check.shipped), ("emulated", "shipped", check.shipped),
                 *pairs]
    return [{"check": name, "processor": where, "kernels": mode, "file": f,
             "compared_with": what, "same": _read(outs[where][0] / f) == _read(folder / f),
             "seconds": round(outs[where][1], 1)}
            for where, what, folder in pairs for f in check.files]


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except OSError as e:
        raise RuntimeError(f"cannot read {file.name} of {file.parent.name}: "
                           f"{e.strerror or e}") from None


def _ran_as_asked(out: Path, pinned: bool, mkl_cbwr: str | None = None) -> None:
    """A RuntimeError where the run's ``config.json`` records other kernels than asked
    for (the pin, with ``mkl_cbwr`` for MKL's where given), or none."""
    try:
        record = json.loads((out / "config.json").read_text())["versions"]["kernels"]
        said = record["pinned"]
        if pinned and mkl_cbwr is not None:  # the pin but MKL's variable
            said = record["MKL_CBWR"] == mkl_cbwr and all(
                record[k] == v for k, v in kernels.PIN.items() if k != "MKL_CBWR")
    except (OSError, ValueError, KeyError, TypeError):
        raise RuntimeError(f"{out.name}: its config.json records no kernels") from None
    if said is not pinned:
        asked = "pinned" if pinned else "the libraries' own"
        raise RuntimeError(f"{out.name} ran with the kernels {record}, not {asked}")


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.same_bytes", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        cfg = parsed(Config, parser(), argv)
        if cfg.mkl_cbwr is not None and cfg.mkl_cbwr.upper().removesuffix(",STRICT") \
                not in MKL_MODES:
            raise UsageError(f"--mkl-cbwr {cfg.mkl_cbwr!r} is not a mode of MKL's; give one "
                             f"of {', '.join(MKL_MODES)} (optionally with ',STRICT')")
        emulated = emulator_prefix(cfg.cpu)
        out = output_dir(cfg.out, "same-bytes", cfg.overwrite,
                         ("checks.csv", "config.json", "ops-*/ops.csv", "ops-*/sqrt.csv"),
                         kind="bandits.same_bytes")
    except (UsageError, OutputDirError) as e:
        return refused("bandits.same_bytes", e)
    on_stop(functools.partial(remove_if_unused, out))  # SIGTERM before any output: no folder
    with writing(out):
        start = time.perf_counter()
        try:
            found = {"this": capability([]), "emulated": capability(emulated)}
            for where, found_here in found.items():
                if found_here not in ("AVX2", "AVX512"):
                    name = "this processor" if where == "this" else f"the emulated {cfg.cpu}"
                    raise RuntimeError(f"{name} has no AVX2 (torch finds {found_here}): the "
                                       "pin promises nothing there; emulate a model with "
                                       "AVX2, e.g. Haswell-v4")
            rows = run_checks(list(dict.fromkeys(cfg.checks)), emulated, cfg.data_dir,
                              keep=out, mkl_cbwr=cfg.mkl_cbwr, native=not cfg.no_native)
        except RuntimeError as e:
            remove_if_unused(out)
            return refused("bandits.same_bytes", e)
        write_csv(rows, out / "checks.csv")
        done = subprocess.run([EMULATOR, "--version"], capture_output=True, text=True)
        write_json({"checks": cfg.checks, "cpu": cfg.cpu, "mkl_cbwr": cfg.mkl_cbwr,
                    "no_native": cfg.no_native,
                    "command": "python -m bandits.same_bytes " + shlex.join(argv),
                    "machine": machine(), "versions": package_versions(),
                    "emulator": done.stdout.splitlines()[0],
                    "torch_kernels_unpinned": found,
                    "wall_seconds": round(time.perf_counter() - start, 1)},
                   out / "config.json")
    differ = [r for r in rows if r["kernels"] != "native" and not r["same"]
              and r["file"] not in CHECKS[r["check"]].shown_only]
    for r in rows:
        print(f"{r['check']:>10} {r['processor']:>8} {r['kernels']:>6} {r['file']:<14} "
              f"{'same' if r['same'] else 'DIFFERENT'} as {r['compared_with']} "
              f"({r['seconds']:.0f} s)")
    print(f"torch's own kernels: {found['this']} here, {found['emulated']} on the emulated "
          f"{cfg.cpu}")
    native = [r["same"] for r in rows if r["kernels"] == "native"]
    if native and all(native):
        print("note: unpinned, both processors gave the same bytes too: the emulated "
              "processor took no other kernel path, so this check shows little")
    print(f"outputs in {out}")
    return 1 if differ else 0
