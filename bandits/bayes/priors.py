"""Priors over the weights, and the constants the fused complexity cost needs from them.

A prior gives an elementwise ``log p(w)``: :class:`GaussianPrior` or the scale mixture
:class:`ScaleMixturePrior` (Blundell et al. 2015, eq. 7).

The fused complexity cost (:mod:`bandits.bayes.cost`) does not call ``log_prob``: it
works from a few numbers per prior, a :class:`PriorConsts`. Write the prior as a wide
component ``W`` and a narrow one ``N`` (``s_W >= s_N``; for the paper's prior ``W`` is
``(pi, sigma1)``). Then

    log p(w) = log pi_W - log sqrt(2 pi) - log s_W - w^2 / (2 s_W^2) + softplus(e),
    e = e0 + e1 w^2 = log(pi_N N(w; 0, s_N) / (pi_W N(w; 0, s_W))),

and a Gaussian prior is the case without ``N``. :func:`runs_prior_consts` gives the
constants for one prior per run: plain numbers when all runs share one prior, ``(R, 1)``
tensor columns otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple, cast

import torch
from torch import Tensor

from bandits.bayes._checks import check_positive, is_real

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_log_prob(w: Tensor, sigma: float) -> Tensor:
    """Elementwise ``log N(w; 0, sigma^2)``."""
    return -LOG_SQRT_2PI - math.log(sigma) - 0.5 * (w / sigma) ** 2


class GaussianPrior:
    """``p(w) = N(0, sigma^2)`` for every weight.

    Args:
        sigma: Prior standard deviation (> 0).
    """

    def __init__(self, sigma: float = 1.0) -> None:
        self.sigma = check_positive("prior sigma", sigma)

    def log_prob(self, w: Tensor) -> Tensor:
        """Elementwise ``log p(w)``."""
        return gaussian_log_prob(w, self.sigma)

    def __repr__(self) -> str:
        return f"GaussianPrior(sigma={self.sigma:g})"


class ScaleMixturePrior:
    """``p(w) = pi N(0, sigma_1^2) + (1 - pi) N(0, sigma_2^2)`` (Blundell et al., eq. 7).

    Evaluated in log space with ``logaddexp``, so it stays finite for tiny
    ``sigma_2`` (the paper uses down to ``e^-8``) and for ``pi`` in ``{0, 1}``.

    Args:
        pi: Weight of the first component, in ``[0, 1]``.
        sigma1: Standard deviation of the wide component (> 0).
        sigma2: Standard deviation of the narrow component (> 0).
    """

    def __init__(self, pi: float = 0.5, sigma1: float = 1.0, sigma2: float = math.exp(-6)) -> None:
        if not (is_real(pi) and 0.0 <= pi <= 1.0):
            raise ValueError(f"prior pi must be in [0, 1], got {pi!r}")
        self.pi = pi = float(pi)
        self.sigma1 = check_positive("prior sigma1", sigma1)
        self.sigma2 = check_positive("prior sigma2", sigma2)
        self._log_pi = math.log(pi) if pi > 0 else -math.inf
        self._log_1m_pi = math.log1p(-pi) if pi < 1 else -math.inf

    def log_prob(self, w: Tensor) -> Tensor:
        """Elementwise ``log p(w)``."""
        a = self._log_pi + gaussian_log_prob(w, self.sigma1)
        b = self._log_1m_pi + gaussian_log_prob(w, self.sigma2)
        return torch.logaddexp(a, b)

    def __repr__(self) -> str:
        return f"ScaleMixturePrior(pi={self.pi:g}, sigma1={self.sigma1:g}, sigma2={self.sigma2:g})"


Prior = GaussianPrior | ScaleMixturePrior
"""Either prior: what a Bayesian layer takes as ``prior``."""


class MixtureConsts(NamedTuple):
    """The narrow component's part of :class:`PriorConsts`: the mixture logit is
    ``e = logit0 + logit_w2 * w^2``. Each field is a number or an ``(R, 1)`` column."""

    logit0: float | Tensor  # e0 = log(pi_N / pi_W) + log(s_W / s_N), the logit at w = 0
    logit_w2: float | Tensor  # e1 = -(1 / s_N^2 - 1 / s_W^2) / 2 <= 0
    inv_narrow_var: float | Tensor  # 1 / s_N^2


class PriorConsts(NamedTuple):
    """A prior as the fused complexity cost uses it (see the module docstring).

    Each field is a number (one prior for every run) or an ``(R, 1)`` column (one prior
    per run) that broadcasts against ``(R, P)`` parameters.
    """

    inv_wide_var: float | Tensor  # 1 / s_W^2
    offset: float | Tensor  # log s_W - log pi_W: log p(w) = -offset - w^2 / (2 s_W^2) + ...
    mixture: MixtureConsts | None  # None for a Gaussian prior


def fused_prior_consts(prior: Prior) -> PriorConsts | None:
    """``prior``'s :class:`PriorConsts`, or ``None`` for a scale mixture with ``pi`` of
    0 or 1 (the fused cost does not apply; the layers fall back to plain autograd)."""
    if isinstance(prior, GaussianPrior):
        return PriorConsts(1.0 / prior.sigma**2, math.log(prior.sigma), None)
    if isinstance(prior, ScaleMixturePrior) and 0.0 < prior.pi < 1.0:
        (lw, sw), (ln, sn) = sorted([(prior._log_pi, prior.sigma1),
                                     (prior._log_1m_pi, prior.sigma2)], key=lambda t: -t[1])
        e0 = ln - lw + math.log(sw) - math.log(sn)
        e1 = -0.5 * (1.0 / sn**2 - 1.0 / sw**2)
        return PriorConsts(1.0 / sw**2, math.log(sw) - lw, MixtureConsts(e0, e1, 1.0 / sn**2))
    return None


def runs_prior_consts(priors: Sequence[Prior]) -> PriorConsts:
    """The :class:`PriorConsts` of one prior per run (``priors[r]`` is run ``r``'s).

    One prior for all runs gives :func:`fused_prior_consts`'s numbers; different priors
    give ``(R, 1)`` tensor columns that broadcast against ``(R, P)`` parameters. A Gaussian
    prior among scale mixtures is written as the mixture of two equal components
    (``pi = 1/2``, ``sigma1 = sigma2``), which has the same density and gradients.

    Raises:
        ValueError: for a scale mixture with ``pi`` of 0 or 1 (use a Gaussian prior).
    """
    consts = []
    for p in priors:
        c = fused_prior_consts(p)
        if c is None:
            raise ValueError(f"no fused complexity cost for {p}: a scale mixture needs "
                             "0 < pi < 1 (for pi of 0 or 1 use a Gaussian prior)")
        consts.append(c)
    if all(c == consts[0] for c in consts):
        return consts[0]
    if any(c.mixture is not None for c in consts):  # some mixtures: every run as a mixture
        consts = [c if c.mixture is not None
                  else PriorConsts(c.inv_wide_var, c.offset + math.log(2.0),
                                   MixtureConsts(0.0, 0.0, c.inv_wide_var))
                  for c in consts]
        cols = list(zip(*[(a, b, *cast(MixtureConsts, mix)) for a, b, mix in consts]))
    else:
        cols = list(zip(*[(a, b) for a, b, _ in consts]))
    t = [torch.tensor(col, dtype=torch.float32).unsqueeze(1) for col in cols]
    mixture = None if len(t) == 2 else MixtureConsts(*t[2:])
    return PriorConsts(t[0], t[1], mixture)


def map_consts(consts: PriorConsts, fn: Callable[[Tensor], Tensor]) -> PriorConsts:
    """``consts`` with ``fn`` applied to its tensors (if any), e.g. to move them to a device."""
    def f(v):
        return fn(v) if isinstance(v, Tensor) else v
    mix = consts.mixture
    return PriorConsts(f(consts.inv_wide_var), f(consts.offset),
                       None if mix is None else MixtureConsts(*(f(v) for v in mix)))
