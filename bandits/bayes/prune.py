"""The signal-to-noise ratio ``|mu| / sigma`` of the weights, and pruning by it
(Blundell et al. 2015, section 5.1 and Table 2)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from bandits.bayes._checks import is_real
from bandits.bayes.layers import BayesLinear


def snr(model: nn.Module) -> Tensor:
    """Signal-to-noise ratio ``|mu| / sigma`` of every weight (biases excluded).

    Returns:
        ``(N,)`` for a model without runs, ``(runs, N)`` with runs; weights are
        concatenated in layer order.
    """
    layers = [m for m in model.modules() if isinstance(m, BayesLinear)]
    if not layers:
        raise ValueError("the model has no Bayesian layers, so its weights have no SNR")
    parts = []
    for m in layers:
        s = m.weight_mu.detach().abs() / m.weight_sigma.detach()
        parts.append(s.reshape(-1) if m.runs is None else s.reshape(m.runs, -1))
    return torch.cat(parts, dim=-1)


@torch.no_grad()
def prune_by_snr(model: nn.Module, fraction: float) -> int:
    """Remove exactly the lowest-SNR ``fraction`` of the weights (Table 2).

    The removed weights are set to zero in every sampling mode through each
    layer's ``weight_mask``; the count is ``round(fraction * N)`` of the model's
    ``N`` weights (per run). Biases are kept. Pruning is not cumulative: each call
    starts again from all weights.

    Returns:
        The number of weights removed (per run).
    """
    if not (is_real(fraction) and 0.0 <= fraction <= 1.0):
        raise ValueError(f"pruning fraction must be in [0, 1], got {fraction!r}")
    fraction = float(fraction)
    layers = [m for m in model.modules() if isinstance(m, BayesLinear)]
    s = snr(model)
    s2 = s.unsqueeze(0) if s.dim() == 1 else s  # (runs, N)
    n = s2.shape[1]
    k = int(round(fraction * n))
    mask = torch.ones_like(s2)
    if k > 0:
        idx = torch.argsort(s2, dim=1, stable=True)[:, :k]
        mask.scatter_(1, idx, 0.0)
    offset = 0
    for m in layers:
        size = m.weight_mu[0].numel() if m.runs is not None else m.weight_mu.numel()
        part = mask[:, offset:offset + size]
        m.weight_mask.copy_(part.reshape(m.weight_mask.shape))
        offset += size
    return k
