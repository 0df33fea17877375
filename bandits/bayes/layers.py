"""Linear layers with a runs dimension, Bayesian or not, and MLPs built from them.

* :class:`BayesLinear`, a linear layer with a diagonal Gaussian posterior
  ``q(w) = N(mu, sigma^2)``, ``sigma = softplus(rho)``, sampled by the
  reparameterisation ``w = mu + sigma * eps`` (Blundell et al. 2015, section 3.2), with
  its complexity cost (:mod:`bandits.bayes.cost`) and a pruning mask
  (:mod:`bandits.bayes.prune`);
* :class:`RunsLinear`, its deterministic twin, for the non-Bayesian baselines;
* :class:`MLP` / :func:`make_mlp`, an MLP from either kind of layer.

**Runs dimension.** Every layer can hold ``R`` independent models at once
(weights shaped ``(R, out, in)``), applied to inputs shaped ``(R, batch, in)``
with one batched matmul (:func:`batched_linear`): R seeds or agents train in one set of
kernels. Without ``runs`` a layer behaves like ``torch.nn.Linear`` on ``(..., in)``.

**Sampling modes** (:data:`MODES`), chosen by the caller:

* ``"sample"``: a fresh weight sample on every forward call;
* ``"mean"``: the posterior mean, deterministic;
* ``"held"``: a noise sample ``eps`` held and reused by every call until
  :meth:`BayesLinear.resample` is called.

In ``"sample"`` mode a layer's ``estimator`` (:data:`ESTIMATORS`) decides how the noise
is drawn: ``"reparam"`` (the default) uses one weight sample (per run) for all rows of
the batch, as Thompson sampling needs (every arm scored by the same network draw);
``"lrt"`` and ``"flipout"`` draw noise per row, which lowers the variance of the
training gradient.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bandits.bayes._checks import check_positive, is_count
from bandits.bayes.cost import closed_form_cost, fused_mc_cost, mc_cost_terms
from bandits.bayes.exact import sqrt
from bandits.bayes.priors import (
    Prior,
    ScaleMixturePrior,
    fused_prior_consts,
)

MODES = ("sample", "mean", "held")
"""How a Bayesian layer's forward call takes its weights: a fresh sample (``sample``), the
posterior mean (``mean``), or the sample drawn last, until ``resample()`` (``held``)."""

ESTIMATORS = ("reparam", "lrt", "flipout")
"""How a ``sample``-mode forward call draws its noise: one weight sample for the whole batch
(``reparam``, the paper's), or noise per example: the local reparameterisation trick
(``lrt``, Kingma et al. 2015: the pre-activations' Gaussian sampled directly) or Flipout
(``flipout``, Wen et al. 2018: one weight perturbation decorrelated across examples by
random signs)."""


def sigma_to_rho(sigma: float) -> float:
    """Inverse softplus: the ``rho`` with ``softplus(rho) = sigma``."""
    check_positive("sigma", sigma)
    return sigma + math.log(-math.expm1(-sigma))


def batched_linear(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """``x (R, N, in)`` through ``R`` linear maps, weights ``w (R, out, in)`` and biases
    ``b (R, out)`` (or none): ``(R, N, out)``, one batched matmul."""
    wt = w.transpose(1, 2)  # (R, in, out)
    if b is None:
        return torch.bmm(x, wt)
    return torch.baddbmm(b.unsqueeze(1), x, wt)


class _RunsLayer(nn.Module):
    """Shape checks and the matmul shared by the Bayesian and the deterministic layer."""

    def __init__(self, in_features: int, out_features: int, runs: int | None) -> None:
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if not is_count(v):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if runs is not None and not is_count(runs):
            raise ValueError(f"runs must be a positive integer or None, got {runs!r}")
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.runs = None if runs is None else int(runs)

    def _wshape(self) -> tuple[int, ...]:
        lead = () if self.runs is None else (self.runs,)
        return (*lead, self.out_features, self.in_features)

    def _bshape(self) -> tuple[int, ...]:
        lead = () if self.runs is None else (self.runs,)
        return (*lead, self.out_features)

    def _check_input(self, x: Tensor) -> None:
        if x.shape[-1] != self.in_features:
            raise ValueError(
                f"input has {x.shape[-1]} features in its last dimension, the layer expects "
                f"in_features={self.in_features} (input shape {tuple(x.shape)})"
            )
        if self.runs is not None and x.dim() == 3 and x.shape[0] != self.runs:
            raise ValueError(
                f"input has {x.shape[0]} runs in dimension 0, the layer holds runs={self.runs} "
                f"(input shape {tuple(x.shape)}; pass (runs, batch, in) or (batch, in))"
            )
        if self.runs is not None and x.dim() not in (2, 3):
            raise ValueError(
                f"a layer with runs={self.runs} takes input of shape (runs, batch, in) or "
                f"(batch, in), got shape {tuple(x.shape)}"
            )

    def _fan_in(self) -> int:
        return self.in_features

    def _linear(self, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        if self.runs is None:
            return F.linear(x, w, b)
        if x.dim() == 2:  # one batch shared by every run
            x = x.expand(self.runs, *x.shape)
        return batched_linear(x, w, b)


def init_mu(t: Tensor, fan_in: int) -> None:
    # torch.nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    bound = 1.0 / math.sqrt(fan_in)
    nn.init.uniform_(t, -bound, bound)


class RunsLinear(_RunsLayer):
    """An ordinary (deterministic) linear layer with an optional runs dimension.

    Args:
        in_features: Input size.
        out_features: Output size.
        runs: Number of independent models held, or ``None`` for one ordinary layer.
        bias: Whether to add a bias.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        runs: int | None = None,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, out_features, runs)
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(self._wshape(), **kw))
        self.bias = nn.Parameter(torch.empty(self._bshape(), **kw)) if bias else None
        init_mu(self.weight, in_features)
        if self.bias is not None:
            init_mu(self.bias, in_features)

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        return self._linear(x, self.weight, self.bias)


class BayesLinear(_RunsLayer):
    """Linear layer with a factorised Gaussian posterior over weights and biases.

    ``q(w) = N(mu, sigma^2)`` with ``sigma = softplus(rho)`` per weight and bias;
    a sample is ``w = mu + sigma * eps``, ``eps ~ N(0, 1)`` (Blundell et al., 3.2).

    Args:
        in_features: Input size.
        out_features: Output size.
        runs: Number of independent models held (weights ``(runs, out, in)``), or
            ``None`` for one model.
        prior: The prior over every weight and bias.
        bias: Whether to have a (Bayesian) bias.
        init_sigma: Initial posterior standard deviation of every parameter.
        generator: Source of the noise ``eps``; ``None`` uses torch's global generator.
            Must live on the same device as the parameters.
        estimator: How a ``"sample"``-mode call draws its noise (:data:`ESTIMATORS`):
            ``"reparam"`` one weight sample for the batch, ``"lrt"`` or ``"flipout"``
            noise per example. The Monte Carlo complexity cost is taken at a weight
            sample in every case (for Flipout, its base perturbation).
    """

    weight_mask: Tensor  # a buffer (register_buffer): 1 keeps a weight, 0 prunes it

    def __init__(
        self,
        in_features: int,
        out_features: int,
        runs: int | None = None,
        prior: Prior | None = None,
        bias: bool = True,
        init_sigma: float = 0.01,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        estimator: str = "reparam",
    ) -> None:
        super().__init__(in_features, out_features, runs)
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        self.prior: Prior = prior if prior is not None else ScaleMixturePrior()
        self.generator = generator
        self.estimator = estimator
        self.mode = "sample"
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        rho0 = sigma_to_rho(check_positive("init_sigma", init_sigma))
        self.weight_mu = nn.Parameter(torch.empty(self._wshape(), **kw))
        self.weight_rho = nn.Parameter(torch.full(self._wshape(), rho0, **kw))
        init_mu(self.weight_mu, self._fan_in())
        self.bias_mu: nn.Parameter | None
        self.bias_rho: nn.Parameter | None
        if bias:
            self.bias_mu = nn.Parameter(torch.empty(self._bshape(), **kw))
            self.bias_rho = nn.Parameter(torch.full(self._bshape(), rho0, **kw))
            init_mu(self.bias_mu, self._fan_in())
        else:
            self.bias_mu = self.bias_rho = None
        # Pruning mask (1 keeps a weight, 0 removes it); see prune_by_snr.
        self.register_buffer("weight_mask", torch.ones(self._wshape(), **kw))
        self._held: tuple[Tensor, Tensor | None] | None = None
        self._last: tuple[Tensor, Tensor | None] | None = None  # eps of the last sample

    # -- posterior ------------------------------------------------------------------
    @property
    def weight_sigma(self) -> Tensor:
        return F.softplus(self.weight_rho)

    @property
    def bias_sigma(self) -> Tensor | None:
        return None if self.bias_rho is None else F.softplus(self.bias_rho)

    def _draw_eps(self) -> tuple[Tensor, Tensor | None]:
        kw: dict[str, Any] = {"generator": self.generator, "device": self.weight_mu.device,
              "dtype": self.weight_mu.dtype}
        ew = torch.randn(self._wshape(), **kw)
        eb = torch.randn(self._bshape(), **kw) if self.bias_mu is not None else None
        return ew, eb

    def resample(self, eps_w: Tensor | None = None, eps_b: Tensor | None = None) -> None:
        """Draw (or set) the noise that ``"held"`` mode reuses until the next call."""
        if eps_w is None:
            eps_w, eps_b = self._draw_eps()
        if tuple(eps_w.shape) != self._wshape():
            raise ValueError(f"eps_w must have shape {self._wshape()}, got {tuple(eps_w.shape)}")
        if self.bias_mu is not None and (eps_b is None or tuple(eps_b.shape) != self._bshape()):
            got = None if eps_b is None else tuple(eps_b.shape)
            raise ValueError(f"eps_b must have shape {self._bshape()}, got {got}")
        self._held = (eps_w, eps_b)

    def sample_weights(self) -> tuple[Tensor, Tensor | None]:
        """The weights the current mode uses, ``(weight, bias)``; records the noise."""
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.mode == "mean":
            self._last = None
            return self.weight_mu * self.weight_mask, self.bias_mu
        if self.mode == "held":
            if self._held is None:
                self.resample()
            assert self._held is not None  # resample() holds a sample
            eps_w, eps_b = self._held
        else:
            eps_w, eps_b = self._draw_eps()
        self._last = (eps_w, eps_b)
        sw, sb = self.weight_sigma, self.bias_sigma
        w = torch.addcmul(self.weight_mu, sw, eps_w) * self.weight_mask
        b = None
        if self.bias_mu is not None:
            assert sb is not None and eps_b is not None  # a bias has its sigma and noise
            b = torch.addcmul(self.bias_mu, sb, eps_b)
        return w, b

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        w, b = self.sample_weights()
        if self.mode != "sample" or self.estimator == "reparam":
            return self._linear(x, w, b)
        mean = self._linear(x, self.weight_mu * self.weight_mask, self.bias_mu)
        if self.estimator == "lrt":
            sw = self.weight_sigma * self.weight_mask
            sb = self.bias_sigma
            var = self._linear(x * x, sw * sw, None if sb is None else sb**2)
            return mean + sqrt(var.clamp_min(1e-30)) * self._normal(mean.shape)
        # flipout: the sample's perturbation (weights and bias), its sign flipped per
        # example on the input and the output side
        delta = w - self.weight_mu * self.weight_mask
        s_in, s_out = self._signs(x, mean)
        db = None if b is None or self.bias_mu is None else b - self.bias_mu
        return mean + self._linear(x * s_in, delta, db) * s_out

    def _normal(self, shape: torch.Size) -> Tensor:
        return torch.randn(shape, generator=self.generator, device=self.weight_mu.device,
                           dtype=self.weight_mu.dtype)

    def _random_signs(self, shape: tuple[int, ...]) -> Tensor:
        u = torch.empty(shape, device=self.weight_mu.device, dtype=self.weight_mu.dtype)
        return u.bernoulli_(0.5, generator=self.generator).mul_(2).sub_(1)

    def _signs(self, x: Tensor, out: Tensor) -> tuple[Tensor, Tensor]:
        """Flipout's random signs per example: for the inputs and for the outputs."""
        return self._random_signs(tuple(x.shape)), self._random_signs(tuple(out.shape))

    # -- complexity cost ------------------------------------------------------------
    def _sum(self, t: Tensor) -> Tensor:
        # Sum over every parameter element, per run when there is a runs dimension.
        return t.sum() if self.runs is None else t.reshape(self.runs, -1).sum(1)

    def complexity_cost(self, kind: str = "mc") -> Tensor:
        """``log q(w|theta) - log p(w)`` summed over all weights and biases (never averaged).

        Args:
            kind: ``"mc"``: the Monte Carlo estimate at the weights of the last
                sampled forward call (the paper's estimator, eq. 2; works for
                every prior). ``"kl"``: the closed form (:func:`bandits.bayes.closed_form_cost`):
                the KL for a Gaussian prior, the KL of the hierarchical form for a
                scale mixture (an upper bound on its KL, without Monte Carlo noise).

        Returns:
            A scalar, or a ``(runs,)`` tensor: one cost per run.
        """
        # sigma is recomputed here, not kept from the forward pass: the cost may be
        # differentiated on its own, or evaluated after the parameters have changed.
        parts: list[tuple[Tensor, Tensor, int]] = [(self.weight_mu, self.weight_sigma, 0)]
        bias_sigma = self.bias_sigma
        if self.bias_mu is not None and bias_sigma is not None:
            parts.append((self.bias_mu, bias_sigma, 1))
        mask = self.weight_mask
        if kind == "kl":
            consts = fused_prior_consts(self.prior)
            if consts is None:
                raise ValueError(f"no closed-form cost for {self.prior}: a scale mixture "
                                 "needs 0 < pi < 1 (for pi of 0 or 1 use a GaussianPrior)")
            total: Tensor | int = 0
            for mu, sigma, i in parts:
                kl = closed_form_cost(mu, sigma, consts)
                total = total + self._sum(kl * mask if i == 0 else kl)
            assert isinstance(total, Tensor)  # the weights' part is always there
            return total
        if kind != "mc":
            raise ValueError(f"complexity cost kind must be 'mc' or 'kl', got {kind!r}")
        if self._last is None:
            raise RuntimeError("no sampled weights yet: run a forward pass in 'sample' or 'held' "
                               "mode before asking for the Monte Carlo complexity cost")
        total = 0
        consts = fused_prior_consts(self.prior)
        for (mu, sigma, i), eps in zip(parts, self._last):
            assert eps is not None  # a sample holds noise for each part
            if consts is not None:  # same value and gradients, a few times faster
                m = mask if i == 0 else None
                total = total + fused_mc_cost(mu, sigma, eps, m, self.runs, consts)
                continue
            c = mc_cost_terms(mu, sigma, eps, self.prior)
            total = total + self._sum(c * mask if i == 0 else c)
        assert isinstance(total, Tensor)  # the weights' part is always there
        return total

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"runs={self.runs}, prior={self.prior}, mode={self.mode!r}")
