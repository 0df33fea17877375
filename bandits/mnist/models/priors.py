"""What a setting makes of Bayes by Backprop's prior and posterior: the prior of one
model's settings, its KL factor at an epoch, the initial posterior sigma, and the warning
for scale mixtures whose narrow component the closed-form cost never reaches."""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F

from bandits.bayes import GaussianPrior, ScaleMixturePrior, sigma_to_rho
from bandits.mnist.models.config import Config, expand, one


def make_prior(cfg: Config) -> GaussianPrior | ScaleMixturePrior:
    """The BBB prior of ``cfg`` (one model's settings)."""
    if cfg.prior == "gaussian":
        return GaussianPrior(math.exp(-one(cfg.neg_log_prior_sigma)))
    return ScaleMixturePrior(one(cfg.pi), math.exp(-one(cfg.neg_log_sigma1)),
                             math.exp(-one(cfg.neg_log_sigma2)))


def kl_factor_at(cfg: Config, epoch: int) -> float:
    """The KL factor of one model's ``epoch`` (1 to ``cfg.epochs``): ``--kl-factor``, or
    with ``--kl-factor-final`` the geometric path from one to the other (the first epoch
    at ``--kl-factor``, the last at ``--kl-factor-final``)."""
    start, final = one(cfg.kl_factor), cfg.kl_factor_final
    if final is None or cfg.epochs <= 1:
        return start if final is None else final
    t = (epoch - 1) / (cfg.epochs - 1)
    return start * (final / start) ** t


def init_sigma(cfg: Config) -> float:
    """BBB's initial posterior standard deviation, ``softplus(--init-rho)``."""
    return F.softplus(torch.tensor(cfg.init_rho)).item()


# A mixture component whose responsibility starts below e^-UNREACHABLE_NATS never acts.
UNREACHABLE_NATS = 50.0


def unreachable_spikes(cfg: Config) -> list[str]:
    """Warnings for the scale mixtures of ``cfg``'s grid that train as their wide
    component alone: under the closed-form cost (``--complexity kl``) a posterior weight
    ``N(mu, s^2)`` takes the narrow component with responsibility at most
    ``pi2 N-ratio exp(-(KL(q || N(0, sigma2^2)) - KL(q || N(0, sigma1^2))))``, and from the
    initial ``s`` that gap (at ``mu = 0``, its smallest) can be so large that the cost is
    the Gaussian's KL plus a constant: same gradients, same training, epoch by epoch."""
    if cfg.model != "bbb" or cfg.complexity != "kl":
        return []
    s = init_sigma(cfg)
    out = []
    for m in expand(dataclasses.replace(cfg, seeds=1)):
        pi = one(m.pi)
        if m.prior != "mixture" or not 0 < pi < 1:
            continue
        s1, s2 = math.exp(-one(m.neg_log_sigma1)), math.exp(-one(m.neg_log_sigma2))
        gap = (math.log(s2 / s1) + s * s / 2 * (1 / s2**2 - 1 / s1**2)
               + math.log(pi / (1 - pi)))
        if gap > UNREACHABLE_NATS:
            out.append(
                f"--neg-log-sigma2 {m.neg_log_sigma2:g} (sigma2 = {s2:.2g}) lies far below the "
                f"initial posterior sigma {s:.2g} (--init-rho {cfg.init_rho:g}): under "
                f"--complexity kl the narrow component's responsibility starts below "
                f"e^-{gap:.0f}, so this mixture trains as its wide component "
                f"N(0, sigma1^2) alone; an --init-rho of at most "
                f"{sigma_to_rho(3 * s2):.1f} starts the posterior within its reach")
    return out
