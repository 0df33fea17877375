"""Exact Bayesian linear regression per action, and LinFullPost (Riquelme et al. 2018, 3).

For each run and action the reward is ``r = beta^T z + noise``, ``z`` the context with a
constant 1 appended (an intercept), with the normal-inverse-gamma prior
``sigma^2 ~ IG(a0, b0)``, ``beta | sigma^2 ~ N(0, sigma^2 / lambda I)``. After the data
``(Z, r)`` of that action the posterior is

    Lambda = Z^T Z + lambda I,   mu = Lambda^-1 Z^T r,
    a = a0 + n / 2,              b = b0 + (r^T r - mu^T Lambda mu) / 2,

``sigma^2 ~ IG(a, b)`` and ``beta | sigma^2 ~ N(mu, sigma^2 Lambda^-1)``. Thompson sampling
draws ``(sigma^2, beta)`` for every action and plays the argmax of ``beta^T z``.

**Incremental.** Nothing is inverted: the posterior keeps the Cholesky factor ``L`` of
the precision ``Lambda`` and updates it by one rank-one update per observation
(``O(d^2)``); ``mu`` is two triangular solves, a sample of ``beta`` one more.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from agents.base import Agent
from bandits.buffer import ReplayBuffer


def cholesky_rank_one_update(L: Tensor, x: Tensor) -> Tensor:
    """Lower Cholesky factors of ``L L^T + x x^T``, in place, batched: ``L (..., d, d)``,
    ``x (..., d)`` (``x`` is overwritten). The standard ``O(d^2)`` update (Golub & Van Loan),
    stable because it only adds."""
    d = L.shape[-1]
    for k in range(d):
        lkk = L[..., k, k]
        r = torch.sqrt(lkk * lkk + x[..., k] * x[..., k])
        c, s = (r / lkk).unsqueeze(-1), (x[..., k] / lkk).unsqueeze(-1)
        L[..., k, k] = r
        if k + 1 < d:
            col = L[..., k + 1:, k]
            col.add_(s * x[..., k + 1:]).div_(c)
            x[..., k + 1:].mul_(c).sub_(s * col)
    return L


class BayesLinearRegression:
    """Normal-inverse-gamma regression for ``runs x actions`` independent problems.

    Args:
        runs: Independent learners.
        actions: Regressions per learner.
        dim: Feature size (the intercept included).
        a0, b0, lam: The prior (see the module docstring).
        device: Torch device.
    """

    def __init__(self, runs: int, actions: int, dim: int, a0: float, b0: float, lam: float,
                 device: torch.device) -> None:
        for name, v in (("a0", a0), ("b0", b0), ("lambda", lam)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"the linear posterior's {name} must be > 0, got {v!r}")
        self.a0, self.b0, self.lam = a0, b0, lam
        self.dim = dim
        eye = torch.eye(dim, dtype=torch.float64, device=device)
        self.L = (math.sqrt(lam) * eye).repeat(runs, actions, 1, 1)  # chol(Lambda)
        self.zty = torch.zeros(runs, actions, dim, dtype=torch.float64, device=device)
        self.yty = torch.zeros(runs, actions, dtype=torch.float64, device=device)
        self.n = torch.zeros(runs, actions, dtype=torch.float64, device=device)
        self._runs = torch.arange(runs, device=device)

    def add(self, z: Tensor, actions: Tensor, rewards: Tensor) -> None:
        """One observation per run: features ``z (runs, dim)`` of the arm played."""
        z, r = z.to(torch.float64), rewards.to(torch.float64)
        idx = (self._runs, actions)
        self.L[idx] = cholesky_rank_one_update(self.L[idx], z.clone())
        self.zty[idx] += z * r.unsqueeze(-1)
        self.yty[idx] += r * r
        self.n[idx] += 1

    def refit(self, z: Tensor, actions: Tensor, rewards: Tensor) -> None:
        """Replace the posterior by the one of the data ``z (runs, n, dim)``, ``actions``
        and ``rewards (runs, n)`` (a fresh factorisation, for new features)."""
        z, r = z.to(torch.float64), rewards.to(torch.float64)
        onehot = torch.nn.functional.one_hot(actions, self.L.shape[1]).to(torch.float64)
        zz = torch.einsum("rna,rni,rnj->raij", onehot, z, z)  # Z_a^T Z_a per action
        eye = torch.eye(self.dim, dtype=torch.float64, device=z.device)
        self.L = torch.linalg.cholesky(zz + self.lam * eye)
        self.zty = torch.einsum("rna,rni,rn->rai", onehot, z, r)
        self.yty = torch.einsum("rna,rn->ra", onehot, r * r)
        self.n = onehot.sum(dim=1)

    def mean(self) -> Tensor:
        """Posterior mean ``mu (runs, actions, dim)``."""
        return torch.cholesky_solve(self.zty.unsqueeze(-1), self.L).squeeze(-1)

    def inverse_gamma(self, mu: Tensor) -> tuple[Tensor, Tensor]:
        """The posterior ``(a, b)`` of ``sigma^2``, each ``(runs, actions)``."""
        a = self.a0 + 0.5 * self.n
        b = self.b0 + 0.5 * (self.yty - (self.zty * mu).sum(-1))
        return a, b.clamp(min=1e-12 * self.b0)  # rounding can push a tiny b below 0

    def sample(self, gamma: Tensor, normal: Tensor) -> Tensor:
        """``beta (runs, actions, dim)`` from standard draws: ``gamma ~ Gamma(a, 1)`` of the
        shape of :meth:`inverse_gamma`'s ``a``, and ``normal (runs, actions, dim) ~ N(0, I)``."""
        mu = self.mean()
        a, b = self.inverse_gamma(mu)
        sigma2 = b / gamma  # IG(a, b): b / Gamma(a, 1)
        # beta = mu + sigma L^-T eps has covariance sigma^2 (L L^T)^-1 = sigma^2 Lambda^-1
        step = torch.linalg.solve_triangular(self.L.transpose(-1, -2), normal.unsqueeze(-1),
                                             upper=True).squeeze(-1)
        return mu + sigma2.sqrt().unsqueeze(-1) * step

    def state_dict(self) -> dict[str, Tensor]:
        return {"L": self.L, "zty": self.zty, "yty": self.yty, "n": self.n}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        for k in ("L", "zty", "yty", "n"):
            setattr(self, k, state[k].to(self.L.device).clone())


def thompson_draw(agent: Agent, post: BayesLinearRegression) -> Tensor:
    """One ``beta (runs, actions, dim)`` from the posterior, drawn with the agent's members'
    generators (numpy for the gamma variates, torch for the normal ones)."""
    a, _ = post.inverse_gamma(post.mean())
    gamma = torch.as_tensor(np.concatenate([
        rng.standard_gamma(a[agent.member_runs(k)].cpu().numpy())
        for k, rng in enumerate(agent.rngs)]), device=agent.device)
    normal = torch.empty(agent.runs, agent.n_actions, post.dim, dtype=torch.float64,
                         device=agent.device)
    return post.sample(gamma, agent.fill_random_(normal, "normal"))


class LinFullPostAgent(Agent):
    """Thompson sampling from the exact posterior of a linear model on the raw context."""

    name = "linfullpost"

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # Agent's arguments
        super().__init__(*args, **kwargs)
        self.posterior = self.make_posterior()
        self._seen = 0  # interactions of the buffer already in the posterior

    def make_posterior(self) -> BayesLinearRegression:
        """The regression per run and action on the context with an intercept."""
        c = self.config
        return BayesLinearRegression(self.runs, self.n_actions, self.context_dim + 1,
                                     c.lin_a0, c.lin_b0, c.lin_lambda, self.device)

    def features(self, contexts: Tensor) -> Tensor:
        """The context with an intercept: ``(..., d) -> (..., d + 1)``, float64."""
        c = torch.as_tensor(contexts, dtype=torch.float64, device=self.device)
        return torch.cat([c, torch.ones_like(c[..., :1])], dim=-1)

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        beta = thompson_draw(self, self.posterior)  # (runs, actions, dim)
        z = self.features(contexts)  # (runs, dim)
        return torch.einsum("rad,rd->ra", beta, z).argmax(dim=1)

    @torch.no_grad()
    def update(self, buffer: ReplayBuffer, updates: int = 1) -> None:
        """Add the interactions stored since the last call to the posterior (``updates`` is
        not used: the posterior is exact)."""
        for pos in buffer.positions_since(self._seen, self.name):
            self.posterior.add(self.features(buffer.contexts[:, pos]), buffer.actions[:, pos],
                               buffer.rewards[:, pos])
        self._seen = buffer.added
        return None

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "posterior": self.posterior.state_dict(),
                "seen": self._seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.posterior.load_state_dict(state["posterior"])
        self._seen = int(state["seen"])


class LinUCBAgent(LinFullPostAgent):
    """LinUCB (Li, Chu, Langford and Schapire 2010, "A Contextual-Bandit Approach to
    Personalized News Article Recommendation", Algorithm 1, disjoint models): per action a
    ridge regression ``A_a = I + Z_a^T Z_a``, ``theta_a = A_a^-1 Z_a^T r`` on the context
    with an intercept, and the action of largest ``theta_a^T z + alpha sqrt(z^T A_a^-1 z)``.

    The same incremental Cholesky factor as :class:`LinFullPostAgent` (ridge ``1``, the
    paper's identity), no randomness: ties go to the lowest action."""

    name = "linucb"

    def make_posterior(self) -> BayesLinearRegression:
        if not (math.isfinite(self.config.ucb_alpha) and self.config.ucb_alpha >= 0):
            raise ValueError(f"ucb_alpha must be >= 0, got {self.config.ucb_alpha!r}")
        # ridge 1; the prior's a0, b0 are not used: LinUCB needs only the ridge regression
        return BayesLinearRegression(self.runs, self.n_actions, self.context_dim + 1,
                                     1.0, 1.0, 1.0, self.device)

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        post = self.posterior
        z = self.features(contexts)  # (runs, dim)
        zz = z.unsqueeze(1).expand(-1, self.n_actions, -1)  # (runs, actions, dim)
        theta = post.mean()  # (runs, actions, dim)
        # z^T A^-1 z = |L^-1 z|^2 with A = L L^T
        y = torch.linalg.solve_triangular(post.L, zz.unsqueeze(-1), upper=False).squeeze(-1)
        width = y.square().sum(-1).sqrt()
        scores = (theta * zz).sum(-1) + self.config.ucb_alpha * width
        return scores.argmax(dim=1)
