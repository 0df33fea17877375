"""The UCI Mushroom data: the file, its 22 attributes and their one-hot encoding.

:func:`load_mushroom` reads ``agaricus-lepiota.data`` (UCI Machine Learning Repository,
"Mushroom", Schlimmer 1987; 8124 rows of 23 one-letter columns, the class in column 0) and
one-hot encodes its 22 attributes into 117 float32 features.

**Feature order** (:data:`FEATURE_NAMES`): attributes in the order of the UCI
``agaricus-lepiota.names`` file (:data:`ATTRIBUTES`), and within an attribute its values
in sorted character order (``?``, the missing stalk-root, sorts before the letters). Only
values that occur in the UCI file have a column (:data:`VALUES`), 117 in all; the order is
fixed by these constants, not by the rows, so it does not depend on row order. Feature
``k`` is named ``"attribute=value"``, e.g. ``FEATURE_NAMES[0] == "cap-shape=b"``.
"""

from __future__ import annotations

import functools
import gzip
import os
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bandits.core.data import ChecksumError, DataError, DataFile, content_sha256, resolve

MUSHROOM_FILE = DataFile(
    dataset="mushroom",
    name="agaricus-lepiota.data",
    urls=(),
    sha256="e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e",
    packaged=True,
)
"""The UCI file and its checksum; the package ships it (``bandits/datasets/mushroom``)."""

N_ROWS = 8124
"""Rows of the UCI file: 4208 edible, 3916 poisonous."""

ATTRIBUTES: tuple[str, ...] = (
    "cap-shape",
    "cap-surface",
    "cap-color",
    "bruises",
    "odor",
    "gill-attachment",
    "gill-spacing",
    "gill-size",
    "gill-color",
    "stalk-shape",
    "stalk-root",
    "stalk-surface-above-ring",
    "stalk-surface-below-ring",
    "stalk-color-above-ring",
    "stalk-color-below-ring",
    "veil-type",
    "veil-color",
    "ring-number",
    "ring-type",
    "spore-print-color",
    "population",
    "habitat",
)
"""The 22 attributes, file columns 1..22, in the order of ``agaricus-lepiota.names``."""

VALUES: dict[str, str] = {
    "cap-shape": "bcfksx",
    "cap-surface": "fgsy",
    "cap-color": "bcegnpruwy",
    "bruises": "ft",
    "odor": "acflmnpsy",
    "gill-attachment": "af",
    "gill-spacing": "cw",
    "gill-size": "bn",
    "gill-color": "beghknopruwy",
    "stalk-shape": "et",
    "stalk-root": "?bcer",
    "stalk-surface-above-ring": "fksy",
    "stalk-surface-below-ring": "fksy",
    "stalk-color-above-ring": "bcegnopwy",
    "stalk-color-below-ring": "bcegnopwy",
    "veil-type": "p",
    "veil-color": "nowy",
    "ring-number": "not",
    "ring-type": "eflnp",
    "spore-print-color": "bhknoruwy",
    "population": "acnsvy",
    "habitat": "dglmpuw",
}
"""Per attribute, the values that occur in the UCI file, sorted: one feature each."""

FEATURE_NAMES: tuple[str, ...] = tuple(f"{a}={v}" for a in ATTRIBUTES for v in VALUES[a])
"""Name of each of the 117 feature columns, ``"attribute=value"``, in column order."""

N_FEATURES = len(FEATURE_NAMES)  # 117

CLASSES = {"e": True, "p": False}
"""Class letter -> edible."""

# Per attribute: value letter -> feature column.
_COLUMNS: tuple[dict[str, int], ...] = tuple(
    {v: FEATURE_NAMES.index(f"{a}={v}") for v in VALUES[a]} for a in ATTRIBUTES
)


class MushroomFormatError(DataError, ValueError):
    """The mushroom data file is malformed. The message names the file and the line.

    Attributes:
        path: The file.
        line: The 1-based line number (for a file that ends early, its last line; 0 if
            it is empty).
        problem: What is wrong.
    """

    def __init__(self, path: str | os.PathLike, line: int, problem: str) -> None:
        self.path = Path(path)
        self.line = line
        self.problem = problem
        super().__init__(f"{path}, line {line}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable, e.g. across processes
        return type(self), (self.path, self.line, self.problem)


def load_mushroom(
    data_dir: str | os.PathLike | None = None,
    verify: bool = True,
) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Load and encode the UCI mushroom data.

    The file is found by :func:`bandits.core.data.resolve`: ``data_dir``, else
    ``$BANDITS_DATA_DIR``, else the copy the package ships (no network).
    The encoded arrays are cached in-process per file (path, size and modification time), so
    creating many envs is cheap; they are returned read-only so no caller can change what
    another one sees (copy them to modify).

    Args:
        data_dir: Directory holding ``mushroom/agaricus-lepiota.data`` or
            ``agaricus-lepiota.data``.

    ``verify``: check the file against its published sha256 (after the format checks, so
    a malformed file is named by its line), wherever the file was found: a label flipped
    or a value changed to another legal one would otherwise run and give other results.

    Returns:
        ``(features, edible)``: ``features`` of shape ``(8124, 117)``, float32, one-hot in the
        column order of :data:`FEATURE_NAMES`; ``edible`` of shape ``(8124,)``, bool. Row
        ``i`` is line ``i + 1`` of the file.

    Raises:
        bandits.core.data.DataNotFoundError: The file is nowhere, the package's copy included.
        MushroomFormatError: The file is malformed: an empty row, a row without 23
            columns (as the last row of a file cut short), an unknown class letter or
            attribute value, or not 8124 rows. Nothing is cached or returned then.
        bandits.core.data.ChecksumError: ``verify`` and the file is well formed but not the
            published one.
    """
    path = resolve(MUSHROOM_FILE, data_dir).resolve()
    stat = path.stat()
    return _load_cached(path, stat.st_size, stat.st_mtime_ns, verify)


@functools.lru_cache(maxsize=4)
def _load_cached(
    path: Path, size: int, mtime_ns: int, verify: bool = True
) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    features, edible = parse_mushroom(path)
    if verify:
        got = content_sha256(path)
        if got != MUSHROOM_FILE.sha256:
            raise ChecksumError(
                f"{path} is not the published UCI Mushroom file (sha256 {got[:12]}..., "
                f"expected {MUSHROOM_FILE.sha256[:12]}...): a changed row changes every "
                "result; restore the original file")
    features.flags.writeable = False
    edible.flags.writeable = False
    return features, edible


def parse_mushroom(path: str | os.PathLike) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Parse and encode one mushroom file, checking every line (no cache, no search).

    Args:
        path: The file.

    Returns:
        New writable ``(features, edible)`` arrays, as :func:`load_mushroom`.

    Raises:
        MushroomFormatError: See :func:`load_mushroom`.
    """
    path = Path(path)
    # Non-ASCII bytes become U+FFFD and are then reported as an unknown value with their line.
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    lines = raw.decode("ascii", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last row
    n_cols = 1 + len(ATTRIBUTES)
    cols = np.empty((len(lines), len(ATTRIBUTES)), dtype=np.intp)  # (rows, 22) feature columns
    edible = np.empty(len(lines), dtype=bool)
    for i, line in enumerate(lines):
        lineno = i + 1
        line = line.removesuffix("\r")
        if not line.strip():
            raise MushroomFormatError(path, lineno, "empty row")
        fields = line.split(",")
        if len(fields) != n_cols:
            raise MushroomFormatError(
                path,
                lineno,
                f"{len(fields)} columns, expected {n_cols} (class + {len(ATTRIBUTES)} "
                "attributes); " + ("a row cut short means a truncated file"
                                   if len(fields) < n_cols else "not the UCI file?"),
            )
        if fields[0] not in CLASSES:
            raise MushroomFormatError(
                path,
                lineno,
                f"unknown class {fields[0]!r}, expected 'e' (edible) or 'p' (poisonous)",
            )
        edible[i] = CLASSES[fields[0]]
        try:
            cols[i] = [lut[v] for lut, v in zip(_COLUMNS, fields[1:])]
        except KeyError:
            j = next(j for j, v in enumerate(fields[1:]) if v not in _COLUMNS[j])
            raise MushroomFormatError(
                path,
                lineno,
                f"unknown value {fields[1 + j]!r} in column {1 + j} ({ATTRIBUTES[j]}), "
                f"expected one of {' '.join(VALUES[ATTRIBUTES[j]])}",
            ) from None
    if len(lines) > N_ROWS:
        raise MushroomFormatError(
            path, N_ROWS + 1, f"{len(lines)} rows, expected {N_ROWS}: not the UCI file?"
        )
    if len(lines) < N_ROWS:
        what = "the file is empty" if not lines else f"the file ends after {len(lines)} rows"
        raise MushroomFormatError(path, len(lines), f"{what}, expected {N_ROWS}: truncated?")
    features = np.zeros((len(lines), N_FEATURES), dtype=np.float32)
    features[np.arange(len(lines))[:, None], cols] = 1.0
    return features, edible
