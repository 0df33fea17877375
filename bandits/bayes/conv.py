"""Bayesian convolutions and a Bayesian LeNet-5.

:class:`BayesConv2d` is :class:`~bandits.bayes.layers.BayesLinear` with a kernel: the
same diagonal Gaussian posterior, priors, complexity costs, sampling modes, pruning
mask, estimators (:data:`~bandits.bayes.layers.ESTIMATORS`) and runs dimension
(``R`` models at once: weights ``(R, out, in, k, k)``, inputs ``(R, N, C, H, W)``, one
grouped convolution). For Flipout the random signs are per example and channel
(Wen et al. 2018, section 3.2), shared over the image's positions; the local
reparameterisation trick samples each output pixel's Gaussian.

:func:`make_lenet5`: LeNet-5 (LeCun et al. 1998) for 28 x 28 digits: conv 5x5 (6) ->
max-pool 2 -> conv 5x5 (16) -> max-pool 2 -> 120 -> 84 -> 10, ReLU, every layer
Bayesian or every layer ordinary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bandits.bayes._checks import is_count
from bandits.bayes.layers import BayesLinear, RunsLinear, init_mu
from bandits.bayes.mlp import MLP
from bandits.bayes.priors import Prior


def runs_conv2d(x: Tensor, w: Tensor, b: Tensor | None, runs: int | None, stride: int = 1,
                padding: int = 0) -> Tensor:
    """``F.conv2d`` of one model, or of ``runs`` models at once: ``x (R, N, C, H, W)`` (or
    ``(N, C, H, W)`` shared by every run), kernels ``w (R, out, C, k, k)``, biases
    ``b (R, out)``, as one grouped convolution; ``(R, N, out, H', W')``."""
    if runs is None:
        return F.conv2d(x, w, b, stride, padding)
    if x.dim() == 4:
        x = x.expand(runs, *x.shape)
    r, n, c, h, wd = x.shape
    y = F.conv2d(x.transpose(0, 1).reshape(n, r * c, h, wd), w.reshape(-1, *w.shape[2:]),
                 None if b is None else b.reshape(-1), stride, padding, groups=r)
    return y.reshape(n, r, -1, *y.shape[2:]).transpose(0, 1)


class BayesConv2d(BayesLinear):
    """2-D convolution with a factorised Gaussian posterior over kernels and biases.

    Args (beyond :class:`~bandits.bayes.layers.BayesLinear`'s):
        in_channels, out_channels: Channels of the input and the output.
        kernel_size: The side of the square kernel.
        stride, padding: As for ``torch.nn.Conv2d``.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int,
                 stride: int = 1, padding: int = 0, **kwargs) -> None:
        if not is_count(kernel_size):
            raise ValueError(f"kernel_size must be a positive integer, got {kernel_size!r}")
        self.kernel_size, self.stride, self.padding = int(kernel_size), stride, padding
        super().__init__(in_channels, out_channels, **kwargs)

    def _wshape(self) -> tuple[int, ...]:
        return (*super()._wshape(), self.kernel_size, self.kernel_size)

    def _fan_in(self) -> int:
        return self.in_features * self.kernel_size**2

    def _check_input(self, x: Tensor) -> None:
        dims = (4,) if self.runs is None else (4, 5)
        if x.dim() not in dims or x.shape[-3] != self.in_features:
            want = "(N, C, H, W)" if self.runs is None else "(runs, N, C, H, W) or (N, C, H, W)"
            raise ValueError(f"input must be {want} with C={self.in_features}, got shape "
                             f"{tuple(x.shape)}")
        if self.runs is not None and x.dim() == 5 and x.shape[0] != self.runs:
            raise ValueError(f"input has {x.shape[0]} runs in dimension 0, the layer holds "
                             f"runs={self.runs}")

    def _linear(self, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        """The convolution (in the place of the linear map of the parent class)."""
        return runs_conv2d(x, w, b, self.runs, self.stride, self.padding)

    def _signs(self, x: Tensor, out: Tensor) -> tuple[Tensor, Tensor]:
        return (self._random_signs((*x.shape[:-2], 1, 1)),
                self._random_signs((*out.shape[:-2], 1, 1)))

    def extra_repr(self) -> str:
        return (f"{self.in_features}, {self.out_features}, kernel_size={self.kernel_size}, "
                f"runs={self.runs}, prior={self.prior}, estimator={self.estimator!r}")


class RunsConv2d(nn.Module):
    """An ordinary 2-D convolution with the runs dimension of :class:`BayesConv2d`."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int,
                 runs: int | None = None, stride: int = 1, padding: int = 0) -> None:
        super().__init__()
        lead = () if runs is None else (runs,)
        fan_in = in_channels * kernel_size**2
        self.weight = nn.Parameter(torch.empty(*lead, out_channels, in_channels, kernel_size,
                                               kernel_size))
        self.bias = nn.Parameter(torch.empty(*lead, out_channels))
        init_mu(self.weight, fan_in)
        init_mu(self.bias, fan_in)
        self.runs, self.stride, self.padding = runs, stride, padding

    def forward(self, x: Tensor) -> Tensor:
        return runs_conv2d(x, self.weight, self.bias, self.runs, self.stride, self.padding)


class LeNet5(MLP):
    """LeNet-5 on ``(N, 1, 28, 28)`` images (or ``(R, N, 1, 28, 28)`` with runs; flat
    ``(..., 784)`` images are reshaped):
    two convolutions with max-pooling, then three linear layers; an :class:`MLP`
    whose first layers are convolutions, so sampling modes, resampling and the
    complexity cost work as for the MLP."""

    def __init__(self, layers: list[nn.Module], runs: int | None) -> None:
        super().__init__(layers)
        self.runs = runs

    def _pool(self, x: Tensor) -> Tensor:
        if x.dim() == 5:  # (R, N, C, H, W)
            r, n = x.shape[:2]
            return F.max_pool2d(x.reshape(r * n, *x.shape[2:]), 2).reshape(
                r, n, x.shape[2], x.shape[3] // 2, x.shape[4] // 2)
        return F.max_pool2d(x, 2)

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] == 784:  # flat images, as the MLP takes them
            x = x.reshape(*x.shape[:-1], 1, 28, 28)
        conv1, conv2, *dense = self.layers
        x = self._pool(self.act(conv1(x)))
        x = self._pool(self.act(conv2(x)))
        x = x.flatten(-3)  # (..., 16 * 4 * 4)
        for i, layer in enumerate(dense):
            x = layer(x)
            if i < len(dense) - 1:
                x = self.act(x)
        return x


def make_lenet5(*, bayesian: bool = True, runs: int | None = None, prior: Prior | None = None,
                init_sigma: float = 0.01, estimator: str = "reparam",
                generator: torch.Generator | None = None) -> LeNet5:
    """LeNet-5 for 28 x 28 digits (no padding: 28 -> 24 -> 12 -> 8 -> 4), every layer
    Bayesian (with ``prior``, ``init_sigma``, ``estimator``) or every layer ordinary."""
    def conv(c_in: int, c_out: int) -> nn.Module:
        if bayesian:
            return BayesConv2d(c_in, c_out, 5, runs=runs, prior=prior, init_sigma=init_sigma,
                               estimator=estimator, generator=generator)
        return RunsConv2d(c_in, c_out, 5, runs=runs)

    def dense(a: int, b: int) -> nn.Module:
        if bayesian:
            return BayesLinear(a, b, runs=runs, prior=prior, init_sigma=init_sigma,
                               estimator=estimator, generator=generator)
        return RunsLinear(a, b, runs=runs)

    return LeNet5([conv(1, 6), conv(6, 16), dense(256, 120), dense(120, 84), dense(84, 10)],
                  runs)
