"""The MNIST data: its IDX files, the paper's preprocessing and the splits.

The files are read and checked by :mod:`bandits.core.idx` (the IDX format, the four
files, their checksums), whose names this module re-exports.

The protocol of Blundell et al. (2015), section 5.1 (:func:`load_splits`): pixels
divided by 126; the first 50,000 training images train, the last 10,000 validate
(``--full-train`` trains on all 60,000); the 10,000 test images test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from bandits.core.idx import (  # noqa: F401  (re-exported: the benchmark's data names)
    IDX_DTYPES,
    IMAGES_MAGIC,
    LABELS_MAGIC,
    MIRRORS,
    MNIST,
    MNIST_FILES,
    MNIST_SHAPES,
    PIXEL_SCALE,
    IDXError,
    load_mnist,
    parse_idx,
    preprocess,
    read_idx,
)
from bandits.mnist.models.config import Config

# --------------------------------------------------------------------------- the splits


@dataclass
class Split:
    """Preprocessed tensors: images ``(n, 784)`` float32 in ``[0, 255/126]``, labels ``(n,)``."""

    x: Tensor
    y: Tensor


def load_splits(cfg: Config) -> dict[str, Split]:
    """The train / validation / test splits of the paper's protocol, on ``cfg.device``."""
    data = load_mnist(cfg.data_dir, download=cfg.download)
    x_all = torch.from_numpy(preprocess(data.train_images))  # (60000, 784)
    y_all = torch.from_numpy(data.train_labels.astype(np.int64))
    n_train = 60000 if cfg.full_train else 50000
    splits = {"train": Split(x_all[:n_train], y_all[:n_train])}
    if not cfg.full_train:
        splits["val"] = Split(x_all[50000:], y_all[50000:])
    splits["test"] = Split(torch.from_numpy(preprocess(data.test_images)),
                           torch.from_numpy(data.test_labels.astype(np.int64)))
    for name, s in splits.items():
        n = cfg.train_size if name == "train" else cfg.test_size
        if n > 0:
            s.x, s.y = s.x[:n], s.y[:n]
        s.x, s.y = s.x.to(cfg.device), s.y.to(cfg.device)
    return splits
