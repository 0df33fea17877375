"""Bayesian convolutions, the three estimators' moments, and the Bayesian LeNet-5."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from bandits.bayes import GaussianPrior, ScaleMixturePrior, mc_cost_terms
from bandits.bayes.conv import BayesConv2d, make_lenet5
from bandits.bayes.layers import ESTIMATORS, BayesLinear


def _layers(estimator: str, runs: int | None = None):
    g = torch.Generator().manual_seed(0)
    lin = BayesLinear(6, 3, runs=runs, init_sigma=0.3, estimator=estimator, generator=g)
    conv = BayesConv2d(2, 3, 3, runs=runs, init_sigma=0.3, estimator=estimator, generator=g)
    return lin, conv


def test_held_conv_with_runs_is_each_runs_own_convolution():
    conv = BayesConv2d(2, 4, 3, runs=3, padding=1, init_sigma=0.1)
    conv.mode = "held"
    x = torch.randn(3, 5, 2, 7, 7)
    y = conv(x)
    w, b = conv.sample_weights()
    for r in range(3):
        torch.testing.assert_close(y[r], F.conv2d(x[r], w[r], b[r], padding=1))
    shared = conv(x[0])  # one batch for every run
    torch.testing.assert_close(shared[1], F.conv2d(x[0], w[1], b[1], padding=1))


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_pre_activations_have_the_posteriors_mean_and_variance(estimator, kind):
    """Every estimator's pre-activation of one example is N(x mu + b_mu, x^2 sigma^2 +
    sigma_b^2): checked over 4000 draws."""
    torch.manual_seed(1)
    lin, conv = _layers(estimator)
    layer = lin if kind == "linear" else conv
    x = torch.randn(4, 6) if kind == "linear" else torch.randn(4, 2, 5, 5)
    with torch.no_grad():
        draws = torch.stack([layer(x) for _ in range(4000)])
        mean = layer._linear(x, layer.weight_mu, layer.bias_mu)
        var = layer._linear(x * x, layer.weight_sigma**2, layer.bias_sigma**2)
    torch.testing.assert_close(draws.mean(0), mean, atol=4 * float(var.max().sqrt()) / 63,
                               rtol=0)
    torch.testing.assert_close(draws.var(0), var, rtol=0.12, atol=1e-3)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_per_example_estimators_decorrelate_the_examples(estimator):
    """Two copies of one input in a batch: one weight sample gives both the same output
    (reparam); the local reparameterisation and Flipout give them (nearly) independent
    noise."""
    torch.manual_seed(2)
    lin, _ = _layers(estimator)
    x = torch.randn(1, 6).expand(2, 6)
    with torch.no_grad():
        mean = lin._linear(x, lin.weight_mu, lin.bias_mu)
        d = torch.stack([lin(x) - mean for _ in range(3000)])  # (S, 2, 3)
    corr = torch.corrcoef(torch.stack([d[:, 0].flatten(), d[:, 1].flatten()]))[0, 1]
    if estimator == "reparam":
        assert corr > 0.99
    else:
        assert abs(corr) < 0.1


@pytest.mark.parametrize("prior", [GaussianPrior(0.5), ScaleMixturePrior()])
@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_conv_complexity_cost_is_the_estimate_at_its_weight_sample(prior, estimator):
    conv = BayesConv2d(2, 3, 3, runs=2, prior=prior, init_sigma=0.05, estimator=estimator)
    conv(torch.randn(2, 4, 2, 6, 6))
    eps_w, eps_b = conv._last
    want = (mc_cost_terms(conv.weight_mu, conv.weight_sigma, eps_w, prior).reshape(2, -1).sum(1)
            + mc_cost_terms(conv.bias_mu, conv.bias_sigma, eps_b, prior).reshape(2, -1).sum(1))
    torch.testing.assert_close(conv.complexity_cost(), want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_lenet5_with_runs_equals_separate_models_at_the_mean(estimator):
    torch.manual_seed(3)
    together = make_lenet5(runs=2, estimator=estimator)
    x = torch.rand(2, 3, 1, 28, 28)
    with together.sampling("mean"):
        y = together(x)
    assert y.shape == (2, 3, 10)
    for r in range(2):
        alone = make_lenet5(estimator=estimator)
        with torch.no_grad():
            for a, b in zip(alone.parameters(), together.parameters(), strict=True):
                a.copy_(b[r])
        with alone.sampling("mean"):
            torch.testing.assert_close(alone(x[r]), y[r], rtol=1e-5, atol=1e-5)
    loss = together(x).logsumexp(-1).sum() + together.complexity_cost().sum()
    loss.backward()  # every parameter gets a gradient through every estimator
    assert all(p.grad is not None and torch.isfinite(p.grad).all()
               for p in together.parameters())


def test_bad_estimator_and_input_are_refused():
    with pytest.raises(ValueError, match="estimator must be one of"):
        BayesLinear(2, 2, estimator="vi")
    with pytest.raises(ValueError, match="C=2"):
        BayesConv2d(2, 3, 3)(torch.randn(4, 3, 5, 5))
