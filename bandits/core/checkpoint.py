"""Checkpoints that survive being killed and cannot be mixed up: atomic writes, a
checksum, the identity of the run, safe loading, one-line errors.

A checkpoint is one file, ``checkpoint.pt`` in a run's output directory: a one-line
JSON header (format, version, kind, the run's identity, the payload's length and
sha256) followed by the payload, a dict of tensors, numbers, strings, lists and dicts
written by ``torch.save`` and read back with ``torch.load(weights_only=True)``, which
cannot execute code. Loading checks the header, the length and the checksum, so a
truncated file or one flipped byte is refused, and (when the caller gives one) the
identity, so a checkpoint copied in from another run is refused too.

The file is written to a temporary file in the same directory (named for the writing
process), flushed and fsynced, then renamed over the previous one (an atomic replace
on POSIX file systems), and the directory is fsynced: a kill at any instant leaves
either the previous checkpoint or the new one, never a partial file under its name.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import torch

from bandits.core.files import CHECKPOINT_FORMAT, write_atomic

FORMAT = CHECKPOINT_FORMAT
VERSION = 2
NAME = "checkpoint.pt"
_MAX_HEADER = 4096  # bytes: a header is far shorter


class CheckpointError(Exception):
    """A checkpoint cannot be written or read; the message is one line naming the file."""


def save(path: Path, kind: str, state: dict[str, Any], identity: str | None = None) -> None:
    """Write ``state`` atomically to ``path`` (see the module docstring).

    Args:
        path: The checkpoint file.
        kind: Which entry point wrote it (``"bandits.run"``, ...).
        state: What to store.
        identity: The run's identity (a fingerprint of its settings), checked on load.

    Raises:
        CheckpointError: The checkpoint cannot be serialised or the directory cannot be
            written (full disk, permissions); the previous checkpoint, if any, is left as
            it was and no temporary file stays behind.
    """
    path = Path(path)
    try:
        buf = io.BytesIO()
        torch.save(state, buf)
        payload = buf.getvalue()
        header = {"format": FORMAT, "version": VERSION, "kind": kind, "identity": identity,
                  "bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
        write_atomic(path, json.dumps(header).encode() + b"\n" + payload)
    except (OSError, RuntimeError) as e:  # torch's writer raises RuntimeError on a full disk
        kept = "the previous checkpoint is kept" if path.exists() else "no checkpoint was kept"
        reason = getattr(e, "strerror", None) or _first_line(e)
        raise CheckpointError(f"cannot write checkpoint {path}: {reason}; {kept}") from None


def load(path: Path, kind: str, identity: str | None = None) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save` for ``kind``.

    Args:
        identity: When given, the checkpoint must have been written by a run with this
            identity (see :func:`save`).

    Raises:
        CheckpointError: The file is missing, damaged, truncated, not a checkpoint of this
            project, of another kind, of another format version, or of another run.
    """
    path = Path(path)
    data = _read(path)
    damaged = f"checkpoint {path} is damaged or truncated and cannot be read"
    header, payload = _intact(path, data, damaged)
    if header.get("kind") != kind:
        raise CheckpointError(f"checkpoint {path} was written by {header.get('kind')!r}, "
                              f"not by {kind!r}")
    if identity is not None and header.get("identity") != identity:
        raise CheckpointError(f"checkpoint {path} belongs to another run (its settings differ "
                              f"from those in {path.parent / 'config.json'}); copy a run's "
                              "whole directory, not its checkpoint alone")
    return _state(payload, damaged)


def _read(path: Path) -> bytes:
    """The bytes of the checkpoint file ``path``; one line where there is none to read."""
    if not path.is_file():
        raise CheckpointError(f"no checkpoint {path}: nothing to resume (was the run started "
                              "with checkpoints, and is this its output directory?)")
    try:
        return path.read_bytes()
    except OSError as e:
        raise CheckpointError(f"cannot read checkpoint {path}: {e.strerror or e}") from None


def _intact(path: Path, data: bytes, damaged: str) -> tuple[dict[str, Any], bytes]:
    """The header and the payload of a checkpoint file's ``data``, checked: a header of
    this format and version, and a payload of its length and checksum."""
    newline = data.find(b"\n", 0, _MAX_HEADER)
    header = None
    if newline > 0:
        try:
            header = json.loads(data[:newline])
        except (ValueError, UnicodeDecodeError):
            header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        _refuse_other_file(path, data, damaged)
    if header.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path} has format version {header.get('version')!r}; "
                              f"this version of the project reads version {VERSION}")
    payload = data[newline + 1:]
    if len(payload) != header.get("bytes"):
        raise CheckpointError(f"{damaged} (it holds {len(payload)} of "
                              f"{header.get('bytes')} bytes)")
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise CheckpointError(f"{damaged} (its content does not match its checksum)")
    return header, payload


def _state(payload: bytes, damaged: str) -> dict[str, Any]:
    """The state a checked payload holds, read without running any code in it."""
    try:
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises many types for damaged data
        raise CheckpointError(f"{damaged} ({_first_line(e)})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{damaged} (no state in it)")
    return state


def fingerprint(settings: dict[str, Any]) -> str:
    """A short, stable hash of a run's settings (its identity, see :func:`save`)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()
                          ).hexdigest()[:16]


def load_own(out: Path, kind: str, identity: Callable[[dict], str]) -> dict[str, Any]:
    """Read ``out``'s checkpoint, which must belong to the run ``out/config.json``
    describes (``identity(config)`` equals the one stored in it), and be intact.

    Raises:
        CheckpointError: as :func:`load`, or ``config.json`` is missing or unreadable.
    """
    out = Path(out)
    try:
        on_disk = json.loads((out / "config.json").read_text())
    except (OSError, ValueError):
        on_disk = None
    state = load(out / NAME, kind, None if on_disk is None else identity(on_disk))
    if on_disk is None:  # an intact checkpoint, but nothing to tell whose it is
        raise CheckpointError(f"{out / 'config.json'} is missing or unreadable: cannot tell "
                              f"whether {out / NAME} belongs to this directory's run")
    mine, its = on_disk.get("run_id"), (state.get("config") or {}).get("run_id")
    if mine is not None and its is not None and mine != its:
        # the same settings, but another run's checkpoint (copied in)
        its_at, mine_at = _where(state), _where(on_disk)
        raise CheckpointError(f"{out / NAME}{its_at} belongs to another run with the same "
                              f"settings, not to the one whose outputs are in {out}{mine_at}; "
                              "copy back its own checkpoint or start again with --overwrite")
    return state


def _where(record: dict[str, Any]) -> str:
    """`` (at step N)`` or `` (after epoch N)`` from a checkpoint's or a run's record, or
    nothing where it records neither."""
    for key, word in (("steps_done", "at step"), ("steps_completed", "at step"),
                      ("epoch", "after epoch"), ("epochs_completed", "after epoch")):
        if isinstance(record.get(key), int):
            return f" ({word} {record[key]})"
    return ""


def _refuse_other_file(path: Path, data: bytes, damaged: str) -> NoReturn:
    """Raise the right error for a file that is not a checkpoint of this format: one of
    an older format version, a foreign torch file, or garbage."""
    if data[:2] == b"PK":  # a torch zip file: an old checkpoint or someone else's
        try:
            obj = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except (Exception, zipfile.BadZipFile) as e:  # noqa: BLE001
            raise CheckpointError(f"{damaged} ({_first_line(e)})") from None
        if isinstance(obj, dict) and obj.get("format") == FORMAT:
            raise CheckpointError(f"checkpoint {path} has format version "
                                  f"{obj.get('version')!r}; this version of the project "
                                  f"reads version {VERSION}")
        raise CheckpointError(f"{path} is not a checkpoint of this project")
    raise CheckpointError(damaged)


def _first_line(e: BaseException) -> str:
    """An exception's first line, whole (never cut mid-word), or its type's name."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
