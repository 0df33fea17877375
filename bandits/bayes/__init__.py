"""Bayes by Backprop (Blundell, Cornebise, Kavukcuoglu, Wierstra 2015).

The modules, each importing only those above it:

* :mod:`bandits.bayes.exact`: :func:`sqrt`, a square root that every processor rounds
  the same way (the processor's own instruction rather than MKL's vector function), and
  :func:`power`, which takes it for an exponent of 0.5;
* :mod:`bandits.bayes.priors`: the priors, :class:`GaussianPrior` and the scale mixture
  :class:`ScaleMixturePrior` (the paper's eq. 7), and their constants for the fused
  complexity cost (:class:`PriorConsts`, one prior per run: :func:`runs_prior_consts`);
* :mod:`bandits.bayes.cost`: the complexity cost ``log q(w) - log p(w)``, summed over
  every weight and bias (Monte Carlo at the sampled weights, as in the paper, or the
  closed-form KL for a Gaussian prior), its gradients, the one chain rule from
  gradients for ``(mu, sigma)`` to gradients for ``(mu, rho)`` (:func:`mu_rho_grads`),
  and the KL weights across the minibatches of an epoch (section 3.4);
* :mod:`bandits.bayes.layers`: :class:`BayesLinear` (a diagonal Gaussian posterior,
  ``sigma = softplus(rho)``, sampled as ``w = mu + sigma * eps``, section 3.2), its
  deterministic twin :class:`RunsLinear`, and :class:`MLP` / :func:`make_mlp`; every
  layer can hold ``R`` independent models (the runs dimension);
* :mod:`bandits.bayes.conv`: :class:`BayesConv2d` (the same posterior over kernels)
  and a Bayesian LeNet-5 (:func:`make_lenet5`); every Bayesian layer draws its noise
  by one of :data:`ESTIMATORS`: one weight sample per batch (``reparam``), the local
  reparameterisation trick (``lrt``) or Flipout (``flipout``);
* :mod:`bandits.bayes.flat`: :class:`FlatMLP`, ``R`` MLPs with their parameters as
  ``(R, P)`` rows, trained with a hand-written backward pass and whole-tensor updates;
* :mod:`bandits.bayes.prune`: the signal-to-noise ratio ``|mu| / sigma`` and pruning by
  it (section 5.1).

Every name is importable from :mod:`bandits.bayes` itself.
"""

from bandits.bayes.conv import BayesConv2d, LeNet5, RunsConv2d, make_lenet5
from bandits.bayes.cost import (
    KL_SCHEMES,
    closed_form_cost,
    closed_form_cost_grads,
    fused_mc_cost,
    gaussian_kl,
    gaussian_kl_grads,
    kl_weights,
    log_p_minus_log_q,
    mc_cost_grads,
    mc_cost_terms,
    mu_rho_grads,
    posterior_grads,
)
from bandits.bayes.exact import power, sqrt
from bandits.bayes.flat import FlatMLP, sample_weights
from bandits.bayes.layers import (
    ESTIMATORS,
    MODES,
    BayesLinear,
    RunsLinear,
    batched_linear,
    sigma_to_rho,
)
from bandits.bayes.mlp import MLP, make_mlp
from bandits.bayes.priors import (
    GaussianPrior,
    MixtureConsts,
    Prior,
    PriorConsts,
    ScaleMixturePrior,
    fused_prior_consts,
    map_consts,
    runs_prior_consts,
)
from bandits.bayes.prune import prune_by_snr, snr

__all__ = [
    "ESTIMATORS",
    "KL_SCHEMES",
    "MLP",
    "MODES",
    "BayesConv2d",
    "BayesLinear",
    "FlatMLP",
    "GaussianPrior",
    "LeNet5",
    "MixtureConsts",
    "Prior",
    "PriorConsts",
    "RunsConv2d",
    "RunsLinear",
    "ScaleMixturePrior",
    "batched_linear",
    "closed_form_cost",
    "closed_form_cost_grads",
    "fused_mc_cost",
    "fused_prior_consts",
    "gaussian_kl",
    "gaussian_kl_grads",
    "kl_weights",
    "log_p_minus_log_q",
    "make_lenet5",
    "make_mlp",
    "map_consts",
    "mc_cost_grads",
    "mc_cost_terms",
    "mu_rho_grads",
    "posterior_grads",
    "power",
    "prune_by_snr",
    "runs_prior_consts",
    "sample_weights",
    "sigma_to_rho",
    "snr",
    "sqrt",
]
