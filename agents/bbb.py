"""Thompson sampling with a Bayes-by-Backprop reward model (Blundell et al. 2015, 5.3).

To act, the agent draws one weight sample of its posterior, scores every action
with that same sample and takes the argmax: Thompson sampling. With
``act_samples = K > 1`` it averages K sampled networks' scores instead (the
paper used 2). It learns by minimising the minibatch ELBO:

    loss = KL / n + mean_b  (r_b - f(x_b))^2 / (2 noise_sigma^2)

per run, where KL is the Monte Carlo complexity cost ``log q(w) - log p(w)``
(summed over all weights) and ``n`` the number of interactions in the buffer:
the complexity cost is spread over the data it is fitted to, and the loss is
per datum so the learning rate does not depend on the buffer size (with
``kl_scale = "seen"``, ``n`` is every interaction seen so far: the buffer stands for
the whole history, and the posterior keeps narrowing once the buffer is full). Runs are
independent: their losses are summed, so each run's gradient is its own.

With ``likelihood = "learned"`` the network has a second output ``s`` and the data
term is the heteroscedastic Gaussian negative log-likelihood
``(r_b - mu_b)^2 / (2 sigma_b^2) + log sigma_b`` with ``sigma_b = noise_sigma +
softplus(s_b)``: the noise is learned per context and action, never below
``noise_sigma`` (:func:`agents.neural.gaussian_nll_output_grads`); ``nll_beta > 0``
weights each datum's term by ``sigma_b^(2 beta)`` held constant (beta-NLL, Seitzer et al.
2022).

The gradient is the one autograd gives through :class:`bandits.bayes.BayesLinear` and
its complexity cost (a test checks it), computed on the flat parameters: the network's
backward pass by hand (:meth:`bandits.bayes.FlatMLP.backward`), then, in a few
whole-tensor operations, the complexity cost's gradients
(:func:`bandits.bayes.mc_cost_grads`) and the chain rule
``d/dmu = g_w + dC/dmu``, ``d/drho = (g_w eps + dC/dsigma) sigmoid(rho)``
(:func:`bandits.bayes.mu_rho_grads`).

With ``lrt`` the data term is trained with the local reparameterisation trick (Kingma,
Salimans and Welling 2015): pre-activations are sampled per example from their Gaussian
instead of one weight sample per minibatch (lower-variance gradients; autograd computes
them), while the complexity cost keeps the paper's Monte Carlo estimate at a weight
sample and acting keeps one shared weight sample per run. With ``compile``
those per-weight operations (:func:`sample_weights`, :func:`posterior_grads`) are fused
by ``torch.compile`` into a few kernels: on a GPU that is most of an update's launches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from agents.base import AgentSpec, CommonSettings
from agents.neural import NeuralAgent, gaussian_nll_output_grads
from bandits.bayes import (
    MLP,
    GaussianPrior,
    Prior,
    ScaleMixturePrior,
    batched_linear,
    log_p_minus_log_q,
    make_mlp,
    mc_cost_grads,
    mu_rho_grads,
    posterior_grads,
    sample_weights,
)
from bandits.bayes.exact import power, sqrt
from bandits.core.buffer import ReplayBuffer
from bandits.core.config import OPEN, SIGMA, setting


class BBBAgent(NeuralAgent):
    """Thompson sampling with a Bayes-by-Backprop reward model."""

    name = "bbb"
    config: Config

    def build_model(self, in_features: int) -> MLP:
        c = self.config
        if c.prior == "mixture":
            prior: Prior = ScaleMixturePrior(c.prior_pi, c.prior_sigma1, c.prior_sigma2)
        elif c.prior == "gaussian":
            prior = GaussianPrior(c.prior_sigma)
        else:
            raise ValueError(f"prior must be 'mixture' or 'gaussian', got {c.prior!r}")
        return make_mlp(in_features, c.hidden, self.n_outputs, runs=self.runs,
                        prior=prior, init_sigma=c.init_sigma)

    def decoupled_decay(self) -> float:
        """The decoupled decay of the posterior means: ``--mean-decay`` (``rho`` is never
        decayed)."""
        return self.config.mean_decay

    def data_count(self, buffer: ReplayBuffer) -> Tensor:
        """The number of data the complexity cost is spread over: the items in the buffer,
        or with ``kl_scale = "seen"`` every interaction seen so far (the buffer then stands
        for the whole history, so the posterior keeps narrowing as data accumulate)."""
        return buffer.seen if self.config.kl_scale == "seen" else buffer.size

    @property
    def drawn(self) -> Tensor:
        """Where a drawn weight sample is written, ``(runs, P)``: kept by the network, so
        that its layers' views are made once (a sample lives only until the next)."""
        return self.model.work_buffer("drawn")

    def weight_noise(self) -> Tensor:
        """A fresh ``eps ~ N(0, 1)`` for every parameter of every run, ``(runs, P)``."""
        eps = torch.empty(self.runs, self.model.n_params, device=self.device)
        return self.fill_random_(eps, "normal")

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        x = self.all_action_inputs(contexts)  # (runs, n_actions, in)
        # One weight sample per run, shared by all actions.
        scores = self.model(x, self.model.sample(self.weight_noise(), out=self.drawn))
        for _ in range(self.config.act_samples - 1):
            scores = scores + self.model(x, self.model.sample(self.weight_noise(),
                                                              out=self.drawn))
        return self.means(scores).argmax(dim=1)  # (runs,)

    @torch.no_grad()
    def predict_samples(self, contexts: Tensor, samples: int, generator: torch.Generator
                        ) -> Tensor:
        """Reward predictions for every action of ``contexts (N, d)`` under ``samples``
        weight samples per run, drawn from ``generator`` (never from the agent's own, so
        looking changes nothing): ``(runs, samples, N, n_actions)``."""
        x = self.all_action_inputs(contexts)  # (N, n_actions, in)
        n = x.shape[0]
        x = x.reshape(1, -1, x.shape[-1]).expand(self.runs, -1, -1)
        out = []
        for _ in range(samples):
            eps = torch.randn(self.runs, self.model.n_params, device=self.device,
                              generator=generator)
            out.append(self.means(self.model(x, self.model.sample(eps))).reshape(
                self.runs, n, self.n_actions))
        return torch.stack(out, dim=1)

    @torch.no_grad()
    def gradients(self, x: Tensor, rewards: Tensor, n_data: Tensor, want_loss: bool
                  ) -> tuple[list[Tensor], Tensor | None]:
        m = self.model
        assert m.rho is not None  # a Bayesian network's
        eps = self.weight_noise()  # (runs, P)
        if self._compile:  # a sample per run
            sigma, w = self.maybe_compiled(sample_weights)(m.mu, m.rho, eps)
        else:
            sigma, w = sample_weights(m.mu, m.rho, eps, out=self.drawn)
        scale = 0.5 / self.config.noise_sigma**2
        inv_n = 1.0 / n_data  # the complexity cost is spread over the n items held
        nll: Tensor | None
        if self.config.lrt:
            nll, g_mu_data, g_rho_data = self.lrt_data_grads(x, rewards, scale)
            g_mu, g_rho = mu_rho_grads(*mc_cost_grads(w, sigma, eps, m.prior_consts, inv_n),
                                       m.rho)
            g_mu.add_(g_mu_data)  # the data term's gradients are already for mu and rho
            g_rho.add_(g_rho_data)
        else:
            inputs: list[Tensor] = []
            out = m.apply_layers(x, m.split(w), inputs)  # (runs, batch, outputs)
            if self.learned_noise:
                d_out, per_datum = gaussian_nll_output_grads(
                    out, rewards, self.config.noise_sigma, beta=self.config.nll_beta)
                nll = per_datum.mean(dim=1)
            else:
                err = out.squeeze(-1) - rewards  # (runs, batch)
                # nll = scale * mean_b err^2 per run, up to a constant; its output gradient:
                d_out = err.mul(2.0 * scale / err.shape[1]).unsqueeze(-1)  # (runs, batch, 1)
                nll = err.square().mean(dim=1).mul_(scale) if want_loss else None
            g_w = m.backward(inputs, w, d_out, torch.empty_like(w))
            g_mu, g_rho = self.maybe_compiled(posterior_grads)(g_w, w, sigma, eps, m.rho, inv_n,
                                                      m.prior_consts)
        loss = None
        if want_loss:
            log_ratio, _ = log_p_minus_log_q(w, sigma, eps, m.prior_consts)
            assert nll is not None  # computed with want_loss
            loss = nll - log_ratio.sum(dim=1) * inv_n  # (runs,)
        return [g_mu, g_rho], loss

    def lrt_forward(self, x: Tensor, mu: Tensor, rho: Tensor) -> Tensor:
        """The network on ``x (runs, batch, in)`` with the local reparameterisation trick:
        each layer's pre-activations are drawn from their Gaussian given the layer's input,
        ``N(h mu_W^T + mu_b, h^2 (sigma_W^2)^T + sigma_b^2)``, independently per example."""
        m = self.model

        def sampled_preactivations(h: Tensor, layer) -> Tensor:
            (wm, bm), (wv, bv) = layer  # means and variances of the weights and biases
            mean = batched_linear(h, wm, bm)  # (runs, batch, out)
            v = batched_linear(h * h, wv, bv)
            noise = self.fill_random_(torch.empty_like(mean), "normal")
            return mean + sqrt(v) * noise

        var = F.softplus(rho).square()
        return m.apply_layers(x, list(zip(m.split(mu), m.split(var))),
                              linear=sampled_preactivations)

    def lrt_data_grads(self, x: Tensor, rewards: Tensor, scale: float
                       ) -> tuple[Tensor, Tensor, Tensor]:
        """The data term per run ``(runs,)`` and its gradients for ``mu`` and ``rho`` under
        the local reparameterisation trick (autograd through :meth:`lrt_forward`)."""
        m = self.model
        assert m.rho is not None  # a Bayesian network's
        with torch.enable_grad():
            mu, rho = m.mu.detach().requires_grad_(), m.rho.detach().requires_grad_()
            out = self.lrt_forward(x, mu, rho)  # (runs, batch, outputs)
            if self.learned_noise:
                sigma = F.softplus(out[..., 1]) + self.config.noise_sigma
                per_datum = (out[..., 0] - rewards).square() / (2 * sigma.square()) + sigma.log()
                if self.config.nll_beta:  # beta-NLL: sigma^(2 beta) held constant
                    weighted = per_datum * power(sigma.detach(), 2.0 * self.config.nll_beta)
                    nll = weighted.mean(dim=1)
                    g_mu, g_rho = torch.autograd.grad(nll.sum(), [mu, rho])
                    return per_datum.detach().mean(dim=1), g_mu, g_rho
                nll = per_datum.mean(dim=1)
            else:
                err = out.squeeze(-1) - rewards  # (runs, batch)
                nll = err.square().mean(dim=1).mul(scale)
            g_mu, g_rho = torch.autograd.grad(nll.sum(), [mu, rho])
        return nll.detach(), g_mu, g_rho


# the scale mixture's parameters act only with its prior (refused otherwise, see setting)
WITH_MIXTURE = (lambda c: c["prior"] == "mixture", "add --prior mixture")


@dataclass
class Settings:
    """BBB's own settings (see README, "Choices the paper leaves open")."""

    prior: str = setting("gaussian", "BBB prior: scale mixture or Gaussian",
                         choices=["mixture", "gaussian"])
    prior_pi: float = setting(0.5, "scale-mixture weight pi of the wide component",
                              range=(OPEN(0), OPEN(1)), acts_when=WITH_MIXTURE)
    prior_sigma1: float = setting(1.0, "scale-mixture wide sigma_1 (= e^0)", range=SIGMA,
                                  acts_when=WITH_MIXTURE)
    prior_sigma2: float = setting(math.exp(-6), "scale-mixture narrow sigma_2 (= e^-6)",
                                  range=SIGMA, acts_when=WITH_MIXTURE)
    prior_sigma: float = setting(1.0, "Gaussian prior sigma (with --prior gaussian)",
                                 range=SIGMA, acts_when=(lambda c: c["prior"] == "gaussian",
                                                         "use --prior gaussian"))
    # complexity cost per datum: / items in the buffer, or / "seen"
    kl_scale: str = setting(
        "buffer", "BBB: divide the complexity cost by the items "
        "in the buffer, or by every interaction seen "
        "so far (the buffer standing for the whole "
        "history: the posterior keeps narrowing)",
        choices=["buffer", "seen"])
    init_sigma: float = setting(0.02, "BBB initial posterior sigma of every weight",
                                range=SIGMA)
    act_samples: int = setting(
        1, "BBB: weight samples drawn to act, their predictions averaged (1: plain "
        "Thompson sampling, one weight sample per step; 2: the paper's average, kept by "
        "the presets that reproduce it)", range=(1, 10_000),
        preset_everywhere=True)  # the paper's presets gave their 2 to every run before
    # an agent's own setting kept its default in runs without the agent: their records keep it
    mean_decay: float = setting(
        0.0, "BBB: decoupled weight decay (AdamW's) of the posterior means, none on their "
        "sigmas; 0: plain Adam. Adam divides the prior's pull on the means by the "
        "gradient's running scale, decoupled decay is applied outside it", range=(0, 10.0))
    lrt: bool = setting(
        False, "bbb: train with the local reparameterisation trick (acting keeps "
        "one weight sample per run)")


def refuse_lrt_disjoint(config, context_dim: int, n_actions: int) -> str | None:
    """The local reparameterisation trick has no disjoint first layer: one line, or None."""
    if config.lrt and config.encoding == "disjoint":
        return ("--encoding disjoint trains BBB with one weight sample per minibatch; leave "
                "out --lrt (or use --agent bbb), or keep --encoding onehot")
    return None


@dataclass
class Config(Settings, CommonSettings):
    """What a BBB agent reads: the settings every network shares and its own, and nothing else."""


SPECS = (
    AgentSpec("bbb", BBBAgent, "Bayes by Backprop (Thompson)", "#0072B2", cost=2.4,
              settings=(Settings,), config=Config, check=refuse_lrt_disjoint),
    AgentSpec("bbb-lrt", BBBAgent, "BBB, local reparam.", "#56B4E9", {"lrt": True},
              linestyle="--", cost=3.0, settings=(Settings,), config=Config,
              check=refuse_lrt_disjoint),
)
