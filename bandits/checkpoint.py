"""Checkpoints that survive being killed: atomic writes, safe loading, one-line errors.

A checkpoint is one file, ``checkpoint.pt`` in a run's output directory, holding a
dict of tensors, numbers, strings, lists and dicts (no arbitrary objects): it is
read with ``torch.load(weights_only=True)``, which cannot execute code. It is written
to a temporary file in the same directory, flushed and fsynced, then renamed over
the previous one (an atomic replace on POSIX file systems), and the directory is
fsynced: a kill at any instant leaves either the previous checkpoint or the new
one, never a partial file under the checkpoint's name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

FORMAT = "bbb-bandits checkpoint"
VERSION = 1
NAME = "checkpoint.pt"


class CheckpointError(Exception):
    """A checkpoint cannot be written or read; the message is one line naming the file."""


def save(path: Path, kind: str, state: dict[str, Any]) -> None:
    """Write ``state`` atomically to ``path`` (see the module docstring).

    Raises:
        CheckpointError: The directory cannot be written (full disk, permissions); the
            previous checkpoint, if any, is left as it was.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            torch.save({"format": FORMAT, "version": VERSION, "kind": kind, **state}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        kept = "the previous checkpoint is kept" if path.exists() else "no checkpoint was kept"
        raise CheckpointError(f"cannot write checkpoint {path}: "
                              f"{e.strerror or e}; {kept}") from None


def load(path: Path, kind: str) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save` for ``kind`` (``"bandits.run"``, ...).

    Raises:
        CheckpointError: The file is missing, damaged, truncated, not a checkpoint of this
            project, of another kind, or of another format version.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint {path}: nothing to resume (was the run started "
                              "with checkpoints, and is this its output directory?)")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for damaged files
        first = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"checkpoint {path} is damaged or truncated and cannot be read "
                              f"({first})") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a checkpoint of this project")
    if obj.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path} has format version {obj.get('version')!r}; "
                              f"this version of the project reads version {VERSION}")
    if obj.get("kind") != kind:
        raise CheckpointError(f"checkpoint {path} was written by {obj.get('kind')!r}, "
                              f"not by {kind!r}")
    return obj


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    """A numpy generator's state as plain Python values (safe to load)."""
    return rng.bit_generator.state


def set_rng_state(rng: np.random.Generator, state: dict[str, Any]) -> None:
    rng.bit_generator.state = state
