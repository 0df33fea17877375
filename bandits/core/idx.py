"""The IDX file format and the MNIST files: read and checked, without torch.

The IDX format (LeCun et al.) is a big-endian header followed by raw values:

* two zero bytes, one type byte (``0x08`` = unsigned byte), one byte ``ndim``;
  read together as a 32-bit integer this is the *magic number* (2051 for the
  MNIST image files: ubyte, 3 dimensions; 2049 for the label files);
* ``ndim`` big-endian 32-bit sizes;
* ``prod(sizes)`` values, row-major.

:func:`read_idx` checks every part of that and names the file in each error.
:func:`load_mnist` finds the four MNIST files through :func:`bandits.core.data.resolve`
(explicit directory, ``$BANDITS_DATA_DIR``, cache, download from the public
mirrors with the decompressed content's sha256 checked), parses them and checks
the shapes and the content checksums. The classification benchmark
(:mod:`bandits.mnist`) and the MNIST bandit (:mod:`envs.classification`) both read
MNIST through it.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bandits.core.data import ChecksumError, DataError, DataFile, content_sha256, resolve

# Type byte -> numpy dtype (big-endian where it matters), from the IDX spec.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension

# Pixels are divided by 126, as in Blundell et al. (2015), section 5.1.
PIXEL_SCALE = 126.0

MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)


class IDXError(DataError, ValueError):
    """A file is not a well-formed IDX file (bad gzip, magic, dimensions or length)."""


def _mnist_file(stem: str, sha256: str) -> DataFile:
    name = f"{stem}.gz"
    return DataFile("mnist", name, tuple(m + name for m in MIRRORS), sha256)


# sha256 of the decompressed content (a recompressed copy is still accepted).
MNIST_FILES: dict[str, DataFile] = {
    "train_images": _mnist_file(
        "train-images-idx3-ubyte",
        "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
    "train_labels": _mnist_file(
        "train-labels-idx1-ubyte",
        "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
    "test_images": _mnist_file(
        "t10k-images-idx3-ubyte",
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
    "test_labels": _mnist_file(
        "t10k-labels-idx1-ubyte",
        "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
}
# (expected magic, expected shape) of each file.
MNIST_SHAPES: dict[str, tuple[int, tuple[int, ...]]] = {
    "train_images": (IMAGES_MAGIC, (60000, 28, 28)),
    "train_labels": (LABELS_MAGIC, (60000,)),
    "test_images": (IMAGES_MAGIC, (10000, 28, 28)),
    "test_labels": (LABELS_MAGIC, (10000,)),
}


def _read_bytes(path: Path) -> bytes:
    """The (decompressed, for ``.gz``) bytes of a file; gzip damage becomes an IDXError."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise IDXError(f"{path}: cannot be decompressed, the gzip stream is corrupt or "
                       f"truncated ({type(e).__name__}: {e})") from e


def parse_idx(data: bytes, name: str = "<bytes>", magic: int | None = None) -> np.ndarray:
    """Parse the bytes of an IDX file.

    Args:
        data: The (decompressed) file content.
        name: What to call the data in error messages (the file name).
        magic: The magic number the file must have, or ``None`` for any valid one.

    Returns:
        The values, shaped as the header says.

    Raises:
        IDXError: Bad magic number, type, dimensions or length.
    """
    if len(data) < 4:
        raise IDXError(f"{name}: too short for an IDX header ({len(data)} bytes)")
    (got_magic,) = struct.unpack(">I", data[:4])
    if magic is not None and got_magic != magic:
        raise IDXError(f"{name}: wrong magic number {got_magic} (0x{got_magic:08x}), "
                       f"expected {magic} (0x{magic:08x}); not the IDX file expected")
    zero, type_code, ndim = got_magic >> 16, (got_magic >> 8) & 0xFF, got_magic & 0xFF
    if zero != 0 or type_code not in IDX_DTYPES or ndim == 0:
        raise IDXError(f"{name}: magic number {got_magic} (0x{got_magic:08x}) is not a valid "
                       "IDX header (two zero bytes, a type byte, a dimension count)")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IDXError(f"{name}: header declares {ndim} dimensions but the file has only "
                       f"{len(data)} bytes")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = IDX_DTYPES[type_code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    body = len(data) - header
    if body != expected:
        what = "truncated" if body < expected else "has trailing bytes"
        raise IDXError(f"{name}: {what}: dimensions {shape} need {expected} bytes of data, "
                       f"the file has {body}")
    arr = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return arr.astype(dtype.newbyteorder("="), copy=True)


def read_idx(path: str | os.PathLike, magic: int | None = None,
             shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Read an IDX file (plain or ``.gz``), checking magic number, dimensions and length.

    Args:
        path: The file.
        magic: The magic number the file must have, or ``None`` for any valid one.
        shape: The shape the array must have, or ``None`` for any.

    Raises:
        IDXError: The file is corrupt, truncated, has the wrong magic or shape.
    """
    path = Path(path)
    arr = parse_idx(_read_bytes(path), name=str(path), magic=magic)
    if shape is not None and arr.shape != tuple(shape):
        raise IDXError(f"{path}: dimensions {arr.shape}, expected {tuple(shape)}")
    return arr


@dataclass(frozen=True)
class MNIST:
    """The MNIST arrays as stored: uint8 images ``(n, 28, 28)`` and uint8 labels ``(n,)``."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def load_mnist(data_dir: str | os.PathLike | None = None, download: bool = True,
               verify: bool = True) -> MNIST:
    """Find, parse and check the four MNIST files.

    Args:
        data_dir: Directory holding ``mnist/*.gz`` (or the files themselves); ``None``
            uses ``$BANDITS_DATA_DIR``, then the cache (see :func:`bandits.core.data.resolve`).
        download: Whether missing files may be downloaded from the public mirrors.
        verify: Whether to check each file's decompressed sha256 (downloads are
            always checked).

    Raises:
        IDXError: A file is corrupt, truncated or has the wrong magic or shape.
        bandits.core.data.ChecksumError: A well-formed file has other content than MNIST.
        bandits.core.data.DataNotFoundError: A file is nowhere and could not be downloaded.
    """
    arrays = {}
    for key, file in MNIST_FILES.items():
        path = resolve(file, data_dir, download=download)
        magic, shape = MNIST_SHAPES[key]
        arrays[key] = read_idx(path, magic=magic, shape=shape)
        if verify:
            got = content_sha256(path)
            if got != file.sha256:
                raise ChecksumError(f"{path}: content sha256 {got} does not match MNIST's "
                                    f"{file.sha256}")
    if arrays["train_labels"].max() > 9 or arrays["test_labels"].max() > 9:
        raise IDXError("MNIST labels must be digits 0..9")
    return MNIST(**arrays)


def preprocess(images: np.ndarray) -> np.ndarray:
    """Flatten uint8 images to ``(n, 784)`` float32 and divide by 126 (the paper's scaling)."""
    images = np.asarray(images)
    return images.reshape(len(images), -1).astype(np.float32) / np.float32(PIXEL_SCALE)
