"""Bayes by Backprop (Blundell, Cornebise, Kavukcuoglu, Wierstra 2015).

The pieces, each small and separate:

* priors that give an elementwise ``log p(w)``: :class:`GaussianPrior` and the
  scale mixture :class:`ScaleMixturePrior` (the paper's eq. 7);
* :class:`BayesLinear`, a linear layer with a diagonal Gaussian posterior
  ``q(w) = N(mu, sigma^2)``, ``sigma = softplus(rho)``, sampled by the
  reparameterisation ``w = mu + sigma * eps`` (section 3.2);
* :class:`RunsLinear`, its deterministic twin, for the non-Bayesian baselines;
* :class:`MLP` / :func:`make_mlp`, an MLP from either kind of layer;
* the complexity cost ``log q(w) - log p(w)`` (Monte Carlo, at the sampled
  weights, as in the paper) or the closed-form KL for a Gaussian prior, always
  **summed** over every weight and bias;
* the KL weights across the M minibatches of an epoch (section 3.4);
* the signal-to-noise ratio ``|mu| / sigma`` and pruning by it (section 5.1).

**Runs dimension.** Every layer can hold ``R`` independent models at once
(weights shaped ``(R, out, in)``), applied to inputs shaped ``(R, batch, in)``
with one batched matmul: R seeds or agents train in one set of kernels. Without
``runs`` a layer behaves like ``torch.nn.Linear`` on ``(..., in)``.

**Sampling modes** (:data:`MODES`), chosen by the caller:

* ``"sample"``: a fresh weight sample on every forward call;
* ``"mean"``: the posterior mean, deterministic;
* ``"held"``: a noise sample ``eps`` held and reused by every call until
  :meth:`BayesLinear.resample` is called.

One forward call uses one weight sample (per run) for all rows of the batch:
Thompson sampling needs every arm scored by the same network draw.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn

MODES = ("sample", "mean", "held")
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _is_real(value: object) -> bool:
    # numbers.Real, not (int, float): numpy scalars such as np.float32 are not float subclasses.
    return isinstance(value, numbers.Real)


def _is_count(value: object) -> bool:
    # A positive integer, numpy integers included; True is not a size.
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0


def _check_positive(name: str, value: float) -> float:
    if not (_is_real(value) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _gaussian_log_prob(w: Tensor, sigma: float) -> Tensor:
    return -_LOG_SQRT_2PI - math.log(sigma) - 0.5 * (w / sigma) ** 2


# --------------------------------------------------------------------------- priors


class GaussianPrior:
    """``p(w) = N(0, sigma^2)`` for every weight.

    Args:
        sigma: Prior standard deviation (> 0).
    """

    def __init__(self, sigma: float = 1.0) -> None:
        self.sigma = _check_positive("prior sigma", sigma)

    def log_prob(self, w: Tensor) -> Tensor:
        """Elementwise ``log p(w)``."""
        return _gaussian_log_prob(w, self.sigma)

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
        if not (_is_real(pi) and 0.0 <= pi <= 1.0):
            raise ValueError(f"prior pi must be in [0, 1], got {pi!r}")
        self.pi = pi = float(pi)
        self.sigma1 = _check_positive("prior sigma1", sigma1)
        self.sigma2 = _check_positive("prior sigma2", sigma2)
        self._log_pi = math.log(pi) if pi > 0 else -math.inf
        self._log_1m_pi = math.log1p(-pi) if pi < 1 else -math.inf

    def log_prob(self, w: Tensor) -> Tensor:
        """Elementwise ``log p(w)``."""
        a = self._log_pi + _gaussian_log_prob(w, self.sigma1)
        b = self._log_1m_pi + _gaussian_log_prob(w, self.sigma2)
        return torch.logaddexp(a, b)

    def __repr__(self) -> str:
        return f"ScaleMixturePrior(pi={self.pi:g}, sigma1={self.sigma1:g}, sigma2={self.sigma2:g})"


Prior = GaussianPrior | ScaleMixturePrior


def gaussian_kl(mu: Tensor, sigma: Tensor, prior_sigma: float | Tensor) -> Tensor:
    """Elementwise ``KL(N(mu, sigma^2) || N(0, prior_sigma^2))``; ``prior_sigma`` may be a
    tensor that broadcasts against ``mu`` (e.g. one prior per run, ``(R, 1)``)."""
    log_ps = torch.log(prior_sigma) if isinstance(prior_sigma, Tensor) else math.log(prior_sigma)
    return log_ps - torch.log(sigma) + (sigma**2 + mu**2) / (2 * prior_sigma**2) - 0.5


def sigma_to_rho(sigma: float) -> float:
    """Inverse softplus: the ``rho`` with ``softplus(rho) = sigma``."""
    _check_positive("sigma", sigma)
    return sigma + math.log(-math.expm1(-sigma))


class _FusedMCCost(torch.autograd.Function):
    """``sum(mask * (log q(w) - log p(w)))`` at ``w = mu + sigma * eps``, hand-written backward.

    The same value and gradients as autograd through :func:`_mc_cost_reference`
    (exact math, different rounding), but about ten in-place passes over the
    weights instead of autograd's dozens: the scale-mixture prior's ``logaddexp``
    and its backward dominated a Bayesian MLP's training step on a CPU.

    Write the prior as a wide component ``W`` and a narrow one ``N``
    (``s_W >= s_N``; for the paper's prior ``W`` is ``(pi, sigma1)``). Then

    * ``log p(w) = log(pi_W N(w; 0, s_W)) + softplus(e)`` with
      ``e = log(pi_N N(w; 0, s_N) / (pi_W N(w; 0, s_W)))
      = e0 - w^2 (1/s_N^2 - 1/s_W^2) / 2 <= e0``: ``softplus(e)`` stays small,
      so nothing cancels even for ``s_N = e^-8``;
    * ``d/dw [-log p(w)] = w ((1 - r) / s_W^2 + r / s_N^2)`` with ``r = sigmoid(e)``;
    * ``log q(w) = -log sqrt(2 pi) - log sigma - eps^2 / 2`` (its total derivative
      through ``w`` with respect to ``mu`` is zero, with respect to ``sigma`` ``-1/sigma``).

    A Gaussian prior is the case without ``N`` (``mix`` is ``None``).
    """

    @staticmethod
    def forward(ctx, mu: Tensor, sigma: Tensor, eps: Tensor, mask: Tensor | None,
                runs: int | None, consts: tuple) -> Tensor:
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


def _mixture_logit(w: Tensor, mix: tuple) -> Tensor:
    """``e = e0 + e1 w^2``, the log-ratio of the narrow to the wide prior component at ``w``."""
    # e <= e0; clamping below at -60 changes softplus(e) and sigmoid(e) by < e^-60 (far below
    # float32 resolution) and keeps exp() off its slow underflow path.
    if isinstance(mix[1], Tensor):  # one prior per run: (R, 1) columns
        return torch.addcmul(mix[0], w.square(), mix[1]).clamp_(min=-60.0)
    return torch.addcmul(torch.full((), mix[0], dtype=w.dtype, device=w.device), w, w,
                         value=mix[1]).clamp_(min=-60.0)


def log_p_minus_log_q(w: Tensor, sigma: Tensor, eps: Tensor, consts: tuple
                      ) -> tuple[Tensor, Tensor | None]:
    """Elementwise ``log p(w) - log q(w)`` at ``w = mu + sigma * eps`` for :func:`_fused_consts`.

    Returns the values and the mixture logit ``e`` (``None`` for a Gaussian prior), which
    :func:`mc_cost_grads` can reuse.
    """
    inv_sw2, const, mix = consts  # mix: None or (e0, e1, 1/s_N^2), e = e0 + e1 w^2
    # Accumulated in place: log sigma + eps^2/2 - w^2/(2 s_W^2) + softplus(e) - const.
    c = torch.log(sigma).addcmul_(eps, eps, value=0.5)
    if isinstance(inv_sw2, Tensor):  # one prior per run: (R, 1) columns
        c.addcmul_(w.square(), inv_sw2, value=-0.5)
    else:
        c.addcmul_(w, w, value=-0.5 * inv_sw2)
    e = None
    if mix is not None:
        e = _mixture_logit(w, mix)
        c.add_(F.softplus(e))
    return c.sub_(const), e


def mc_cost_grads(w: Tensor, sigma: Tensor, eps: Tensor, consts: tuple, scale: Tensor | float,
                  e: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Gradients of ``sum(scale * (log q(w) - log p(w)))`` with respect to ``mu`` and ``sigma``.

    ``w = mu + sigma * eps`` is given, ``consts`` come from :func:`_fused_consts`, ``scale``
    broadcasts against ``w`` and ``e`` is the mixture logit if already computed. The value of
    the cost itself is not needed: a training step that only wants gradients skips it.
    """
    inv_sw2, _, mix = consts
    if not isinstance(scale, Tensor):
        scale = torch.tensor(scale, dtype=w.dtype, device=w.device)
    if mix is None:
        g = w.mul(inv_sw2)  # d/dw [-log p(w)]
    else:  # a sum of positive terms: no cancellation
        if e is None:
            e = _mixture_logit(w, mix)
        g = torch.sigmoid(e).mul_(mix[2] - inv_sw2).add_(inv_sw2).mul_(w)
    g.mul_(scale)  # dC/dmu
    g_sigma = torch.mul(g, eps).addcdiv_(scale, sigma, value=-1.0)  # dC/dsigma
    return g, g_sigma


def _mc_cost_reference(mu: Tensor, sigma: Tensor, eps: Tensor, prior: Prior) -> Tensor:
    """Elementwise ``log q(w) - log p(w)`` at ``w = mu + sigma * eps`` (plain autograd)."""
    w = mu + sigma * eps
    log_q = -_LOG_SQRT_2PI - torch.log(sigma) - 0.5 * eps**2
    return log_q - prior.log_prob(w)


def _fused_consts(prior: Prior) -> tuple | None:
    """Constants of :class:`_FusedMCCost` for ``prior``, or ``None`` where it does not apply."""
    if isinstance(prior, GaussianPrior):
        return (1.0 / prior.sigma**2, math.log(prior.sigma), None)
    if isinstance(prior, ScaleMixturePrior) and 0.0 < prior.pi < 1.0:
        (lw, sw), (ln, sn) = sorted([(prior._log_pi, prior.sigma1),
                                     (prior._log_1m_pi, prior.sigma2)], key=lambda t: -t[1])
        e0 = ln - lw + math.log(sw) - math.log(sn)
        e1 = -0.5 * (1.0 / sn**2 - 1.0 / sw**2)
        return (1.0 / sw**2, math.log(sw) - lw, (e0, e1, 1.0 / sn**2))
    return None


def runs_prior_consts(priors: Sequence[Prior]) -> tuple:
    """Constants of :func:`mc_cost_grads` / :func:`log_p_minus_log_q` for one prior per run.

    ``priors[r]`` is run ``r``'s prior. One prior for all runs gives :func:`_fused_consts`'s
    numbers; different priors give ``(R, 1)`` tensor columns that broadcast against
    ``(R, P)`` parameters. A Gaussian prior among scale mixtures is written as the mixture
    of two equal components (``pi = 1/2``, ``sigma1 = sigma2``), which has the same density
    and gradients.

    Raises:
        ValueError: for a scale mixture with ``pi`` of 0 or 1 (use a Gaussian prior).
    """
    consts = []
    for p in priors:
        c = _fused_consts(p)
        if c is None:
            raise ValueError(f"no fused complexity cost for {p}: a scale mixture needs "
                             "0 < pi < 1 (for pi of 0 or 1 use a Gaussian prior)")
        consts.append(c)
    if all(c == consts[0] for c in consts):
        return consts[0]
    if any(c[2] is not None for c in consts):  # some mixtures: every run as a mixture
        consts = [c if c[2] is not None else (c[0], c[1] + math.log(2.0), (0.0, 0.0, c[0]))
                  for c in consts]
        cols = list(zip(*[(a, b, *mix) for a, b, mix in consts]))
    else:
        cols = list(zip(*[(a, b) for a, b, _ in consts]))
    t = [torch.tensor(col, dtype=torch.float32).unsqueeze(1) for col in cols]
    return (t[0], t[1], None) if len(t) == 2 else (t[0], t[1], (t[2], t[3], t[4]))


def map_consts(consts: tuple, fn) -> tuple:
    """``consts`` with ``fn`` applied to its tensors (if any), e.g. to move them to a device."""
    def f(v):
        return fn(v) if isinstance(v, Tensor) else v
    a, b, mix = consts
    return (f(a), f(b), None if mix is None else tuple(f(v) for v in mix))


# --------------------------------------------------------------------------- layers


class _RunsLayer(nn.Module):
    """Shape checks and the matmul shared by the Bayesian and the deterministic layer."""

    def __init__(self, in_features: int, out_features: int, runs: int | None) -> None:
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if not _is_count(v):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if runs is not None and not _is_count(runs):
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

    def _linear(self, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        if self.runs is None:
            return F.linear(x, w, b)
        if x.dim() == 2:  # one batch shared by every run
            x = x.expand(self.runs, *x.shape)
        wt = w.transpose(1, 2)  # (runs, in, out)
        if b is None:
            return torch.bmm(x, wt)  # (runs, batch, out)
        return torch.baddbmm(b.unsqueeze(1), x, wt)  # (runs, batch, out)


def _init_mu(t: Tensor, fan_in: int) -> None:
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
        kw = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(self._wshape(), **kw))
        self.bias = nn.Parameter(torch.empty(self._bshape(), **kw)) if bias else None
        _init_mu(self.weight, in_features)
        if self.bias is not None:
            _init_mu(self.bias, in_features)

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
    """

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
    ) -> None:
        super().__init__(in_features, out_features, runs)
        self.prior: Prior = prior if prior is not None else ScaleMixturePrior()
        self.generator = generator
        self.mode = "sample"
        kw = {"device": device, "dtype": dtype}
        rho0 = sigma_to_rho(_check_positive("init_sigma", init_sigma))
        self.weight_mu = nn.Parameter(torch.empty(self._wshape(), **kw))
        self.weight_rho = nn.Parameter(torch.full(self._wshape(), rho0, **kw))
        _init_mu(self.weight_mu, in_features)
        if bias:
            self.bias_mu = nn.Parameter(torch.empty(self._bshape(), **kw))
            self.bias_rho = nn.Parameter(torch.full(self._bshape(), rho0, **kw))
            _init_mu(self.bias_mu, in_features)
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
        kw = {"generator": self.generator, "device": self.weight_mu.device,
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
            eps_w, eps_b = self._held
        else:
            eps_w, eps_b = self._draw_eps()
        self._last = (eps_w, eps_b)
        sw, sb = self.weight_sigma, self.bias_sigma
        w = torch.addcmul(self.weight_mu, sw, eps_w) * self.weight_mask
        b = None if self.bias_mu is None else torch.addcmul(self.bias_mu, sb, eps_b)
        return w, b

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        w, b = self.sample_weights()
        return self._linear(x, w, b)

    # -- complexity cost ------------------------------------------------------------
    def _sum(self, t: Tensor) -> Tensor:
        # Sum over every parameter element, per run when there is a runs dimension.
        return t.sum() if self.runs is None else t.reshape(self.runs, -1).sum(1)

    def complexity_cost(self, kind: str = "mc") -> Tensor:
        """``log q(w|theta) - log p(w)`` summed over all weights and biases (never averaged).

        Args:
            kind: ``"mc"``: the Monte Carlo estimate at the weights of the last
                sampled forward call (the paper's estimator, eq. 2; works for
                every prior). ``"kl"``: the closed-form KL, Gaussian prior only.

        Returns:
            A scalar, or a ``(runs,)`` tensor: one cost per run.
        """
        # sigma is recomputed here, not kept from the forward pass: the cost may be
        # differentiated on its own, or evaluated after the parameters have changed.
        parts = [(self.weight_mu, self.weight_sigma, 0)]
        if self.bias_mu is not None:
            parts.append((self.bias_mu, self.bias_sigma, 1))
        mask = self.weight_mask
        if kind == "kl":
            if not isinstance(self.prior, GaussianPrior):
                raise ValueError(f"closed-form KL needs a GaussianPrior, not {self.prior}")
            total = 0
            for mu, sigma, i in parts:
                kl = gaussian_kl(mu, sigma, self.prior.sigma)
                total = total + self._sum(kl * mask if i == 0 else kl)
            return total
        if kind != "mc":
            raise ValueError(f"complexity cost kind must be 'mc' or 'kl', got {kind!r}")
        if self._last is None:
            raise RuntimeError("no sampled weights yet: run a forward pass in 'sample' or 'held' "
                               "mode before asking for the Monte Carlo complexity cost")
        total = 0
        consts = _fused_consts(self.prior)
        for (mu, sigma, i), eps in zip(parts, self._last):
            if consts is not None:  # same value and gradients, a few times faster
                m = mask if i == 0 else None
                total = total + _FusedMCCost.apply(mu, sigma, eps, m, self.runs, consts)
                continue
            c = _mc_cost_reference(mu, sigma, eps, self.prior)
            total = total + self._sum(c * mask if i == 0 else c)
        return total

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"runs={self.runs}, prior={self.prior}, mode={self.mode!r}")


# --------------------------------------------------------------------------- MLP

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "sigmoid": nn.Sigmoid}


class MLP(nn.Module):
    """A stack of (Bayesian or ordinary) linear layers with an activation between them."""

    def __init__(self, layers: Sequence[nn.Module], activation: str = "relu",
                 dropout: float = 0.0) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be in {sorted(_ACTIVATIONS)}, got {activation!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.layers = nn.ModuleList(layers)
        self.act = _ACTIVATIONS[activation]()
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < last:
                x = self.drop(self.act(x))
        return x

    def bayes_layers(self) -> list[BayesLinear]:
        return [m for m in self.layers if isinstance(m, BayesLinear)]

    @property
    def mode(self) -> str:
        modes = {m.mode for m in self.bayes_layers()}
        return modes.pop() if len(modes) == 1 else "mixed"

    def set_mode(self, mode: str) -> MLP:
        """Set the sampling mode (:data:`MODES`) of every Bayesian layer."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        for m in self.bayes_layers():
            m.mode = mode
        return self

    @contextmanager
    def sampling(self, mode: str) -> Iterator[MLP]:
        """Temporarily use another sampling mode: ``with model.sampling("mean"): ...``."""
        old = [m.mode for m in self.bayes_layers()]
        self.set_mode(mode)
        try:
            yield self
        finally:
            for m, o in zip(self.bayes_layers(), old):
                m.mode = o

    def resample(self) -> None:
        """Draw new held noise in every Bayesian layer."""
        for m in self.bayes_layers():
            m.resample()

    def complexity_cost(self, kind: str = "mc") -> Tensor:
        """Sum of the layers' complexity costs (see :meth:`BayesLinear.complexity_cost`)."""
        layers = self.bayes_layers()
        if not layers:
            raise ValueError("the model has no Bayesian layers, so it has no complexity cost")
        return sum(m.complexity_cost(kind) for m in layers)


def make_mlp(
    in_features: int,
    hidden: Sequence[int],
    out_features: int,
    *,
    bayesian: bool = True,
    runs: int | None = None,
    prior: Prior | None = None,
    activation: str = "relu",
    dropout: float = 0.0,
    init_sigma: float = 0.01,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> MLP:
    """Build an MLP ``in -> hidden[0] -> ... -> out``.

    Args:
        in_features: Input size.
        hidden: Sizes of the hidden layers.
        out_features: Output size.
        bayesian: :class:`BayesLinear` layers if true, else :class:`RunsLinear`.
        runs: Independent models held at once (see the module docstring).
        prior: Prior of every Bayesian layer (default: scale mixture).
        activation: ``"relu"``, ``"tanh"``, ``"elu"`` or ``"sigmoid"``.
        dropout: Dropout probability after each hidden activation.
        init_sigma: Initial posterior standard deviation (Bayesian layers).
        generator: Noise source shared by the Bayesian layers.
    """
    sizes = [in_features, *hidden, out_features]
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        if bayesian:
            layers.append(BayesLinear(a, b, runs=runs, prior=prior, init_sigma=init_sigma,
                                      generator=generator, device=device, dtype=dtype))
        else:
            layers.append(RunsLinear(a, b, runs=runs, device=device, dtype=dtype))
    return MLP(layers, activation=activation, dropout=dropout)


# --------------------------------------------------------------------------- KL weighting

KL_SCHEMES = ("uniform", "blundell", "constant")


def kl_weights(num_batches: int, scheme: str = "uniform", value: float = 1.0) -> list[float]:
    """Weights ``pi_i`` of the complexity cost in minibatch ``i = 1..M`` of an epoch.

    Args:
        num_batches: ``M``, the number of minibatches in an epoch.
        scheme: ``"uniform"``: ``1/M`` (eq. 8); ``"blundell"``:
            ``pi_i = 2^(M-i) / (2^M - 1)`` (section 3.4: the first minibatches
            are weighted most, the sum is 1); ``"constant"``: ``value`` for all.
        value: The constant of the ``"constant"`` scheme.
    """
    if not _is_count(num_batches):
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


# --------------------------------------------------------------------------- SNR, pruning


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
    if not (_is_real(fraction) and 0.0 <= fraction <= 1.0):
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
