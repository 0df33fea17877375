"""IDX parsing and MNIST loading: small files written here, and the real files when present."""

from __future__ import annotations

import gzip
import struct
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from bandits.core import idx
from bandits.core.data import ChecksumError, DataNotFoundError
from bandits.core.idx import IDXError, load_mnist, parse_idx, preprocess, read_idx


def idx_bytes(arr: np.ndarray, type_code: int = 0x08) -> bytes:
    """An IDX file's bytes for ``arr`` (independent of the parser under test)."""
    header = struct.pack(">BBBB", 0, 0, type_code, arr.ndim)
    header += struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(idx.IDX_DTYPES[type_code]).tobytes()


def write(path: Path, data: bytes) -> Path:
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["x-idx3-ubyte", "x-idx3-ubyte.gz"])
def test_round_trip_images(tmp_path, name):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    p = write(tmp_path / name, idx_bytes(arr))
    got = read_idx(p, magic=idx.IMAGES_MAGIC, shape=(2, 3, 4))
    assert got.dtype == np.uint8 and got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, arr)


def test_other_types_native_byte_order():
    arr = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)
    got = parse_idx(idx_bytes(arr, 0x0D))
    assert got.dtype == np.float32 and got.dtype.isnative
    np.testing.assert_array_equal(got, arr)
    labels = np.array([7, 0, 9], dtype=np.uint8)
    assert parse_idx(idx_bytes(labels), magic=idx.LABELS_MAGIC).tolist() == [7, 0, 9]


def test_wrong_magic_names_file(tmp_path):
    labels = np.zeros(5, dtype=np.uint8)  # magic 2049
    p = write(tmp_path / "train-images-idx3-ubyte.gz", idx_bytes(labels))
    with pytest.raises(IDXError, match=r"train-images-idx3-ubyte\.gz.*wrong magic number 2049"):
        read_idx(p, magic=idx.IMAGES_MAGIC)


def test_invalid_header(tmp_path):
    p = write(tmp_path / "bad.idx", b"\x01\x02\x08\x01" + b"\x00" * 20)
    with pytest.raises(IDXError, match=r"bad\.idx.*not a valid IDX header"):
        read_idx(p)
    with pytest.raises(IDXError, match="too short"):
        parse_idx(b"\x00\x00", name="tiny")
    with pytest.raises(IDXError, match="declares 3 dimensions"):
        parse_idx(b"\x00\x00\x08\x03\x00\x00\x00\x01", name="hdr")


def test_truncated_and_trailing(tmp_path):
    data = idx_bytes(np.ones((4, 2, 2), dtype=np.uint8))
    p = write(tmp_path / "short-idx3-ubyte.gz", data[:-3])
    with pytest.raises(IDXError, match=r"short-idx3-ubyte\.gz: truncated.*need 16 bytes.*has 13"):
        read_idx(p)
    p = write(tmp_path / "long-idx3-ubyte", data + b"\x00")
    with pytest.raises(IDXError, match=r"long-idx3-ubyte: has trailing bytes"):
        read_idx(p)


def test_wrong_dimensions(tmp_path):
    p = write(tmp_path / "dims.gz", idx_bytes(np.zeros((3, 28, 27), dtype=np.uint8)))
    with pytest.raises(IDXError, match=r"dims\.gz: dimensions \(3, 28, 27\), expected"):
        read_idx(p, magic=idx.IMAGES_MAGIC, shape=(3, 28, 28))


def test_corrupt_and_truncated_gzip(tmp_path):
    good = gzip.compress(idx_bytes(np.ones((50, 28, 28), dtype=np.uint8) * 7))
    p = tmp_path / "cut.gz"
    p.write_bytes(good[: len(good) // 2])
    with pytest.raises(IDXError, match=r"cut\.gz: cannot be decompressed"):
        read_idx(p)
    p = tmp_path / "garbage.gz"
    p.write_bytes(b"this is not gzip at all")
    with pytest.raises(IDXError, match=r"garbage\.gz: cannot be decompressed"):
        read_idx(p)


def test_preprocess_divides_by_126():
    imgs = np.array([[[0, 126], [252, 255]]], dtype=np.uint8)
    x = preprocess(imgs)
    assert x.shape == (1, 4) and x.dtype == np.float32
    np.testing.assert_allclose(x[0], [0.0, 1.0, 2.0, 255 / 126], rtol=1e-7)


def _no_network(monkeypatch):
    def fail(*a, **k):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", fail)


def test_missing_files_no_network(tmp_path, monkeypatch):
    _no_network(monkeypatch)
    with pytest.raises(DataNotFoundError, match="train-images-idx3-ubyte.gz"):
        load_mnist(tmp_path)


def _copy_mnist(src: Path, dst: Path) -> Path:
    (dst / "mnist").mkdir(parents=True)
    for f in idx.MNIST_FILES.values():
        (dst / "mnist" / f.name).symlink_to(src / "mnist" / f.name)
    return dst


def test_real_mnist(mnist_data_dir, monkeypatch):
    _no_network(monkeypatch)
    d = load_mnist(mnist_data_dir)
    assert d.train_images.shape == (60000, 28, 28) and d.test_images.shape == (10000, 28, 28)
    assert d.train_labels.shape == (60000,) and d.test_labels.shape == (10000,)
    assert d.train_images.dtype == np.uint8 and d.train_images.max() == 255
    assert np.bincount(d.test_labels).tolist()[:3] == [980, 1135, 1032]


def test_corrupted_copy_of_real_file(mnist_data_dir, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    d = _copy_mnist(mnist_data_dir, tmp_path / "data")
    target = d / "mnist" / "t10k-labels-idx1-ubyte.gz"
    raw = gzip.decompress((mnist_data_dir / "mnist" / target.name).read_bytes())
    target.unlink()
    write(target, raw[:-10])  # truncated
    with pytest.raises(IDXError, match=r"t10k-labels-idx1-ubyte\.gz: truncated"):
        load_mnist(d)
    target.unlink()
    flipped = bytearray(raw)
    flipped[100] = (flipped[100] + 1) % 10  # well-formed, other content
    write(target, bytes(flipped))
    with pytest.raises(ChecksumError, match=r"t10k-labels-idx1-ubyte\.gz: content sha256"):
        load_mnist(d)


def test_download_is_checked(mnist_data_dir, tmp_path, monkeypatch):
    """A missing file is fetched from a mirror (served here from the local copy) and checked."""
    served = []

    def fake_urlopen(url, timeout=None):
        name = url.rsplit("/", 1)[1]
        served.append(url)
        if name == "t10k-labels-idx1-ubyte.gz" and len(served) == 1:
            return open(mnist_data_dir / "mnist" / "train-labels-idx1-ubyte.gz", "rb")  # wrong
        return open(mnist_data_dir / "mnist" / name, "rb")

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    d = _copy_mnist(mnist_data_dir, tmp_path / "data")
    (d / "mnist" / "t10k-labels-idx1-ubyte.gz").unlink()
    got = load_mnist(d)
    assert len(served) == 2 and served[0].startswith(idx.MIRRORS[0])
    assert served[1].startswith(idx.MIRRORS[1])  # the first mirror's bad copy was rejected
    assert got.test_labels.shape == (10000,)


def test_mirrors_listed():
    for f in idx.MNIST_FILES.values():
        assert f.urls == tuple(m + f.name for m in idx.MIRRORS)
        assert len(f.sha256) == 64
