"""The complexity cost ``log q(w) - log p(w)``, its gradients, and its weight per minibatch.

The posterior is ``q(w) = N(mu, sigma^2)`` with ``sigma = softplus(rho)`` and a weight
sample is ``w = mu + sigma * eps``. The cost is always **summed** over every weight and
bias. Two estimates:

* Monte Carlo, at the sampled weights (the paper's eq. 2; every prior):
  :func:`mc_cost_terms` with plain autograd, or for a prior with
  :class:`~bandits.bayes.priors.PriorConsts` the fused :func:`fused_mc_cost` (same value
  and gradients, a few in-place passes), :func:`log_p_minus_log_q` (its value) and
  :func:`mc_cost_grads` (its gradients, without autograd);
* the closed-form KL for a Gaussian prior: :func:`gaussian_kl`, :func:`gaussian_kl_grads`;
  and for every prior with :class:`~bandits.bayes.priors.PriorConsts`,
  :func:`closed_form_cost` and :func:`closed_form_cost_grads`: the Gaussian's KL, and for
  the scale mixture the KL of its hierarchical form (below), deterministic where the
  Monte Carlo estimate is noisy.

Gradients with respect to ``mu`` and ``sigma`` become gradients for the trained
parameters ``mu`` and ``rho`` through :func:`mu_rho_grads`, the one chain rule through
``sigma = softplus(rho)``; :func:`posterior_grads` is that for a data term plus the
Monte Carlo cost, the fused training step's per-weight work.

:func:`kl_weights` weights the cost across the minibatches of an epoch (section 3.4).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from bandits.bayes._checks import is_count
from bandits.bayes.priors import LOG_SQRT_2PI, MixtureConsts, Prior, PriorConsts

# --------------------------------------------------------------------------- closed form


def gaussian_kl(mu: Tensor, sigma: Tensor, prior_sigma: float | Tensor) -> Tensor:
    """Elementwise ``KL(N(mu, sigma^2) || N(0, prior_sigma^2))``; ``prior_sigma`` may be a
    tensor that broadcasts against ``mu`` (e.g. one prior per run, ``(R, 1)``)."""
    log_ps = torch.log(prior_sigma) if isinstance(prior_sigma, Tensor) else math.log(prior_sigma)
    return log_ps - torch.log(sigma) + (sigma**2 + mu**2) / (2 * prior_sigma**2) - 0.5


def gaussian_kl_grads(mu: Tensor, sigma: Tensor, inv_prior_var: float | Tensor,
                      scale: Tensor | float) -> tuple[Tensor, Tensor]:
    """Gradients of ``sum(scale * gaussian_kl(mu, sigma, s))`` with respect to ``mu`` and
    ``sigma``, given ``inv_prior_var = 1 / s^2``: ``scale mu / s^2`` and
    ``scale (sigma / s^2 - 1 / sigma)``."""
    g_mu = torch.mul(mu, inv_prior_var).mul_(scale)
    g_sigma = torch.mul(sigma, inv_prior_var).sub_(sigma.reciprocal()).mul_(scale)
    return g_mu, g_sigma


def _logit_at(w2: Tensor, mix: MixtureConsts) -> Tensor:
    """``e0 + e1 w2``: :func:`mixture_logit` at a given ``w^2`` (clamped the same way)."""
    return (w2 * mix.logit_w2).add_(mix.logit0).clamp_(min=-60.0)


def closed_form_cost(mu: Tensor, sigma: Tensor, consts: PriorConsts) -> Tensor:
    """Elementwise closed-form complexity cost of ``q = N(mu, sigma^2)`` under a prior.

    For a Gaussian prior, ``KL(q || N(0, s^2))`` (:func:`gaussian_kl`). For the scale
    mixture ``sum_k pi_k N(0, s_k^2)``, written as the hierarchical prior it is (an
    indicator ``z`` per weight picks a component, ``p(z = k) = pi_k``,
    ``p(w | z = k) = N(0, s_k^2)``), the KL of ``q(w) q(z)`` to ``p(w, z)`` with the best
    ``q(z)`` for each weight::

        min_q(z) KL(q(w) q(z) || p(w, z)) = -log sum_k pi_k exp(-KL(q || N(0, s_k^2)))

    It is at least ``KL(q || p)`` (marginalising ``z`` can only lower a KL), with equality
    when ``q`` sits inside one component, so ``data term + this`` is the negative of a
    valid evidence lower bound, one without the Monte Carlo noise of the paper's estimate.
    With :class:`~bandits.bayes.priors.PriorConsts` it is the Gaussian KL against the wide
    component minus ``softplus(e0 + e1 (mu^2 + sigma^2))``: the Monte Carlo estimate's
    form (:func:`log_p_minus_log_q`) with ``w^2`` replaced by its mean under ``q``.
    """
    m2 = sigma.square().add_(mu.square())
    c = torch.log(sigma).neg_().add_(m2.mul(consts.inv_wide_var), alpha=0.5)
    c.add_(consts.offset).sub_(0.5)
    if consts.mixture is not None:
        c.sub_(F.softplus(_logit_at(m2, consts.mixture)))
    return c


def closed_form_cost_grads(mu: Tensor, sigma: Tensor, consts: PriorConsts,
                           scale: Tensor | float) -> tuple[Tensor, Tensor]:
    """Gradients of ``sum(scale * closed_form_cost(mu, sigma, consts))`` with respect to
    ``mu`` and ``sigma``: with ``r = sigmoid(e0 + e1 (mu^2 + sigma^2))`` (the best
    ``q(z = narrow)``) and ``v = (1 - r) / s_W^2 + r / s_N^2``, they are ``scale mu v``
    and ``scale (sigma v - 1 / sigma)`` (:func:`gaussian_kl_grads` with ``1 / s^2 = v``)."""
    inv_var, mix = consts.inv_wide_var, consts.mixture
    if mix is not None:
        r = torch.sigmoid(_logit_at(sigma.square().add_(mu.square()), mix))
        inv_var = r.mul_(mix.inv_narrow_var - inv_var).add_(inv_var)
    return gaussian_kl_grads(mu, sigma, inv_var, scale)


# --------------------------------------------------------------------------- Monte Carlo


def mc_cost_terms(mu: Tensor, sigma: Tensor, eps: Tensor, prior: Prior) -> Tensor:
    """Elementwise ``log q(w) - log p(w)`` at ``w = mu + sigma * eps``, for any prior
    (plain tensor operations: autograd gives the gradients)."""
    w = mu + sigma * eps
    log_q = -LOG_SQRT_2PI - torch.log(sigma) - 0.5 * eps**2
    return log_q - prior.log_prob(w)


def mixture_logit(w: Tensor, mix: MixtureConsts) -> Tensor:
    """``e = e0 + e1 w^2``, the log-ratio of the narrow to the wide prior component at ``w``."""
    # e <= e0; clamping below at -60 changes softplus(e) and sigmoid(e) by < e^-60 (far below
    # float32 resolution) and keeps exp() off its slow underflow path.
    if isinstance(mix.logit_w2, Tensor):  # one prior per run: (R, 1) columns
        assert isinstance(mix.logit0, Tensor)  # the fields are all columns or all numbers
        return torch.addcmul(mix.logit0, w.square(), mix.logit_w2).clamp_(min=-60.0)
    assert not isinstance(mix.logit0, Tensor)
    return torch.addcmul(torch.full((), mix.logit0, dtype=w.dtype, device=w.device), w, w,
                         value=mix.logit_w2).clamp_(min=-60.0)


def log_p_minus_log_q(w: Tensor, sigma: Tensor, eps: Tensor, consts: PriorConsts
                      ) -> tuple[Tensor, Tensor | None]:
    """Elementwise ``log p(w) - log q(w)`` at ``w = mu + sigma * eps``.

    Returns the values and the mixture logit ``e`` (``None`` for a Gaussian prior), which
    :func:`mc_cost_grads` can reuse.
    """
    inv_sw2 = consts.inv_wide_var
    # Accumulated in place: log sigma + eps^2/2 - w^2/(2 s_W^2) + softplus(e) - offset.
    c = torch.log(sigma).addcmul_(eps, eps, value=0.5)
    if isinstance(inv_sw2, Tensor):  # one prior per run: (R, 1) columns
        c.addcmul_(w.square(), inv_sw2, value=-0.5)
    else:
        c.addcmul_(w, w, value=-0.5 * inv_sw2)
    e = None
    if consts.mixture is not None:
        e = mixture_logit(w, consts.mixture)
        c.add_(F.softplus(e))
    return c.sub_(consts.offset), e


def mc_cost_grads(w: Tensor, sigma: Tensor, eps: Tensor, consts: PriorConsts,
                  scale: Tensor | float, e: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Gradients of ``sum(scale * (log q(w) - log p(w)))`` with respect to ``mu`` and ``sigma``.

    ``w = mu + sigma * eps`` is given, ``scale`` broadcasts against ``w`` and ``e`` is the
    mixture logit if already computed. The value of the cost itself is not needed: a
    training step that only wants gradients skips it. With ``r = sigmoid(e)``,
    ``d/dw [-log p(w)] = w ((1 - r) / s_W^2 + r / s_N^2)``, a sum of positive terms (no
    cancellation), and ``log q(w) = -log sqrt(2 pi) - log sigma - eps^2 / 2`` has total
    derivative 0 with respect to ``mu`` and ``-1 / sigma`` with respect to ``sigma``.
    """
    inv_sw2, mix = consts.inv_wide_var, consts.mixture
    if not isinstance(scale, Tensor):
        scale = torch.tensor(scale, dtype=w.dtype, device=w.device)
    if mix is None:
        g = w.mul(inv_sw2)  # d/dw [-log p(w)]
    else:
        if e is None:
            e = mixture_logit(w, mix)
        g = torch.sigmoid(e).mul_(mix.inv_narrow_var - inv_sw2).add_(inv_sw2).mul_(w)
    g.mul_(scale)  # dC/dmu
    g_sigma = torch.mul(g, eps).addcdiv_(scale, sigma, value=-1.0)  # dC/dsigma
    return g, g_sigma


class _FusedMCCost(torch.autograd.Function):
    """``sum(mask * (log q(w) - log p(w)))`` at ``w = mu + sigma * eps``, hand-written backward.

    The same value and gradients as autograd through :func:`mc_cost_terms` (exact math,
    different rounding) in about ten in-place passes over the weights, where autograd
    through the scale mixture's ``logaddexp`` and its backward takes dozens. The forward is
    :func:`log_p_minus_log_q`, the backward :func:`mc_cost_grads`.
    """

    @staticmethod
    def forward(ctx, mu: Tensor, sigma: Tensor, eps: Tensor, mask: Tensor | None,
                runs: int | None, consts: PriorConsts) -> Tensor:
        w = torch.addcmul(mu, sigma, eps)
        c, e = log_p_minus_log_q(w, sigma, eps, consts)
        if mask is not None:
            c.mul_(mask)
        ctx.save_for_backward(sigma, eps, mask, w, e)
        ctx.runs, ctx.consts = runs, consts
        return -(c.sum() if runs is None else c.reshape(runs, -1).sum(1))

    @staticmethod
    def backward(ctx, grad: Tensor):
        sigma, eps, mask, w, e = ctx.saved_tensors
        scale = grad if ctx.runs is None else grad.reshape(-1, *([1] * (w.dim() - 1)))
        if mask is not None:
            scale = mask * scale
        g, g_sigma = mc_cost_grads(w, sigma, eps, ctx.consts, scale, e)
        return g, g_sigma, None, None, None, None


def fused_mc_cost(mu: Tensor, sigma: Tensor, eps: Tensor, mask: Tensor | None,
                  runs: int | None, consts: PriorConsts) -> Tensor:
    """``sum(mask * (log q(w) - log p(w)))`` at ``w = mu + sigma * eps``, differentiable in
    ``mu`` and ``sigma``: a scalar, or ``(runs,)`` summed per run (leading dimension)."""
    return _FusedMCCost.apply(mu, sigma, eps, mask, runs, consts)


# --------------------------------------------------------------------------- to mu and rho


def mu_rho_grads(g_mu: Tensor, g_sigma: Tensor, rho: Tensor, g_w: Tensor | None = None,
                 eps: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Gradients for the posterior's parameters ``mu`` and ``rho`` (computed in place in
    ``g_mu`` and ``g_sigma``, which are returned).

    ``g_mu`` and ``g_sigma`` are a loss's gradients with respect to ``mu`` and ``sigma``
    as direct arguments (e.g. the complexity cost's, :func:`mc_cost_grads` or
    :func:`gaussian_kl_grads`); ``g_w``, if given, its gradient with respect to the
    sampled weights ``w = mu + sigma * eps`` (e.g. a data term's). With
    ``sigma = softplus(rho)``, ``dsigma/drho = sigmoid(rho)``, the chain rule gives
    ``d/dmu = g_mu + g_w`` and ``d/drho = (g_sigma + g_w eps) sigmoid(rho)``.
    """
    if g_w is not None:
        assert eps is not None  # a data term's gradient comes with its noise
        g_mu.add_(g_w)
        g_sigma.addcmul_(g_w, eps)
    return g_mu, g_sigma.mul_(torch.sigmoid(rho))


def posterior_grads(g_w: Tensor, w: Tensor, sigma: Tensor, eps: Tensor, rho: Tensor,
                    scale: Tensor | float, prior_consts: PriorConsts) -> tuple[Tensor, Tensor]:
    """Gradients for ``mu`` and ``rho`` of ``data term + scale * (log q(w) - log p(w))``.

    ``g_w`` is the data term's gradient at the sampled weights ``w = mu + sigma * eps``;
    ``scale`` (a number, or a tensor broadcasting against ``w``, e.g. one weight per run
    ``(R, 1)``) weights the Monte Carlo complexity cost (:func:`mc_cost_grads`); the
    chain rule is :func:`mu_rho_grads`.
    """
    return mu_rho_grads(*mc_cost_grads(w, sigma, eps, prior_consts, scale), rho, g_w, eps)


# --------------------------------------------------------------------------- KL weighting

KL_SCHEMES = ("uniform", "blundell", "constant")
"""The weightings of the complexity cost across an epoch's minibatches (:func:`kl_weights`)."""


def kl_weights(num_batches: int, scheme: str = "uniform", value: float = 1.0) -> list[float]:
    """Weights ``pi_i`` of the complexity cost in minibatch ``i = 1..M`` of an epoch.

    Args:
        num_batches: ``M``, the number of minibatches in an epoch.
        scheme: ``"uniform"``: ``1/M`` (eq. 8); ``"blundell"``:
            ``pi_i = 2^(M-i) / (2^M - 1)`` (section 3.4: the first minibatches
            are weighted most, the sum is 1); ``"constant"``: ``value`` for all.
        value: The constant of the ``"constant"`` scheme.
    """
    if not is_count(num_batches):
        raise ValueError(f"num_batches must be a positive integer, got {num_batches!r}")
    num_batches = int(num_batches)
    if scheme == "uniform":
        return [1.0 / num_batches] * num_batches
    if scheme == "blundell":
        # 2^(M-i) / (2^M - 1) = 2^-i / (1 - 2^-M): no overflow for large M.
        norm = -math.expm1(-num_batches * math.log(2.0))
        return [2.0 ** (-i) / norm for i in range(1, num_batches + 1)]
    if scheme == "constant":
        return [float(value)] * num_batches
    raise ValueError(f"KL scheme must be one of {KL_SCHEMES}, got {scheme!r}")
