"""Tests for :mod:`bandits.bayes`: the math against ``torch.distributions``, the
sampling modes, the runs dimension, KL weighting, SNR pruning and input checks.

Layers are tiny and most math runs in float64 so the references can be compared
tightly; everything here runs in a few seconds on a CPU.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import distributions as D

from bandits.bayes import (
    MODES,
    BayesLinear,
    GaussianPrior,
    RunsLinear,
    ScaleMixturePrior,
    closed_form_cost,
    closed_form_cost_grads,
    fused_prior_consts,
    gaussian_kl,
    kl_weights,
    make_mlp,
    prune_by_snr,
    runs_prior_consts,
    sigma_to_rho,
    snr,
)

F64 = torch.float64


def _gen(seed: int = 0, device: str = "cpu") -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def _layer(
    in_f: int = 4,
    out_f: int = 3,
    *,
    runs: int | None = None,
    prior=None,
    bias: bool = True,
    seed: int = 0,
    dtype: torch.dtype = F64,
) -> BayesLinear:
    """A small layer with a seeded generator and varied (not all equal) sigmas."""
    layer = BayesLinear(
        in_f, out_f, runs=runs, prior=prior, bias=bias, generator=_gen(seed), dtype=dtype
    )
    g = _gen(1000 + seed)
    with torch.no_grad():
        layer.weight_mu.copy_(torch.randn(layer.weight_mu.shape, generator=g, dtype=dtype))
        layer.weight_rho.copy_(torch.randn(layer.weight_rho.shape, generator=g, dtype=dtype) - 1)
        if bias:
            layer.bias_mu.copy_(torch.randn(layer.bias_mu.shape, generator=g, dtype=dtype))
            layer.bias_rho.copy_(torch.randn(layer.bias_rho.shape, generator=g, dtype=dtype) - 1)
    return layer


def _params(layer: BayesLinear) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(mu, sigma) of the weight and (when present) the bias."""
    out = [(layer.weight_mu, layer.weight_sigma)]
    if layer.bias_mu is not None:
        out.append((layer.bias_mu, layer.bias_sigma))
    return out


def _mixture(pi: float, sigma1: float, sigma2: float, dtype=F64) -> D.MixtureSameFamily:
    return D.MixtureSameFamily(
        D.Categorical(probs=torch.tensor([pi, 1.0 - pi], dtype=dtype)),
        D.Normal(torch.zeros(2, dtype=dtype), torch.tensor([sigma1, sigma2], dtype=dtype)),
    )


# ------------------------------------------------------------------------------ priors

W_GRID = torch.tensor([-1e3, -50.0, -3.0, -1e-4, 0.0, 1e-5, 0.3, 2.0, 50.0, 1e3], dtype=F64)


@pytest.mark.parametrize("sigma", [2.0, 1.0, 0.1, math.exp(-6), math.exp(-8)])
def test_gaussian_prior_log_prob_matches_normal(sigma):
    got = GaussianPrior(sigma).log_prob(W_GRID)
    want = D.Normal(0.0, torch.tensor(sigma, dtype=F64)).log_prob(W_GRID)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("pi", [0.0, 0.25, 0.5, 0.75, 1.0])
@pytest.mark.parametrize(
    "sigma1,sigma2", [(1.0, math.exp(-6)), (math.exp(-1), math.exp(-8)), (1.0, math.exp(-8))]
)
def test_scale_mixture_log_prob_matches_reference(pi, sigma1, sigma2):
    got = ScaleMixturePrior(pi, sigma1, sigma2).log_prob(W_GRID)
    # Reference 1: a logsumexp of torch Normal log-densities with log mixing weights.
    log_w = torch.tensor([pi, 1.0 - pi], dtype=F64).log()  # -inf where a weight is 0
    comps = torch.stack(
        [
            D.Normal(0.0, torch.tensor(sigma1, dtype=F64)).log_prob(W_GRID),
            D.Normal(0.0, torch.tensor(sigma2, dtype=F64)).log_prob(W_GRID),
        ]
    )
    want = torch.logsumexp(comps + log_w[:, None], dim=0)
    assert torch.isfinite(got).all(), got
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-9)
    if 0 < pi < 1:  # (torch's Categorical clamps a zero probability to eps, so not at the edges)
        # Reference 2: torch's own mixture distribution.
        torch.testing.assert_close(
            got, _mixture(pi, sigma1, sigma2).log_prob(W_GRID), rtol=1e-10, atol=1e-8
        )


def test_scale_mixture_stable_where_naive_formula_underflows():
    """Far from zero both densities underflow in float32; the log-space form stays finite."""
    prior = ScaleMixturePrior(0.5, 1.0, math.exp(-8))
    w = torch.tensor([-1e3, -20.0, 20.0, 1e3], dtype=torch.float32)
    naive = torch.log(
        0.5 * torch.exp(D.Normal(0.0, 1.0).log_prob(w))
        + 0.5 * torch.exp(D.Normal(0.0, math.exp(-8)).log_prob(w))
    )
    assert torch.isinf(naive).all()  # the test really exercises the unstable region
    got = prior.log_prob(w)
    assert torch.isfinite(got).all()
    want = math.log(0.5) + D.Normal(0.0, 1.0).log_prob(w.double())  # wide component dominates
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=1e-3)


@pytest.mark.parametrize("pi", [0.0, 1.0])
def test_scale_mixture_gradient_finite_at_pi_edges(pi):
    w = torch.tensor([-3.0, -1e-3, 0.0, 0.5, 40.0], dtype=F64, requires_grad=True)
    ScaleMixturePrior(pi, 1.0, math.exp(-8)).log_prob(w).sum().backward()
    assert torch.isfinite(w.grad).all()
    # With pi in {0, 1} the prior is one Gaussian: d/dw log N(w; 0, s^2) = -w / s^2.
    s = 1.0 if pi == 1.0 else math.exp(-8)
    torch.testing.assert_close(w.grad, -w.detach() / s**2)


def test_sigma_to_rho_inverts_softplus():
    for sigma in [1e-6, math.exp(-6), 0.01, 0.5, 1.0, 7.0]:
        rho = sigma_to_rho(sigma)
        assert F.softplus(torch.tensor(rho, dtype=F64)).item() == pytest.approx(sigma, rel=1e-9)


# ------------------------------------------------------------------------------ KL


def test_gaussian_kl_matches_torch_kl_divergence():
    g = _gen(3)
    mu = torch.randn(50, generator=g, dtype=F64) * 2
    sigma = torch.rand(50, generator=g, dtype=F64) * 3 + 1e-3
    for prior_sigma in [0.1, 1.0, 4.0]:
        want = D.kl_divergence(D.Normal(mu, sigma), D.Normal(torch.zeros_like(mu), prior_sigma))
        torch.testing.assert_close(gaussian_kl(mu, sigma, prior_sigma), want)


def test_closed_form_cost_is_the_kl_for_a_gaussian_prior():
    g = _gen(4)
    mu = torch.randn(40, generator=g, dtype=F64)
    sigma = torch.rand(40, generator=g, dtype=F64) + 1e-3
    for s in [0.3, 1.0]:
        consts = fused_prior_consts(GaussianPrior(s))
        torch.testing.assert_close(closed_form_cost(mu, sigma, consts), gaussian_kl(mu, sigma, s))


MIXTURES = [ScaleMixturePrior(0.5, 1.0, math.exp(-6)), ScaleMixturePrior(0.25, math.exp(-1),
                                                                         math.exp(-8))]


@pytest.mark.parametrize("prior", MIXTURES, ids=["paper", "other"])
def test_closed_form_mixture_cost_is_the_hierarchical_kl_and_bounds_the_kl(prior):
    """-log sum_k pi_k exp(-KL(q || N(0, s_k^2))), computed here from torch.distributions;
    at least the KL itself (a Monte Carlo estimate with 20,000 samples per weight), and
    equal to it where q sits inside one component."""
    g = _gen(5)
    mu = torch.cat([torch.randn(30, generator=g, dtype=F64) * 0.3, torch.zeros(2, dtype=F64)])
    sigma = torch.cat([torch.rand(30, generator=g, dtype=F64) * 0.05 + 1e-4,
                       torch.tensor([prior.sigma2, 0.2 * prior.sigma2], dtype=F64)])
    got = closed_form_cost(mu, sigma, fused_prior_consts(prior))
    parts = [math.log(w) - D.kl_divergence(D.Normal(mu, sigma), D.Normal(0.0, s))
             for w, s in ((prior.pi, prior.sigma1), (1 - prior.pi, prior.sigma2))]
    torch.testing.assert_close(got, -torch.logsumexp(torch.stack(parts), dim=0))
    eps = torch.randn(20_000, len(mu), generator=g, dtype=F64)
    w = mu + sigma * eps
    mc = (D.Normal(mu, sigma).log_prob(w) - prior.log_prob(w)).mean(0)
    se = (D.Normal(mu, sigma).log_prob(w) - prior.log_prob(w)).std(0) / math.sqrt(len(eps))
    assert (got >= mc - 4 * se - 1e-9).all(), (got - mc)
    # far out in the wide component, and at the centre of the narrow one: (nearly) equal
    inside = (mu.abs() > 0.2) & (sigma < 0.02)
    inside[-2:] = True
    assert inside.sum() >= 5
    assert ((got - mc)[inside] < 4 * se[inside] + 0.01).all(), (got - mc)[inside]
    # and strictly above it where q straddles both components (the bound's gap)
    assert (got - mc).max() > 0.05


def test_closed_form_cost_grads_equal_autograd_with_one_prior_per_run():
    g = _gen(6)
    priors = [MIXTURES[0], GaussianPrior(0.5), MIXTURES[1]]
    consts = runs_prior_consts(priors)
    mu = (torch.randn(3, 25, generator=g) * 0.05).requires_grad_(True)
    sigma = (torch.rand(3, 25, generator=g) * 0.02 + 1e-3).requires_grad_(True)
    scale = torch.tensor([[0.3], [1.0], [2.0]])
    (closed_form_cost(mu, sigma, consts) * scale).sum().backward()
    g_mu, g_sigma = closed_form_cost_grads(mu.detach(), sigma.detach(), consts, scale)
    torch.testing.assert_close(g_mu, mu.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(g_sigma, sigma.grad, rtol=1e-4, atol=1e-4)
    # each run's row is its own prior's cost
    for r, p in enumerate(priors):
        torch.testing.assert_close(
            closed_form_cost(mu[r], sigma[r], fused_prior_consts(p)),
            closed_form_cost(mu, sigma, consts)[r], rtol=1e-5, atol=1e-5)


def _reference_kl(layer: BayesLinear) -> torch.Tensor:
    """KL summed over all weights and biases (per run) with torch.distributions."""
    total = 0
    for mu, sigma in _params(layer):
        kl = D.kl_divergence(D.Normal(mu, sigma), D.Normal(torch.zeros_like(mu), layer.prior.sigma))
        total = total + (kl.sum() if layer.runs is None else kl.reshape(layer.runs, -1).sum(1))
    return total


@pytest.mark.parametrize("runs", [None, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_complexity_cost_kl_matches_kl_divergence(runs, bias):
    layer = _layer(5, 4, runs=runs, bias=bias, prior=GaussianPrior(0.7))
    got = layer.complexity_cost("kl")
    assert got.shape == (() if runs is None else (runs,))
    torch.testing.assert_close(got, _reference_kl(layer).detach())


def test_mc_complexity_cost_converges_to_closed_form_kl():
    layer = _layer(4, 3, prior=GaussianPrior(0.5), seed=7)
    x = torch.zeros(1, 4, dtype=F64)
    n = 2000
    costs = torch.empty(n, dtype=F64)
    with torch.no_grad():
        for i in range(n):
            layer(x)
            costs[i] = layer.complexity_cost("mc")
    kl = layer.complexity_cost("kl").item()
    se = costs.std().item() / math.sqrt(n)
    assert se > 0
    assert abs(costs.mean().item() - kl) < 4 * se, (costs.mean().item(), kl, se)


def _reference_mc(
    layer: BayesLinear, eps: tuple[torch.Tensor, torch.Tensor | None], log_prior, mask: bool = False
) -> torch.Tensor:
    """log q(w) - log p(w) at w = mu + sigma * eps, from torch.distributions.

    With ``mask`` the weights removed by pruning (``weight_mask == 0``) are left out.
    """
    total = 0
    for i, ((mu, sigma), e) in enumerate(zip(_params(layer), eps)):
        w = mu + sigma * e
        c = D.Normal(mu, sigma).log_prob(w) - log_prior(w)
        if mask and i == 0:
            c = c * layer.weight_mask
        total = total + (c.sum() if layer.runs is None else c.reshape(layer.runs, -1).sum(1))
    return total


def _normal(sigma: float, dtype: torch.dtype) -> D.Normal:
    """N(0, sigma^2) with parameters in ``dtype`` (a bare float would become float32)."""
    return D.Normal(torch.tensor(0.0, dtype=dtype), torch.tensor(sigma, dtype=dtype))


def _log_prior_mixture(pi: float, sigma1: float, sigma2: float):
    """Independent log-density of the scale mixture (valid for pi in {0, 1} too)."""

    def log_prob(w: torch.Tensor) -> torch.Tensor:
        comps = torch.stack(
            [_normal(sigma1, w.dtype).log_prob(w), _normal(sigma2, w.dtype).log_prob(w)]
        )
        log_w = torch.tensor([pi, 1.0 - pi], dtype=w.dtype).log()
        return torch.logsumexp(comps + log_w.reshape(2, *([1] * w.dim())), dim=0)

    return log_prob


PRIORS = {
    "gauss": (GaussianPrior(0.3), lambda w: _normal(0.3, w.dtype).log_prob(w)),
    "mixture": (
        ScaleMixturePrior(0.5, 1.0, math.exp(-6)),
        _log_prior_mixture(0.5, 1.0, math.exp(-6)),
    ),
    "mixture-e8": (
        ScaleMixturePrior(0.25, math.exp(-1), math.exp(-8)),
        _log_prior_mixture(0.25, math.exp(-1), math.exp(-8)),
    ),
    "mixture-swapped": (  # the narrow component first
        ScaleMixturePrior(0.75, math.exp(-7), 0.5),
        _log_prior_mixture(0.75, math.exp(-7), 0.5),
    ),
    "mixture-equal": (ScaleMixturePrior(0.3, 0.4, 0.4), _log_prior_mixture(0.3, 0.4, 0.4)),
    "mixture-pi0": (ScaleMixturePrior(0.0, 1.0, 0.1), _log_prior_mixture(0.0, 1.0, 0.1)),
    "mixture-pi1": (ScaleMixturePrior(1.0, 1.0, 0.1), _log_prior_mixture(1.0, 1.0, 0.1)),
}


@pytest.mark.parametrize("pruned", [False, True])
@pytest.mark.parametrize("runs", [None, 2])
@pytest.mark.parametrize("prior_name", list(PRIORS))
def test_mc_cost_and_gradient_equal_reparameterised_reference(prior_name, runs, pruned):
    """Value and gradient of the MC cost are those of f(mu + sigma * eps) by plain autograd."""
    prior, log_prior = PRIORS[prior_name]
    layer = _layer(4, 3, runs=runs, prior=prior)
    if pruned:
        prune_by_snr(layer, 0.5)
    layer(torch.zeros(1, 4, dtype=F64))
    eps = layer._last
    params = [layer.weight_mu, layer.weight_rho, layer.bias_mu, layer.bias_rho]
    got = layer.complexity_cost("mc")
    want = _reference_mc(layer, eps, log_prior, mask=True)
    torch.testing.assert_close(got, want)
    seed = torch.arange(1.0, got.numel() + 1, dtype=F64).reshape(got.shape)  # per-run weights
    g_got = torch.autograd.grad(got, params, grad_outputs=seed)
    g_want = torch.autograd.grad(want, params, grad_outputs=seed)
    for name, a, b in zip(["weight_mu", "weight_rho", "bias_mu", "bias_rho"], g_got, g_want):
        torch.testing.assert_close(a, b, msg=name)
    if pruned:  # a removed weight gets no gradient from the cost
        assert (g_got[0][layer.weight_mask == 0] == 0).all()


def test_mc_cost_float32_stable_far_out():
    """float32, sigma2 = e^-8, weights both far out and near zero: finite and accurate."""
    prior = ScaleMixturePrior(0.5, 1.0, math.exp(-8))
    layer = BayesLinear(4, 2, prior=prior, dtype=torch.float32)
    with torch.no_grad():
        layer.weight_mu.copy_(torch.tensor([[-1e3, -30.0, -1e-4, 0.0], [1e-6, 0.5, 30.0, 1e3]]))
        layer.weight_rho.fill_(sigma_to_rho(1e-4))
        layer.bias_mu.copy_(torch.tensor([1e-5, -8.0]))
    layer.mode = "held"
    layer.resample(torch.ones(2, 4), -torch.ones(2))
    layer(torch.zeros(1, 4))
    cost = layer.complexity_cost("mc")
    params = [layer.weight_mu, layer.weight_rho, layer.bias_mu, layer.bias_rho]
    grads = torch.autograd.grad(cost, params)
    assert torch.isfinite(cost)
    assert all(torch.isfinite(g).all() for g in grads)
    ref = BayesLinear(4, 2, prior=prior, dtype=F64)
    ref.load_state_dict({k: v.double() for k, v in layer.state_dict().items()})
    want = _reference_mc(
        ref,
        (torch.ones(2, 4, dtype=F64), -torch.ones(2, dtype=F64)),
        _log_prior_mixture(0.5, 1.0, math.exp(-8)),
    )
    assert cost.item() == pytest.approx(want.item(), rel=1e-5)


@pytest.mark.parametrize("runs", [None, 2])
@pytest.mark.parametrize("prior_kind", ["gauss", "mixture"])
def test_mc_cost_is_log_q_minus_log_p_at_the_sampled_weights(runs, prior_kind):
    if prior_kind == "gauss":
        prior = GaussianPrior(0.3)
        log_prior = D.Normal(0.0, torch.tensor(0.3, dtype=F64)).log_prob
    else:
        prior = ScaleMixturePrior(0.25, 1.0, math.exp(-6))
        log_prior = _mixture(0.25, 1.0, math.exp(-6)).log_prob
    layer = _layer(4, 3, runs=runs, prior=prior)
    x = torch.randn(6, 4, generator=_gen(5), dtype=F64)
    layer(x)  # sample mode: the layer records the eps it drew
    eps = layer._last
    torch.testing.assert_close(layer.complexity_cost("mc"), _reference_mc(layer, eps, log_prior))

    # Held mode with explicitly set noise gives the cost at exactly those weights.
    g = _gen(11)
    ew = torch.randn(layer.weight_mu.shape, generator=g, dtype=F64)
    eb = torch.randn(layer.bias_mu.shape, generator=g, dtype=F64)
    layer.mode = "held"
    layer.resample(ew, eb)
    layer(x)
    torch.testing.assert_close(
        layer.complexity_cost("mc"), _reference_mc(layer, (ew, eb), log_prior)
    )


def test_mc_cost_needs_a_sampled_forward():
    layer = _layer()
    with pytest.raises(RuntimeError, match="forward"):
        layer.complexity_cost("mc")
    layer.mode = "mean"
    layer(torch.zeros(1, 4, dtype=F64))
    with pytest.raises(RuntimeError, match="forward"):
        layer.complexity_cost("mc")


def test_complexity_cost_is_a_sum_not_a_mean():
    """A layer made of two layers' parameters costs the sum of the two costs (per kind)."""
    prior = GaussianPrior(0.8)
    a, b = _layer(4, 3, prior=prior, seed=1), _layer(4, 3, prior=prior, seed=2)
    both = _layer(4, 6, prior=prior, seed=3)
    with torch.no_grad():
        for name in ["weight_mu", "weight_rho", "bias_mu", "bias_rho"]:
            getattr(both, name).copy_(torch.cat([getattr(a, name), getattr(b, name)]))
    torch.testing.assert_close(
        both.complexity_cost("kl"), a.complexity_cost("kl") + b.complexity_cost("kl")
    )
    g = _gen(4)
    eps = [
        (torch.randn(3, 4, generator=g, dtype=F64), torch.randn(3, generator=g, dtype=F64))
        for _ in range(2)
    ]
    for layer, e in [(a, eps[0]), (b, eps[1])]:
        layer.mode = "held"
        layer.resample(*e)
        layer(torch.zeros(1, 4, dtype=F64))
    both.mode = "held"
    both.resample(torch.cat([eps[0][0], eps[1][0]]), torch.cat([eps[0][1], eps[1][1]]))
    both(torch.zeros(1, 4, dtype=F64))
    torch.testing.assert_close(
        both.complexity_cost("mc"), a.complexity_cost("mc") + b.complexity_cost("mc")
    )

    # Doubling a layer with identical parameters exactly doubles the closed-form cost.
    twin = _layer(4, 6, prior=prior)
    with torch.no_grad():
        for name in ["weight_mu", "weight_rho", "bias_mu", "bias_rho"]:
            getattr(twin, name).copy_(torch.cat([getattr(a, name)] * 2))
    torch.testing.assert_close(twin.complexity_cost("kl"), 2 * a.complexity_cost("kl"))


def test_mlp_complexity_cost_is_sum_over_layers():
    model = make_mlp(3, [5], 2, prior=GaussianPrior(1.0), generator=_gen(0), dtype=F64)
    model(torch.zeros(2, 3, dtype=F64))
    for kind in ["kl", "mc"]:
        want = sum(m.complexity_cost(kind) for m in model.bayes_layers())
        torch.testing.assert_close(model.complexity_cost(kind), want)


# ------------------------------------------------------------------------------ gradients


@pytest.mark.parametrize("source", ["data", "mc", "kl"])
def test_gradients_reach_every_posterior_parameter(source):
    layer = _layer(4, 3, prior=GaussianPrior(1.0))
    out = layer(torch.randn(5, 4, generator=_gen(2), dtype=F64))
    loss = {
        "data": lambda: out.pow(2).sum(),
        "mc": lambda: layer.complexity_cost("mc"),
        "kl": lambda: layer.complexity_cost("kl"),
    }[source]()
    loss.backward()
    for name in ["weight_mu", "weight_rho", "bias_mu", "bias_rho"]:
        grad = getattr(layer, name).grad
        assert grad is not None, name
        assert torch.isfinite(grad).all(), name
        assert (grad != 0).all(), name


# ------------------------------------------------------------------------------ sampling


@pytest.mark.parametrize("runs", [None, 3])
def test_one_weight_sample_shared_by_all_rows_of_a_forward_call(runs):
    layer = _layer(4, 3, runs=runs)
    row = torch.randn(4, generator=_gen(1), dtype=F64)
    out = layer(row.expand(8, 4).clone())  # (batch, out) or (runs, batch, out)
    assert torch.equal(out, out[..., :1, :].expand_as(out))
    # The output is exactly the linear map with the recorded weights.
    x = torch.randn(8, 4, generator=_gen(2), dtype=F64)
    out = layer(x)
    ew, eb = layer._last
    w = layer.weight_mu + layer.weight_sigma * ew
    b = layer.bias_mu + layer.bias_sigma * eb
    want = (
        F.linear(x, w, b)
        if runs is None
        else torch.stack([F.linear(x, w[r], b[r]) for r in range(runs)])
    )
    torch.testing.assert_close(out, want)


def test_mean_mode_is_deterministic_and_the_posterior_mean():
    layer = _layer()
    layer.mode = "mean"
    x = torch.randn(5, 4, generator=_gen(1), dtype=F64)
    a, b = layer(x), layer(x)
    assert torch.equal(a, b)
    torch.testing.assert_close(a, F.linear(x, layer.weight_mu, layer.bias_mu))


def test_sample_mode_differs_between_calls():
    layer = _layer()
    x = torch.randn(5, 4, generator=_gen(1), dtype=F64)
    assert layer.mode == "sample"
    assert not torch.allclose(layer(x), layer(x))


def test_held_mode_repeats_until_resample():
    layer = _layer()
    layer.mode = "held"
    x = torch.randn(5, 4, generator=_gen(1), dtype=F64)
    a, b = layer(x), layer(x)
    assert torch.equal(a, b)
    layer.resample()
    c = layer(x)
    assert not torch.allclose(a, c)
    assert torch.equal(c, layer(x))


def test_mlp_modes_and_sampling_context_restores():
    model = make_mlp(3, [4], 2, generator=_gen(0), dtype=F64)
    x = torch.randn(4, 3, generator=_gen(1), dtype=F64)
    assert model.mode == "sample"
    with model.sampling("mean"):
        assert model.mode == "mean"
        assert torch.equal(model(x), model(x))
    assert model.mode == "sample"
    model.set_mode("held")
    a = model(x)
    assert torch.equal(a, model(x))
    model.resample()
    assert not torch.allclose(a, model(x))
    assert model.set_mode("sample") is model


@pytest.mark.parametrize("runs", [None, 2])
def test_module_conversions_work(runs):
    """``.double()`` / ``.to()`` go through nn.Module's own machinery (nothing shadows it)."""
    x = torch.randn(3, 4, generator=_gen(0))
    for model in [
        BayesLinear(4, 3, runs=runs),
        RunsLinear(4, 3, runs=runs),
        make_mlp(4, [5], 2, runs=runs),
        make_mlp(4, [5], 2, runs=runs, bayesian=False),
    ]:
        assert model.to(torch.float64) is model
        assert all(t.dtype == F64 for t in [*model.parameters(), *model.buffers()])
        assert model(x.double()).dtype == F64
        model.float()
        assert model(x).dtype == torch.float32
        model.to("cpu")


def test_state_dict_round_trip_keeps_pruning():
    model = _pruning_model()
    prune_by_snr(model, 0.5)
    copy = make_mlp(5, [8], 3, dtype=F64)
    copy.load_state_dict(model.state_dict())
    model.set_mode("mean")
    copy.set_mode("mean")
    x = torch.randn(4, 5, generator=_gen(1), dtype=F64)
    assert torch.equal(model(x), copy(x))
    assert (_used_weights(copy, "mean") == 0).sum() == 32


# ------------------------------------------------------------------------------ runs dimension

R = 3


def _copy_run(single: torch.nn.Module, multi: torch.nn.Module, r: int) -> None:
    with torch.no_grad():
        for (name, p_single), p_multi in zip(single.named_parameters(), multi.parameters()):
            assert p_multi.shape[1:] == p_single.shape, name
            p_single.copy_(p_multi[r])


@pytest.mark.parametrize(
    "prior",
    [GaussianPrior(0.6), ScaleMixturePrior(0.5, 1.0, math.exp(-6))],
    ids=["gauss", "mixture"],
)
def test_runs_layer_equals_separate_layers(prior):
    multi = _layer(4, 3, runs=R, prior=prior)
    singles = [BayesLinear(4, 3, prior=prior, dtype=F64) for _ in range(R)]
    g = _gen(9)
    ew = torch.randn(R, 3, 4, generator=g, dtype=F64)
    eb = torch.randn(R, 3, generator=g, dtype=F64)
    multi.mode = "held"
    multi.resample(ew, eb)
    for r, s in enumerate(singles):
        _copy_run(s, multi, r)
        s.mode = "held"
        s.resample(ew[r], eb[r])
    x = torch.randn(R, 5, 4, generator=g, dtype=F64)
    out = multi(x)
    assert out.shape == (R, 5, 3)
    for r, s in enumerate(singles):
        torch.testing.assert_close(out[r], s(x[r]))
    shared = x[0]  # a 2-D input is shared by every run
    out = multi(shared)
    assert out.shape == (R, 5, 3)
    for r, s in enumerate(singles):
        torch.testing.assert_close(out[r], s(shared))
    kinds = ["mc", "kl"] if isinstance(prior, GaussianPrior) else ["mc"]
    for kind in kinds:
        want = torch.stack([s.complexity_cost(kind) for s in singles])
        torch.testing.assert_close(multi.complexity_cost(kind), want)


def test_runs_mlp_equals_separate_mlps():
    prior = GaussianPrior(1.0)
    multi = make_mlp(4, [6, 5], 2, runs=R, prior=prior, generator=_gen(0), dtype=F64)
    singles = [make_mlp(4, [6, 5], 2, prior=prior, dtype=F64) for _ in range(R)]
    multi.set_mode("held")
    g = _gen(1)
    eps = []
    for m in multi.bayes_layers():
        eps.append(
            (
                torch.randn(m.weight_mu.shape, generator=g, dtype=F64),
                torch.randn(m.bias_mu.shape, generator=g, dtype=F64),
            )
        )
        m.resample(*eps[-1])
    for r, s in enumerate(singles):
        _copy_run(s, multi, r)
        s.set_mode("held")
        for m, (ew, eb) in zip(s.bayes_layers(), eps):
            m.resample(ew[r], eb[r])
    x = torch.randn(R, 7, 4, generator=g, dtype=F64)
    out = multi(x)
    for r, s in enumerate(singles):
        torch.testing.assert_close(out[r], s(x[r]))
    for kind in ["mc", "kl"]:
        want = torch.stack([s.complexity_cost(kind) for s in singles])
        torch.testing.assert_close(multi.complexity_cost(kind), want)


def test_runs_linear_equals_separate_linears():
    multi = RunsLinear(4, 3, runs=R, dtype=F64)
    singles = [RunsLinear(4, 3, dtype=F64) for _ in range(R)]
    x = torch.randn(R, 5, 4, generator=_gen(0), dtype=F64)
    out = multi(x)
    for r, s in enumerate(singles):
        _copy_run(s, multi, r)
        torch.testing.assert_close(out[r], s(x[r]))
        torch.testing.assert_close(s(x[r]), F.linear(x[r], multi.weight[r], multi.bias[r]))
    det = make_mlp(4, [5], 2, bayesian=False, runs=R, dtype=F64)
    det_singles = [make_mlp(4, [5], 2, bayesian=False, dtype=F64) for _ in range(R)]
    out = det(x)
    for r, s in enumerate(det_singles):
        _copy_run(s, det, r)
        torch.testing.assert_close(out[r], s(x[r]))


def test_runs_get_independent_noise():
    layer = _layer(4, 3, runs=R)
    with torch.no_grad():  # identical parameters in every run
        for p in layer.parameters():
            p.copy_(p[:1].expand_as(p))
    x = torch.randn(5, 4, generator=_gen(1), dtype=F64)
    out = layer(x)  # (runs, batch, out)
    ew, eb = layer._last
    for r in range(1, R):
        assert not torch.allclose(ew[0], ew[r])
        assert not torch.allclose(eb[0], eb[r])
        assert not torch.allclose(out[0], out[r])
    layer.mode = "mean"
    out = layer(x)
    for r in range(1, R):
        torch.testing.assert_close(out[0], out[r])


def test_runs_pruning_equals_separate_pruning():
    multi = make_mlp(4, [5], 2, runs=R, generator=_gen(0), dtype=F64)
    with torch.no_grad():
        for m in multi.bayes_layers():
            m.weight_rho.copy_(torch.randn(m.weight_rho.shape, generator=_gen(3), dtype=F64))
    singles = [make_mlp(4, [5], 2, dtype=F64) for _ in range(R)]
    k = prune_by_snr(multi, 0.5)
    for r, s in enumerate(singles):
        _copy_run(s, multi, r)
        assert prune_by_snr(s, 0.5) == k
        for ms, mm in zip(s.bayes_layers(), multi.bayes_layers()):
            assert torch.equal(ms.weight_mask, mm.weight_mask[r])


# ------------------------------------------------------------------------------ generator


def test_generator_makes_sampling_reproducible():
    base = _layer()
    x = torch.randn(5, 4, generator=_gen(1), dtype=F64)

    def outputs(seed: int) -> list[torch.Tensor]:
        layer = _layer()
        layer.load_state_dict(base.state_dict())
        layer.generator = _gen(seed)
        torch.manual_seed(seed + 12345)  # the global generator must not matter
        outs = [layer(x) for _ in range(3)]
        layer.mode = "held"
        layer.resample()
        outs.append(layer(x))
        return outs

    a, b, c = outputs(0), outputs(0), outputs(1)
    for u, v in zip(a, b):
        assert torch.equal(u, v)
    for u, w in zip(a, c):
        assert not torch.allclose(u, w)


def test_make_mlp_generator_reproducible():
    def run(seed: int) -> torch.Tensor:
        torch.manual_seed(0)  # same initial parameters
        model = make_mlp(3, [4], 2, runs=2, generator=_gen(seed), dtype=F64)
        return model(torch.ones(2, 3, dtype=F64))

    assert torch.equal(run(5), run(5))
    assert not torch.allclose(run(5), run(6))


# ------------------------------------------------------------------------------ KL weights


@pytest.mark.parametrize("m", [1, 2, 10, 390, 2000])
def test_blundell_kl_weights_sum_to_one_and_decrease(m):
    w = kl_weights(m, "blundell")
    assert len(w) == m
    assert all(math.isfinite(v) and v >= 0 for v in w)
    assert math.fsum(w) == pytest.approx(1.0, rel=1e-12)
    assert all(a >= b for a, b in zip(w, w[1:]))
    assert all(a > b for a, b in zip(w[:60], w[1:60]))  # strictly, until 2^-i underflows
    assert w[0] == pytest.approx(2 ** (m - 1) / (2**m - 1) if m < 1000 else 0.5, rel=1e-12)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 10, 30])
def test_blundell_kl_weights_closed_form(m):
    want = [2 ** (m - i) / (2**m - 1) for i in range(1, m + 1)]
    assert kl_weights(m, "blundell") == pytest.approx(want, rel=1e-12)


def test_uniform_and_constant_kl_weights():
    assert kl_weights(7, "uniform") == pytest.approx([1 / 7] * 7)
    assert kl_weights(7) == pytest.approx([1 / 7] * 7)  # uniform is the default (eq. 8)
    assert math.fsum(kl_weights(390, "uniform")) == pytest.approx(1.0)
    assert kl_weights(4, "constant", value=0.25) == [0.25] * 4
    assert kl_weights(3, "constant") == [1.0] * 3


# ------------------------------------------------------------------------------ SNR, pruning


def test_snr_shapes_and_values():
    layer = _layer(4, 3)
    s = snr(layer)
    assert s.shape == (12,)
    torch.testing.assert_close(
        s, (layer.weight_mu.abs() / F.softplus(layer.weight_rho)).reshape(-1).detach()
    )
    model = make_mlp(4, [5, 6], 2, dtype=F64)
    assert snr(model).shape == (4 * 5 + 5 * 6 + 6 * 2,)
    model = make_mlp(4, [5], 2, runs=R, dtype=F64)
    s = snr(model)
    assert s.shape == (R, 4 * 5 + 5 * 2)
    first = model.bayes_layers()[0]
    torch.testing.assert_close(
        s[:, :20], (first.weight_mu.abs() / first.weight_sigma).reshape(R, -1).detach()
    )


def _pruning_model():
    model = make_mlp(5, [8], 3, generator=_gen(0), dtype=F64)  # N = 40 + 24 = 64 weights
    with torch.no_grad():
        for i, m in enumerate(model.bayes_layers()):
            m.weight_rho.copy_(torch.randn(m.weight_rho.shape, generator=_gen(10 + i), dtype=F64))
    return model


def _used_weights(model, mode: str) -> torch.Tensor:
    for m in model.bayes_layers():
        m.mode = mode
    return torch.cat([m.sample_weights()[0].reshape(-1) for m in model.bayes_layers()])


@pytest.mark.parametrize("fraction", [0.0, 0.5, 0.75, 0.95, 0.98, 1.0])
def test_prune_by_snr_removes_exactly_the_lowest_snr_weights(fraction):
    model = _pruning_model()
    s = snr(model).numpy()
    n = s.size
    k = prune_by_snr(model, fraction)
    assert k == round(fraction * n)
    mask = torch.cat([m.weight_mask.reshape(-1) for m in model.bayes_layers()]).numpy()
    assert int((mask == 0).sum()) == k
    assert set(np.flatnonzero(mask == 0)) == set(np.argsort(s, kind="stable")[:k])
    if 0 < k < n:
        assert s[mask == 0].max() <= s[mask == 1].min()
    for mode in ["sample", "mean", "held"]:
        w = _used_weights(model, mode)
        assert (w[torch.from_numpy(mask == 0)] == 0).all(), mode
        assert (w[torch.from_numpy(mask == 1)] != 0).all(), mode
    # Pruned weights are gone from the output too, not only from sample_weights.
    model.set_mode("mean")
    x = torch.randn(4, 5, generator=_gen(2), dtype=F64)
    h = F.relu(F.linear(x, *_masked(model.bayes_layers()[0])))
    torch.testing.assert_close(model(x), F.linear(h, *_masked(model.bayes_layers()[1])))


def _masked(m: BayesLinear) -> tuple[torch.Tensor, torch.Tensor]:
    return m.weight_mu * m.weight_mask, m.bias_mu


def test_prune_again_with_smaller_fraction_restores_weights():
    model = _pruning_model()
    n = snr(model).numel()
    prune_by_snr(model, 0.9)
    assert (_used_weights(model, "mean") == 0).sum() == round(0.9 * n)
    assert prune_by_snr(model, 0.25) == round(0.25 * n)
    assert (_used_weights(model, "mean") == 0).sum() == round(0.25 * n)
    prune_by_snr(model, 0.0)
    assert (_used_weights(model, "mean") != 0).all()


def test_fully_pruned_layer_costs_only_its_bias():
    layer = _layer(4, 3, prior=GaussianPrior(1.0))
    prune_by_snr(layer, 1.0)
    kl_bias = D.kl_divergence(D.Normal(layer.bias_mu, layer.bias_sigma), D.Normal(0.0, 1.0)).sum()
    torch.testing.assert_close(layer.complexity_cost("kl"), kl_bias.detach())


# ------------------------------------------------------------------------------ bad input


def _layer_with_mode(mode: str) -> BayesLinear:
    layer = BayesLinear(3, 2)
    layer.mode = mode
    return layer


BAD_INPUT = {
    "prior sigma zero": (lambda: GaussianPrior(0.0), r"sigma.*0\.0"),
    "prior sigma negative": (lambda: GaussianPrior(-1.5), r"sigma.*-1\.5"),
    "prior sigma nan": (lambda: GaussianPrior(float("nan")), r"sigma.*nan"),
    "mixture sigma1": (lambda: ScaleMixturePrior(0.5, -2.0, 0.1), r"sigma1.*-2\.0"),
    "mixture sigma2": (lambda: ScaleMixturePrior(0.5, 1.0, 0.0), r"sigma2.*0\.0"),
    "mixture pi high": (lambda: ScaleMixturePrior(1.5), r"pi.*1\.5"),
    "mixture pi low": (lambda: ScaleMixturePrior(-0.1), r"pi.*-0\.1"),
    "init_sigma": (lambda: BayesLinear(3, 2, init_sigma=0.0), r"init_sigma.*0\.0"),
    "sigma_to_rho": (lambda: sigma_to_rho(-1.0), r"sigma.*-1\.0"),
    "in_features": (lambda: BayesLinear(0, 2), r"in_features.*0"),
    "runs zero": (lambda: BayesLinear(3, 2, runs=0), r"runs.*0"),
    "input features": (lambda: BayesLinear(3, 2)(torch.zeros(5, 4)), r"4 features.*in_features=3"),
    "runs input features": (
        lambda: RunsLinear(3, 2, runs=2)(torch.zeros(2, 5, 7)),
        r"7 features.*in_features=3",
    ),
    "runs mismatch": (lambda: BayesLinear(3, 2, runs=2)(torch.zeros(4, 5, 3)), r"4 runs.*runs=2"),
    "runs input rank": (
        lambda: BayesLinear(3, 2, runs=2)(torch.zeros(2, 2, 5, 3)),
        r"runs=2.*\(2, 2, 5, 3\)",
    ),
    "layer mode": (lambda: _layer_with_mode("bogus")(torch.zeros(1, 3)), r"mode.*'bogus'"),
    "mlp mode": (lambda: make_mlp(3, [2], 1).set_mode("bogus"), r"mode.*'bogus'"),
    "mlp sampling": (lambda: make_mlp(3, [2], 1).sampling("bogus").__enter__(), r"mode.*'bogus'"),
    "cost kind": (lambda: BayesLinear(3, 2).complexity_cost("bogus"), r"kind.*'bogus'"),
    "kl needs a mixture": (
        lambda: BayesLinear(3, 2, prior=ScaleMixturePrior(1.0)).complexity_cost("kl"),
        r"no closed-form cost.*pi=1.*0 < pi < 1",
    ),
    "kl scheme": (lambda: kl_weights(10, "bogus"), r"scheme.*'bogus'"),
    "num_batches": (lambda: kl_weights(0, "uniform"), r"num_batches.*0"),
    "fraction high": (lambda: prune_by_snr(make_mlp(3, [2], 1), 1.5), r"fraction.*1\.5"),
    "fraction low": (lambda: prune_by_snr(make_mlp(3, [2], 1), -0.25), r"fraction.*-0\.25"),
    "eps shape": (
        lambda: BayesLinear(3, 2).resample(torch.zeros(3, 2), torch.zeros(2)),
        r"eps_w.*\(2, 3\).*\(3, 2\)",
    ),
    "activation": (lambda: make_mlp(3, [2], 1, activation="swish"), r"activation.*'swish'"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT), ids=list(BAD_INPUT))
def test_bad_input_raises_value_error_naming_parameter_and_value(case):
    fn, pattern = BAD_INPUT[case]
    with pytest.raises(ValueError, match=pattern):
        fn()


def test_numpy_scalars_are_accepted():
    """Hyper-parameters often come out of numpy (sweeps, configs): np.float32 / np.int64 work."""
    assert GaussianPrior(np.float32(0.5)).sigma == 0.5
    prior = ScaleMixturePrior(np.float32(0.25), np.float64(1.0), np.float32(0.125))
    assert (prior.pi, prior.sigma1, prior.sigma2) == (0.25, 1.0, 0.125)
    layer = BayesLinear(np.int64(3), np.int32(2), runs=np.int64(2), init_sigma=np.float32(0.5))
    assert layer.weight_mu.shape == (2, 2, 3)
    assert isinstance(layer.runs, int) and isinstance(layer.in_features, int)
    torch.testing.assert_close(layer.weight_sigma, torch.full((2, 2, 3), 0.5))
    assert layer(torch.zeros(2, 4, 3)).shape == (2, 4, 2)
    assert kl_weights(np.int64(4)) == [0.25] * 4
    assert prune_by_snr(make_mlp(3, [2], 1), np.float32(0.5)) == 4


@pytest.mark.parametrize(
    "fn,pattern",
    [
        (lambda: BayesLinear(3, 2, runs=True), r"runs.*True"),
        (lambda: BayesLinear(True, 2), r"in_features.*True"),
        (lambda: kl_weights(True), r"num_batches.*True"),
        (lambda: kl_weights(4.0), r"num_batches.*4\.0"),
        (lambda: BayesLinear(3.0, 2), r"in_features.*3\.0"),
        (lambda: GaussianPrior("1.0"), r"sigma.*'1\.0'"),
    ],
)
def test_non_numbers_and_bools_are_rejected(fn, pattern):
    with pytest.raises(ValueError, match=pattern):
        fn()


def test_bad_mode_on_the_mlp_leaves_modes_unchanged():
    model = make_mlp(3, [2], 1)
    with pytest.raises(ValueError, match=re.escape(str(MODES))):
        model.set_mode("bogus")
    assert model.mode == "sample"


# ------------------------------------------------------------------------------ devices


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_device_agnostic(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA is not available")
    model = make_mlp(
        4, [8], 2, runs=2, prior=GaussianPrior(1.0), generator=_gen(0, device), device=device
    )
    x = torch.randn(2, 5, 4, device=device)
    out = model(x)
    assert out.device.type == device and out.shape == (2, 5, 2)
    for kind in ["mc", "kl"]:
        cost = model.complexity_cost(kind)
        assert cost.device.type == device and cost.shape == (2,)
    (out.pow(2).sum() + model.complexity_cost("mc").sum()).backward()
    assert all(p.grad is not None and p.grad.device.type == device for p in model.parameters())
    model.set_mode("held")
    model.resample()
    assert torch.equal(model(x), model(x))
    k = prune_by_snr(model, 0.5)
    assert k == round(0.5 * (4 * 8 + 8 * 2))
    assert snr(model).device.type == device
    with model.sampling("mean"):
        assert torch.equal(model(x), model(x))


def test_data_loss_and_complexity_cost_can_be_differentiated_separately():
    layer = BayesLinear(4, 3, prior=ScaleMixturePrior())
    x = torch.randn(5, 4)
    layer(x).pow(2).sum().backward()
    layer.complexity_cost("mc").backward()  # must not reuse the freed forward graph
    assert layer.weight_rho.grad is not None and torch.isfinite(layer.weight_rho.grad).all()


def test_mc_cost_uses_current_parameters_at_the_recorded_noise():
    layer = BayesLinear(4, 3, prior=GaussianPrior(1.0))
    layer(torch.randn(2, 4))
    before = layer.complexity_cost("mc").detach()
    with torch.no_grad():
        layer.weight_rho.add_(1.0)
    after = layer.complexity_cost("mc").detach()
    eps_w, eps_b = layer._last
    sw = torch.nn.functional.softplus(layer.weight_rho.detach())
    w = layer.weight_mu.detach() + sw * eps_w
    normal = D.Normal
    expected_w = (normal(layer.weight_mu.detach(), sw).log_prob(w) - normal(0, 1).log_prob(w)).sum()
    assert not torch.isclose(before, after)
    sb = torch.nn.functional.softplus(layer.bias_rho.detach())
    b = layer.bias_mu.detach() + sb * eps_b
    expected_b = (normal(layer.bias_mu.detach(), sb).log_prob(b) - normal(0, 1).log_prob(b)).sum()
    torch.testing.assert_close(after, expected_w + expected_b, rtol=1e-4, atol=1e-3)


# ---- bandits.bayes.sqrt: the same bytes on every processor


def test_sqrt_is_correctly_rounded_and_differentiates_as_torchs():
    from bandits.bayes import sqrt

    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 0x7F800000, (1 << 20,), generator=g, dtype=torch.int32).view(
        torch.float32)  # every positive finite float32 is a candidate
    exact = np.sqrt(x.numpy().astype(np.float64)).astype(np.float32)  # rounded once
    assert np.array_equal(sqrt(x).numpy(), exact)
    d = torch.rand(1000, dtype=torch.float64, generator=g) * 1e6
    assert np.array_equal(sqrt(d).numpy(), np.sqrt(d.numpy()))
    w = (torch.rand(7, 5, generator=g) + 0.1).requires_grad_()
    sqrt(w).sum().backward()
    assert torch.equal(w.grad, 0.5 / sqrt(w.detach()))
    assert torch.isnan(sqrt(torch.tensor([-1.0]))).all()
    assert sqrt(torch.ones(3, dtype=torch.bfloat16)).dtype == torch.bfloat16  # torch's
    assert sqrt(torch.tensor(6.25)).item() == 2.5  # a 0-d tensor
    assert torch.equal(sqrt(torch._neg_view(-x[:5])), sqrt(x[:5]))  # a negative-bit view
    from bandits.bayes import power

    assert torch.equal(power(x[:100], 0.5), sqrt(x[:100]))
    assert torch.equal(power(x[:100], 2.0), x[:100].pow(2.0))


def test_no_square_root_on_a_runs_path_is_torchs_own():
    """torch's CPU sqrt is MKL's, rounded by the processor (bandits.bayes.exact): the
    agents, environments, the library and the simulator take bandits.bayes.sqrt."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = [p for folder in ("agents", "envs", "bandits/bayes", "bandits/core",
                              "bandits/simulator")
             for p in (root / folder).rglob("*.py") if p.name != "exact.py"]
    files.append(root / "bandits" / "tools" / "regression.py")
    own = re.compile(r"torch\.sqrt\(|\.sqrt_?\(\)|\*\* *0?\.5\b|pow_?\((\w+, *)?0?\.5\)")
    found = [f"{p.relative_to(root)}:{i}" for p in files
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if own.search(line.split("#")[0])]
    assert found == []
