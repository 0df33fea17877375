"""Thompson sampling with a Bayes-by-Backprop reward model (Blundell et al. 2015, 5.3).

To act, the agent draws one weight sample of its posterior, scores every action
with that same sample and takes the argmax: Thompson sampling. With
``act_samples = K > 1`` it averages K sampled networks' scores instead (the
paper used 2). It learns by minimising the minibatch ELBO:

    loss = KL / n + mean_b  (r_b - f(x_b))^2 / (2 noise_sigma^2)

per run, where KL is the Monte Carlo complexity cost ``log q(w) - log p(w)``
(summed over all weights) and ``n`` the number of interactions in the buffer:
the complexity cost is spread over the data it is fitted to, and the loss is
per datum so the learning rate does not depend on the buffer size. Runs are
independent: their losses are summed, so each run's gradient is its own.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from agents.neural import NeuralAgent
from bandits.bayes import MLP, GaussianPrior, ScaleMixturePrior, make_mlp


class BBBAgent(NeuralAgent):
    """Thompson sampling with a Bayes-by-Backprop reward model."""

    name = "bbb"

    def build_model(self, in_features: int) -> MLP:
        c = self.config
        if c.prior == "mixture":
            prior = ScaleMixturePrior(c.prior_pi, c.prior_sigma1, c.prior_sigma2)
        elif c.prior == "gaussian":
            prior = GaussianPrior(c.prior_sigma)
        else:
            raise ValueError(f"prior must be 'mixture' or 'gaussian', got {c.prior!r}")
        if c.act_samples < 1:
            raise ValueError(f"act_samples must be >= 1, got {c.act_samples!r}")
        if c.noise_sigma <= 0:
            raise ValueError(f"noise_sigma must be > 0, got {c.noise_sigma!r}")
        return make_mlp(in_features, c.hidden, 1, runs=self.runs, prior=prior,
                        init_sigma=c.init_sigma, generator=self.generator)

    @torch.no_grad()
    def act(self, contexts: np.ndarray) -> np.ndarray:
        x = self.all_action_inputs(contexts)  # (runs, n_actions, in)
        # One forward call = one weight sample per run, shared by all actions.
        scores = self.model(x)
        for _ in range(self.config.act_samples - 1):
            scores = scores + self.model(x)
        return scores.squeeze(-1).argmax(dim=1).cpu().numpy()  # (runs,)

    def loss(self, inputs: Tensor, rewards: Tensor, n_data: int) -> Tensor:
        pred = self.model(inputs).squeeze(-1)  # (runs, batch)
        nll = 0.5 * ((rewards - pred) / self.config.noise_sigma) ** 2  # up to a constant
        kl = self.model.complexity_cost("mc")  # (runs,)
        return (kl / n_data + nll.mean(dim=1)).sum()


