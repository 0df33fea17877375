"""A square root that every processor rounds the same way.

On the CPU, torch's ``sqrt`` of a floating-point tensor calls MKL's vector square root,
which is not correctly rounded (on an AMD EPYC about one float32 value in six is one unit
in the last place off) and whose result depends on the processor it runs on, even in
MKL's compatible mode (``MKL_CBWR=COMPATIBLE``). :func:`sqrt` takes NumPy's instead,
which is the processor's square-root instruction: IEEE 754 defines it as correctly
rounded, so every processor gives the same bytes. Its gradient is torch's own formula,
``grad / (2 sqrt(x))``, from those bytes. On a GPU it is torch's ``sqrt`` (CUDA's
single- and double-precision square roots are correctly rounded as torch builds them).

The project's code calls :func:`sqrt` wherever a square root is on a run's path (the
local reparameterisation trick, the linear and NeuralUCB agents' widths).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


class _Sqrt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        a = x.detach().resolve_neg().resolve_conj().contiguous().numpy()
        with np.errstate(invalid="ignore"):  # a negative value gives NaN, as in torch
            y = torch.from_numpy(np.asarray(np.sqrt(a)))  # asarray: a 0-d result too
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return grad / (2 * y)


def sqrt(x: Tensor) -> Tensor:
    """The square root of ``x``, correctly rounded on every processor (module docstring);
    differentiable (not through ``torch.func`` transforms, nor traced by
    ``torch.compile``). float16 and bfloat16 CPU tensors, sparse ones, and tensors off
    the CPU take torch's ``sqrt``."""
    if (x.device.type != "cpu" or x.layout != torch.strided
            or x.dtype not in (torch.float32, torch.float64)):
        return x.sqrt()
    return _Sqrt.apply(x)


def power(x: Tensor, exponent: float) -> Tensor:
    """``x ** exponent``; where the exponent is 0.5 (which torch hands to its ``sqrt``),
    :func:`sqrt`."""
    return sqrt(x) if exponent == 0.5 else x.pow(exponent)
