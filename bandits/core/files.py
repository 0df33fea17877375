"""How results are written: atomic writes of every CSV, JSON file, figure and
checkpoint, and the versions and machine a result records. Writers take the data first,
then the path (:func:`write_atomic` is the exception: it writes bytes or text to a path,
like ``Path.write_bytes``). Where they go: :mod:`bandits.core.outputs`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from bandits.core import kernels
from bandits.core.style import STAMP
from bandits.core.version import __version__


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` so that a kill at any instant leaves either the old file
    or the new one, never a partial file: a temporary file in the same directory (named
    for this process, so two writers never share it), flushed and fsynced, then renamed
    over ``path``. Every output file of the project is written through here.

    Raises:
        OSError: The file cannot be written (full disk, permissions); the temporary file
            is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    raw = data.encode() if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_csv(table: pd.DataFrame | list[dict], path: Path) -> None:
    """Write a table as CSV, atomically: a data frame with a fixed float format (same
    data -> same bytes), or rows given as dicts with the same keys (values as ``str``
    writes them)."""
    if isinstance(table, pd.DataFrame):
        write_atomic(path, table.to_csv(index=False, float_format="%.6g", lineterminator="\n"))
        return
    f = io.StringIO(newline="")
    w = csv.DictWriter(f, fieldnames=list(table[0]))
    w.writeheader()
    w.writerows(table)
    write_atomic(path, f.getvalue())


def save_figure(fig, path: Path, **kwargs) -> None:
    """``fig.savefig(path)``, atomically (the format from the file's suffix), stamped with
    the style it was drawn by (:data:`bandits.core.style.STAMP`: PNG text ``Style``, PDF
    ``Keywords``); the same figure gives the same bytes (a PDF carries no creation date).
    A PNG is stored with a palette of 256 colours (a quarter of the bytes; line figures
    use far fewer colours)."""
    path = Path(path)
    buf = io.BytesIO()
    fmt = path.suffix.lstrip(".").lower() or "png"
    if fmt == "pdf":  # no creation date: the same figure is the same bytes
        kwargs.setdefault("metadata", {"CreationDate": None, "Keywords": STAMP})
    elif fmt == "png":
        kwargs.setdefault("metadata", {"Style": STAMP})
    fig.savefig(buf, format=fmt, **kwargs)
    data = buf.getvalue()
    if fmt == "png":
        data = _palette_png(data)
    write_atomic(path, data)


def _palette_png(data: bytes) -> bytes:
    """The PNG ``data`` with a palette of at most 256 colours, its text (the stamp) and
    resolution kept."""
    from PIL import Image, PngImagePlugin

    with Image.open(io.BytesIO(data)) as image:
        info = PngImagePlugin.PngInfo()
        assert isinstance(image, PngImagePlugin.PngImageFile)  # a figure's PNG
        for key, value in image.text.items():
            info.add_text(key, value)
        dpi = image.info.get("dpi")
        small = image.convert("RGB").quantize(256)
    out = io.BytesIO()
    small.save(out, format="png", optimize=True, pnginfo=info,
               **({"dpi": dpi} if dpi else {}))
    return out.getvalue()


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages a result depends on, the CPU's instruction
    set that torch's kernels use (``cpu_capability``) and whether the kernels were pinned
    (``kernels``, :func:`bandits.core.kernels.record`, with the processor): unpinned,
    another processor can round differently, and a bandit run then takes other actions."""
    import gymnasium
    import matplotlib
    import torch

    return {
        "bbb-bandits": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "gymnasium": gymnasium.__version__,
        "matplotlib": matplotlib.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "kernels": kernels.record(),
        "git": git_state(),
    }


def git_state() -> dict[str, object] | None:
    """The commit of the project's source and whether the source tree had changes not
    committed (``dirty``), where the project runs from a git checkout; else None."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=30)
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                 "--untracked-files=no", "--", "agents", "bandits", "envs"],
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0 or status.returncode != 0:
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def machine(device: str = "cpu") -> str:
    """A description of the machine without host names or paths: the GPU, or the CPU
    cores, torch's version and build, and the torch threads in use."""
    if device == "cuda" and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    build = "CPU" if not torch.version.cuda else "CUDA"
    return (f"{os.cpu_count()}-core CPU, torch {torch.__version__.split('+')[0]} {build} build, "
            f"{torch.get_num_threads()} thread(s)")


def machine_memory(device: str = "cpu") -> int:
    """Bytes of memory of the machine (``cuda``: of the GPU), or 0 when unknown."""
    if device == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(0).total_memory)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not on this platform
        return 0


def device_name(device: str) -> str:
    """The name of the GPU, or of the CPU (the processor, else the architecture)."""
    if device == "cuda":
        return torch.cuda.get_device_name()
    return platform.processor() or platform.machine()


def write_json(data: dict, path: Path) -> None:
    """Write ``data`` as indented JSON, atomically."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


# the first field of a checkpoint's header (bandits.core.checkpoint writes it)
CHECKPOINT_FORMAT = "bbb-bandits checkpoint"


def written_by(file: Path) -> str | None:
    """The entry point that wrote ``file`` (``"bandits.run"``, ``"bandits.mnist"``), as
    far as the file tells: the module of the command a JSON file records (``python -m
    MODULE ...``), an MNIST training run's settings (its ``config.json`` records no
    command), a checkpoint's kind; else None."""
    try:
        if file.suffix == ".json" and file.stat().st_size < 16 << 20:
            data = json.loads(file.read_text())
            if not isinstance(data, dict):
                return None
            command = data.get("command")
            if isinstance(command, str) and command.startswith("python -m "):
                return command.split()[2]
            if {"model", "arch", "estimator", "seed"} <= data.keys():
                return "bandits.mnist"
        elif file.suffix == ".pt":
            with open(file, "rb") as f:
                head = f.read(4096).split(b"\n", 1)[0]
            header = json.loads(head)
            if isinstance(header, dict) and header.get("format") == CHECKPOINT_FORMAT:
                return str(header.get("kind", "")).split("/")[0] or None
    except (OSError, ValueError, UnicodeDecodeError, IndexError):
        return None
    return None


def utc_now() -> str:
    """This moment in UTC, to the second (``2026-11-28T17:34:57Z``): when a run started
    and finished, in its ``config.json``."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
