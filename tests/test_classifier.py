"""R classifiers in one batched model: each run trains as it would alone, with its own prior."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from bandits.bayes import (
    GaussianPrior,
    ScaleMixturePrior,
    fused_prior_consts,
    kl_weights,
    log_p_minus_log_q,
    mc_cost_grads,
    runs_prior_consts,
)
from bandits.mnist.models.classifiers import STREAMS, RunSpec, seed_streams
from bandits.mnist.models.classifiers import BatchedClassifiers as Classifiers

MIXTURE = ScaleMixturePrior(0.5, 1.0, math.exp(-6))
OTHER_MIXTURE = ScaleMixturePrior(0.25, math.exp(-1), math.exp(-7))
GAUSSIAN = GaussianPrior(0.5)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One torch thread, as every batch of a grid command trains: with several, a batched
    model and a lone one split their matmuls differently, and the comparisons below
    would depend on the machine's cores and on which test set the thread count before."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _data(n: int = 300, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    centres = torch.rand(10, 784, generator=g) * 2
    y = torch.randint(0, 10, (n,), generator=g)
    return (centres[y] + 0.3 * torch.randn(n, 784, generator=g)).clamp(0, 2.03), y


SPECS = [RunSpec(0, MIXTURE, "uniform"), RunSpec(1, OTHER_MIXTURE, "blundell"),
         RunSpec(2, GAUSSIAN, "uniform")]


@pytest.mark.parametrize("kind", ["bbb", "sgd", "dropout"])
def test_batched_runs_equal_separate_runs(kind):
    x, y = _data()
    specs = SPECS if kind == "bbb" else [RunSpec(s.seed) for s in SPECS]
    schemes = [s.kl_weighting for s in specs]
    together = Classifiers(kind, [32, 16], specs, init_sigma=0.02, lr=3e-3)
    stats = [together.train_epoch(x, y, 50, schemes) for _ in range(2)][-1]
    for r, spec in enumerate(specs):
        alone = Classifiers(kind, [32, 16], [spec], init_sigma=0.02, lr=3e-3)
        one = [alone.train_epoch(x, y, 50, [spec.kl_weighting]) for _ in range(2)][-1]
        for key, value in alone.params().items():
            torch.testing.assert_close(together.params()[key][r], value[0], rtol=1e-4, atol=1e-5)
        for key in ("nll", "kl", "train_loss"):
            torch.testing.assert_close(stats[key][r], one[key][0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(together.errors(x, y)[r], alone.errors(x, y)[0])
    # and the runs differ from each other (own seeds, own priors)
    mu = together.params()["mu"]
    assert not torch.allclose(mu[0], mu[1]) and not torch.allclose(mu[1], mu[2])


@pytest.mark.parametrize("complexity,optimizer", [("mc", "adam"), ("kl", "adam"),
                                                  ("mc", "sgd"), ("kl", "sgd")])
def test_step_gradients_equal_autograd_through_the_library(complexity, optimizer):
    """The hand-written step's gradients are autograd's through bandits.bayes.MLP, per run,
    for each run's prior and KL weight: eq. 8 divided by the batch size (Adam), or eq. 8
    itself (SGD, which steps on the summed loss)."""
    torch.manual_seed(0)
    x, y = torch.rand(2, 20, 784) * 2, torch.randint(0, 10, (2, 20))
    specs = [RunSpec(0, OTHER_MIXTURE), RunSpec(1, GAUSSIAN)]
    clf = Classifiers("bbb", [16, 8], specs, complexity=complexity, init_sigma=0.05,
                      optimizer=optimizer)
    div = 20 if optimizer == "adam" else 1
    models = [clf.to_mlp(r) for r in range(2)]
    eps = torch.stack([torch.empty(clf.net.n_params).normal_(generator=torch.Generator(
        ).manual_seed(seed_streams(s.seed)["noise"])) for s in specs])  # the step's noise
    grads = {}
    clf.optimizer.step = lambda: grads.update(  # keep the gradients, skip the update
        {i: p.grad.clone() for i, p in enumerate(clf.net.parameters())})
    kl_weight = torch.tensor([[0.3], [0.7]])
    nll, kl = clf.step(x, y, kl_weight, want_kl=True)
    for r, m in enumerate(models):
        for layer, (ew, eb) in zip(m.bayes_layers(), clf.net.split(eps[r:r + 1]), strict=True):
            layer.resample(ew[0], eb[0])
        m.set_mode("held")
        data = F.cross_entropy(m(x[r]), y[r], reduction="sum")
        cost = m.complexity_cost(complexity)
        ((kl_weight[r, 0] * cost + data) / div).backward()
        torch.testing.assert_close(nll[r], data.detach())
        torch.testing.assert_close(kl[r], cost.detach(), rtol=1e-5, atol=0.05)
        for i, kind in enumerate(("mu", "rho")):
            ref = torch.cat([torch.cat([getattr(ly, f"weight_{kind}").grad.reshape(-1),
                                        getattr(ly, f"bias_{kind}").grad]) for ly in m.layers])
            torch.testing.assert_close(grads[i][r], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind,optimizer", [("sgd", "adam"), ("dropout", "adam"),
                                            ("dropout", "sgd")])
def test_point_estimate_step_gradients_equal_autograd(kind, optimizer):
    """The plain and the dropout network's hand-written gradients are autograd's of the
    mean (Adam) or summed (SGD) cross-entropy through the same layers, with the step's
    own dropout masks."""
    torch.manual_seed(0)
    x, y = torch.rand(2, 20, 784) * 2, torch.randint(0, 10, (2, 20))
    clf = Classifiers(kind, [16, 8], [RunSpec(0), RunSpec(1)], dropout=0.5,
                      optimizer=optimizer)
    before = [g.get_state() for g in clf.dropout_gens]
    grads = {}
    clf.optimizer.step = lambda: grads.update(  # keep the gradients, skip the update
        {i: p.grad.clone() for i, p in enumerate(clf.net.parameters())})
    clf.step(x, y, None)
    for g, state in zip(clf.dropout_gens, before, strict=True):
        g.set_state(state)
    masks = clf._dropout_masks(20)  # the masks the step drew
    assert (masks is None) == (kind == "sgd")
    w = clf.net.mu.detach().clone().requires_grad_(True)
    logits = clf.net.apply_layers(x, clf.net.split(w), None, masks)
    loss = F.cross_entropy(logits.reshape(-1, 10), y.reshape(-1), reduction="sum")
    (loss / (20 if optimizer == "adam" else 1)).backward()
    torch.testing.assert_close(grads[0], w.grad, rtol=1e-4, atol=1e-5)


def test_sgd_is_plain_gradient_descent():
    """--optimizer sgd: every parameter moves by -lr x its gradient (no momentum)."""
    x, y = _data(40)
    clf = Classifiers("bbb", [8], [RunSpec(0, GAUSSIAN, "uniform")], optimizer="sgd", lr=1e-3)
    before = [p.detach().clone() for p in clf.net.parameters()]
    clf.step(x[None, :20], y[None, :20], torch.tensor([[0.5]]))
    for p, b in zip(clf.net.parameters(), before, strict=True):
        torch.testing.assert_close(p.detach(), b - 1e-3 * p.grad)


def test_seed_streams_are_disjoint_between_seeds():
    """Every generator of a model comes from its own SeedSequence child: no stream of one
    seed is a stream of another (seed 0's weight noise is not seed 1's initialisation)."""
    values = [v for seed in range(20) for v in seed_streams(seed).values()]
    assert len(set(values)) == len(values) == 20 * len(STREAMS)
    assert seed_streams(3) == seed_streams(3)


def test_each_run_gets_its_own_prior():
    clf = Classifiers("bbb", [8], SPECS)
    inv_sw2, const, mix = clf.net.prior_consts
    assert inv_sw2.shape == (3, 1)
    for r, spec in enumerate(SPECS[:2]):  # the mixtures: their own constants
        own = fused_prior_consts(spec.prior)
        assert inv_sw2[r].item() == pytest.approx(own[0])
        assert const[r].item() == pytest.approx(own[1])
        assert [v[r].item() for v in mix] == pytest.approx(list(own[2]))
    # changing one run's prior changes that run's training only
    x, y = _data(100)
    a = Classifiers("bbb", [8], SPECS)
    b = Classifiers("bbb", [8], [SPECS[0], RunSpec(1, GaussianPrior(2.0), "blundell"), SPECS[2]])
    for c in (a, b):
        c.train_epoch(x, y, 50, [s.kl_weighting for s in SPECS])
    pa, pb = a.params()["mu"], b.params()["mu"]
    torch.testing.assert_close(pa[[0, 2]], pb[[0, 2]], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(pa[1], pb[1])


def test_gaussian_written_as_a_mixture_has_the_same_cost_and_gradients():
    torch.manual_seed(1)
    mu, eps = torch.randn(2, 50) * 0.1, torch.randn(2, 50)
    sigma = torch.rand(2, 50) * 0.05 + 0.01
    w = mu + sigma * eps
    mixed = runs_prior_consts([GAUSSIAN, MIXTURE])  # run 0 Gaussian, as a mixture
    alone = fused_prior_consts(GAUSSIAN)
    v_mixed, _ = log_p_minus_log_q(w, sigma, eps, mixed)
    v_alone, _ = log_p_minus_log_q(w[:1], sigma[:1], eps[:1], alone)
    torch.testing.assert_close(v_mixed[:1], v_alone, rtol=1e-5, atol=1e-5)
    g_mixed = mc_cost_grads(w, sigma, eps, mixed, 0.3)
    g_alone = mc_cost_grads(w[:1], sigma[:1], eps[:1], alone, 0.3)
    for a, b in zip(g_mixed, g_alone, strict=True):
        torch.testing.assert_close(a[:1], b, rtol=1e-5, atol=1e-5)
    # one prior for every run gives plain numbers (the bandit agents' fast path)
    assert runs_prior_consts([MIXTURE, MIXTURE]) == fused_prior_consts(MIXTURE)
    with pytest.raises(ValueError, match="0 < pi < 1"):
        runs_prior_consts([ScaleMixturePrior(1.0, 1.0, 0.1)])


def test_same_seed_same_result_and_bad_input():
    x, y = _data(100)
    a, b = (Classifiers("dropout", [16], [RunSpec(5)]) for _ in range(2))
    for c in (a, b):
        c.train_epoch(x, y, 25, ["uniform"])
    assert torch.equal(a.params()["mu"], b.params()["mu"])
    with pytest.raises(ValueError, match="kind"):
        Classifiers("mlp", [8], [RunSpec(0)])
    with pytest.raises(ValueError, match="complexity"):
        Classifiers("bbb", [8], [RunSpec(0, MIXTURE)], complexity="exact")


@pytest.mark.slow
def test_compiled_step_equals_the_eager_step():
    # torch.compile fuses BBB's per-weight work; it must give the eager numbers up to rounding
    x, y = _data(100)
    runs = [Classifiers("bbb", [16], SPECS, compile=c) for c in (False, True)]
    stats = [c.train_epoch(x, y, 25, [s.kl_weighting for s in SPECS]) for c in runs]
    torch.testing.assert_close(stats[0]["nll"], stats[1]["nll"], rtol=1e-5, atol=1e-5)
    for key in ("mu", "rho"):
        torch.testing.assert_close(runs[0].params()[key], runs[1].params()[key],
                                   rtol=1e-4, atol=1e-5)


def test_kl_factor_multiplies_every_minibatchs_kl_weight():
    x, y = _data(100)
    clf = Classifiers("bbb", [8], SPECS[:2])
    seen = []
    clf.step = lambda xb, yb, w, want_kl=False: (seen.append(w.clone()), (
        torch.zeros(2), None))[1]
    clf.train_epoch(x, y, 25, ["uniform", "blundell"], kl_factor=0.25)
    got = torch.cat(seen, dim=1)  # (R, M)
    want = 0.25 * torch.tensor([kl_weights(4, "uniform"), kl_weights(4, "blundell")])
    torch.testing.assert_close(got, want)
    # one factor per run (a --kl-factor grid trains each value in its own runs)
    seen.clear()
    clf.train_epoch(x, y, 25, ["uniform", "uniform"], kl_factor=[1.0, 0.1])
    got = torch.cat(seen, dim=1)
    want = torch.tensor([kl_weights(4, "uniform"), [0.1 * w for w in kl_weights(4, "uniform")]])
    torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match="2 runs need as many KL schemes and factors"):
        clf.train_epoch(x, y, 25, ["uniform", "uniform"], kl_factor=[1.0])
