"""Exact Bayesian linear regression per action: LinFullPost (Riquelme et al. 2018, 3) and
LinUCB (Li et al. 2010).

For each run and action the reward is ``r = beta^T z + noise``, ``z`` the context with a
constant 1 appended (an intercept), with the normal-inverse-gamma prior
``sigma^2 ~ IG(a0, b0)``, ``beta | sigma^2 ~ N(0, sigma^2 / lambda I)``. After the data
``(Z, r)`` of that action the posterior is

    Lambda = Z^T Z + lambda I,   mu = Lambda^-1 Z^T r,
    a = a0 + n / 2,              b = b0 + (r^T r - mu^T Lambda mu) / 2,

``sigma^2 ~ IG(a, b)`` and ``beta | sigma^2 ~ N(mu, sigma^2 Lambda^-1)``. Thompson sampling
draws ``(sigma^2, beta)`` for every action and plays the argmax of ``beta^T z``.

**Incremental, without solves.** The posterior keeps the inverse ``Lambda^-1`` of the
precision and updates it by the Sherman-Morrison formula, one rank-one update per
observation (``O(d^2)``) of the one action each run played (the runs' small matrices in one
batch, large ones each in place); it keeps the mean ``mu`` of every action too, recomputed
from ``Lambda^-1`` when that action's data changes. A step then costs one matrix-vector
product per run and action to act, and ``O(d^2)`` per run to learn; nothing is solved or
factorised (but in :meth:`BayesLinearRegression.refit`).

* Thompson sampling (``linfullpost`` here, ``neurallinear`` on learnt features) keeps
  ``Lambda^-1`` as its upper triangular Cholesky factor ``U`` (``U U^T = Lambda^-1``),
  which the draws need: the Sherman-Morrison update is applied to ``U`` itself, in closed
  form and vectorised (:func:`inverse_factor_rank_one_update`), and a draw is
  ``beta = mu + sigma U eps``. ``U`` is ``L^-T`` for the Cholesky factor ``L`` of
  ``Lambda``, so from the same random numbers the draws are the ``mu + sigma L^-T eps``
  of a precision-factor implementation, up to rounding.
* LinUCB keeps ``Lambda^-1`` itself (its ``A^-1``): the width ``sqrt(z^T A^-1 z)`` is one
  matrix-vector product per action and ``theta = A^-1 Z^T r`` is the kept mean.

:func:`cholesky_rank_one_update` is the same kind of closed-form update for the Cholesky
factor of the precision itself (no agent keeps that factor now).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from agents.base import Agent, AgentSpec
from bandits.bayes.exact import sqrt
from bandits.core.buffer import ReplayBuffer
from bandits.core.config import POSITIVE, setting


def cholesky_rank_one_update(L: Tensor, x: Tensor) -> Tensor:
    """Lower Cholesky factors of ``L L^T + x x^T``, in place, batched: ``L (..., d, d)``
    with a positive diagonal, ``x (..., d)`` (not changed).

    With ``p = L^-1 x``, ``L L^T + x x^T = L (I + p p^T) L^T``, and the Cholesky factor
    ``K`` of ``I + p p^T`` has a closed form: with ``t_0 = 1``,
    ``t_j = 1 + p_1^2 + ... + p_j^2``, ``K_jj = sqrt(t_j / t_{j-1})`` and
    ``K_ij = p_i p_j / sqrt(t_j t_{j-1})`` for ``i > j``. Column ``j`` of ``L K`` is then
    ``sqrt(t_j / t_{j-1}) L_j + p_j / sqrt(t_j t_{j-1}) sum_{i > j} p_i L_i``: a cumulative
    sum over the columns, ``O(d^2)`` without a loop over ``d``; it only adds."""
    p = torch.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    t = 1 + torch.cumsum(p * p, -1)
    t_prev = torch.cat([torch.ones_like(t[..., :1]), t[..., :-1]], -1)
    tail = (L * p.unsqueeze(-2)).flip(-1).cumsum(-1).flip(-1)  # column j: sum_{i >= j} p_i L_i
    L.mul_(sqrt(t / t_prev).unsqueeze(-2))
    L[..., :-1].addcmul_(tail[..., 1:], (p / sqrt(t * t_prev))[..., None, :-1])
    return L


def inverse_factor_rank_one_update(U: Tensor, x: Tensor) -> Tensor:
    """The Sherman-Morrison update of ``S = U U^T`` done on its factor, in place, batched:
    ``U (..., d, d)`` upper triangular with a positive diagonal, ``x (..., d)`` (not
    changed); afterwards ``U U^T = (S^-1 + x x^T)^-1 = S - S x x^T S / (1 + x^T S x)``.

    With ``s = U^T x`` the new ``S`` is ``U (I - s s^T / (1 + |s|^2)) U^T``, and the upper
    triangular ``G`` with ``G G^T = I - s s^T / (1 + |s|^2)`` has a closed form: with
    ``tau_j = 1 + s_1^2 + ... + s_{j-1}^2`` and ``tau+_j = tau_j + s_j^2``,
    ``G_jj = sqrt(tau_j / tau+_j)`` and ``G_ij = -s_i s_j / sqrt(tau_j tau+_j)`` for
    ``i < j``. Column ``j`` of ``U G`` is then
    ``sqrt(tau_j / tau+_j) U_j - s_j / sqrt(tau_j tau+_j) sum_{i < j} s_i U_i``: a cumulative
    sum over the columns, ``O(d^2)`` without a loop over ``d``. Every ``tau`` is a sum of
    positive terms, the diagonal stays positive whatever the rounding, and ``U U^T`` stays
    positive semi-definite. If ``S^-1 = L L^T`` (Cholesky), ``U = L^-T`` before and after."""
    s = (x.unsqueeze(-2) @ U).squeeze(-2)  # U^T x
    s2 = s * s
    tau_plus = 1 + torch.cumsum(s2, -1)
    tau = torch.cat([torch.ones_like(s[..., :1]), tau_plus[..., :-1]], -1)
    head = U * s.unsqueeze(-2)
    head.cumsum_(-1)  # column j: sum_{i <= j} s_i U_i
    U.mul_(sqrt(tau / tau_plus).unsqueeze(-2))
    U[..., 1:].addcmul_(head[..., :-1], (s / sqrt(tau * tau_plus))[..., None, 1:], value=-1)
    return U


def inverse_rank_one_update(S: Tensor, x: Tensor) -> Tensor:
    """Sherman-Morrison, in place, batched: ``S (..., d, d)`` symmetric positive definite,
    ``x (..., d)`` -> ``(S^-1 + x x^T)^-1 = S - (S x)(S x)^T / (1 + x^T S x)``."""
    v = (x.unsqueeze(-2) @ S).squeeze(-2)  # (S x)^T = x^T S
    u = v / sqrt(1 + (x * v).sum(-1, keepdim=True))
    S.addcmul_(u.unsqueeze(-1), u.unsqueeze(-2), value=-1)
    return S


# from this feature size on, :meth:`BayesLinearRegression.add` updates each run's matrix in
# place (a loop over the runs) rather than copying the ones played out and back
_IN_PLACE_DIM = 256


class BayesLinearRegression:
    """Normal-inverse-gamma regression for ``runs x actions`` independent problems.

    Args:
        runs: Independent learners.
        actions: Regressions per learner.
        dim: Feature size (the intercept included).
        a0, b0, lam: The prior (see the module docstring).
        device: Torch device.
        factor: Keep ``Lambda^-1`` as its Cholesky factor ``U`` (what :meth:`sample`
            needs) rather than as the matrix ``S`` itself.
    """

    def __init__(self, runs: int, actions: int, dim: int, a0: float, b0: float, lam: float,
                 device: torch.device, factor: bool = True) -> None:
        for name, v in (("a0", a0), ("b0", b0), ("lambda", lam)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"the linear posterior's {name} must be > 0, got {v!r}")
        self.a0, self.b0, self.lam = a0, b0, lam
        self.dim = dim
        eye = torch.eye(dim, dtype=torch.float64, device=device)
        # Lambda^-1 of the prior, lambda^-1 I: U U^T (upper triangular U) or S
        self.U: Tensor | None = None
        self.S: Tensor | None = None
        if factor:
            self.U = (eye / math.sqrt(lam)).repeat(runs, actions, 1, 1)
        else:
            self.S = (eye / lam).repeat(runs, actions, 1, 1)
        self.mu = torch.zeros(runs, actions, dim, dtype=torch.float64, device=device)
        self.zty = torch.zeros(runs, actions, dim, dtype=torch.float64, device=device)
        self.yty = torch.zeros(runs, actions, dtype=torch.float64, device=device)
        self.n = torch.zeros(runs, actions, dtype=torch.float64, device=device)
        self._runs = torch.arange(runs, device=device)

    @property
    def _key(self) -> str:
        return "U" if self.U is not None else "S"

    def _mean_of(self, m: Tensor, zty: Tensor) -> Tensor:
        """``Lambda^-1 zty`` from ``m``, which is ``U`` or ``S`` (``(..., d, d)``)."""
        # as row vectors (S symmetric): zty^T S, zty^T U U^T
        if self.U is not None:
            return ((zty.unsqueeze(-2) @ m) @ m.mT).squeeze(-2)
        return (zty.unsqueeze(-2) @ m).squeeze(-2)

    def add(self, z: Tensor, actions: Tensor, rewards: Tensor) -> None:
        """One observation per run: features ``z (runs, dim)`` of the arm played."""
        z, r = z.to(torch.float64), rewards.to(torch.float64)
        idx = (self._runs, actions)
        self.zty[idx] += z * r.unsqueeze(-1)
        self.yty[idx] += r * r
        self.n[idx] += 1
        zty = self.zty[idx]
        mats = getattr(self, self._key)  # only the action played changes in each run
        update = inverse_factor_rank_one_update if self.U is not None else inverse_rank_one_update
        if self.dim < _IN_PLACE_DIM:  # small matrices: gather them, update, put them back
            flat = mats.view(-1, self.dim, self.dim)
            k = self._runs * mats.shape[1] + actions
            m = update(flat.index_select(0, k), z)
            flat.index_copy_(0, k, m)
            self.mu[idx] = self._mean_of(m, zty)
        else:  # large ones: each in place (a copy would cost as much as the update)
            for run, a in enumerate(actions.tolist()):
                m = update(mats[run, a], z[run])
                self.mu[run, a] = self._mean_of(m, zty[run])

    def refit(self, z: Tensor, actions: Tensor, rewards: Tensor) -> None:
        """Replace the posterior by the one of the data ``z (runs, n, dim)``, ``actions``
        and ``rewards (runs, n)`` (a fresh factorisation, for new features)."""
        z, r = z.to(torch.float64), rewards.to(torch.float64)
        onehot = torch.nn.functional.one_hot(actions, self.mu.shape[1]).to(torch.float64)
        zz = torch.einsum("rna,rni,rnj->raij", onehot, z, z)  # Z_a^T Z_a per action
        eye = torch.eye(self.dim, dtype=torch.float64, device=z.device)
        self._set_from_cholesky(torch.linalg.cholesky(zz + self.lam * eye))
        self.zty = torch.einsum("rna,rni,rn->rai", onehot, z, r)
        self.yty = torch.einsum("rna,rn->ra", onehot, r * r)
        self.n = onehot.sum(dim=1)
        self.mu = self._mean_of(getattr(self, self._key), self.zty)

    def _set_from_cholesky(self, L: Tensor) -> None:
        """``U`` or ``S`` from the lower Cholesky factors ``L`` of the precisions."""
        if self.U is not None:  # U = L^-T
            eye = torch.eye(self.dim, dtype=L.dtype, device=L.device).expand_as(L)
            self.U = torch.linalg.solve_triangular(L, eye, upper=False).mT.triu().contiguous()
        else:
            self.S = torch.cholesky_inverse(L)

    @property
    def L(self) -> Tensor:
        """The lower Cholesky factors of the precisions ``Lambda``, derived on demand
        (``O(d^3)``, for checks: the posterior keeps ``Lambda^-1``)."""
        if self.U is not None:  # L = U^-T
            eye = torch.eye(self.dim, dtype=self.U.dtype, device=self.U.device)
            return torch.linalg.solve_triangular(self.U, eye.expand_as(self.U),
                                                 upper=True).mT
        return torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(self.S)))

    def inverse(self) -> Tensor:
        """The inverse precisions ``Lambda^-1 (runs, actions, dim, dim)``."""
        if self.U is not None:
            return self.U @ self.U.mT
        assert self.S is not None  # the posterior holds U or S
        return self.S

    def mean(self) -> Tensor:
        """Posterior mean ``mu (runs, actions, dim)`` (kept, not computed)."""
        return self.mu

    def width(self, z: Tensor) -> Tensor:
        """``sqrt(z^T Lambda^-1 z) (runs, actions)`` of features ``z (runs, dim)`` under
        every action's ``Lambda^-1``."""
        z = z.to(torch.float64)[:, None, None, :]  # as row vectors
        if self.U is not None:  # |U^T z|^2
            q = (z @ self.U).square().sum(-1)
        else:  # (z^T S) z
            assert self.S is not None  # the posterior holds U or S
            q = ((z @ self.S) * z).sum(-1)
        return sqrt(q.squeeze(-1).clamp(min=0))  # rounding could make a tiny q negative

    def inverse_gamma(self, mu: Tensor) -> tuple[Tensor, Tensor]:
        """The posterior ``(a, b)`` of ``sigma^2``, each ``(runs, actions)``."""
        a = self.a0 + 0.5 * self.n
        b = self.b0 + 0.5 * (self.yty - (self.zty * mu).sum(-1))
        return a, b.clamp(min=1e-12 * self.b0)  # rounding can push a tiny b below 0

    def sample(self, gamma: Tensor, normal: Tensor) -> Tensor:
        """``beta (runs, actions, dim)`` from standard draws: ``gamma ~ Gamma(a, 1)`` of the
        shape of :meth:`inverse_gamma`'s ``a``, and ``normal (runs, actions, dim) ~ N(0, I)``."""
        if self.U is None:
            raise ValueError("this posterior keeps Lambda^-1 without its factor; build it "
                             "with factor=True to sample")
        mu = self.mean()
        a, b = self.inverse_gamma(mu)
        sigma2 = b / gamma  # IG(a, b): b / Gamma(a, 1)
        # beta = mu + sigma U eps has covariance sigma^2 U U^T = sigma^2 Lambda^-1
        step = (normal.unsqueeze(-2) @ self.U.mT).squeeze(-2)  # (U eps)^T = eps^T U^T
        return mu + sqrt(sigma2).unsqueeze(-1) * step

    def state_dict(self) -> dict[str, Tensor]:
        return {self._key: getattr(self, self._key), "mu": self.mu, "zty": self.zty,
                "yty": self.yty, "n": self.n}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        device = self.mu.device
        for k in ("zty", "yty", "n"):
            setattr(self, k, state[k].to(device).clone())
        if self._key in state:
            setattr(self, self._key, state[self._key].to(device).clone(
                memory_format=torch.contiguous_format))
            self.mu = state["mu"].to(device).clone()
        else:  # an older state: the Cholesky factor L of the precision
            L = state["L"].to(device)
            self._set_from_cholesky(L)
            self.mu = torch.cholesky_solve(self.zty.unsqueeze(-1), L).squeeze(-1)


def thompson_draw(agent: Agent, post: BayesLinearRegression) -> Tensor:
    """One ``beta (runs, actions, dim)`` from the posterior, drawn with the agent's
    generators (numpy for the gamma variates, torch for the normal ones)."""
    a, _ = post.inverse_gamma(post.mean())
    gamma = torch.as_tensor(agent.rng.standard_gamma(a.cpu().numpy()), device=agent.device)
    normal = torch.empty(agent.runs, agent.n_actions, post.dim, dtype=torch.float64,
                         device=agent.device)
    return post.sample(gamma, agent.fill_random_(normal, "normal"))


class LinFullPostAgent(Agent):
    """Thompson sampling from the exact posterior of a linear model on the raw context."""

    name = "linfullpost"
    config: PosteriorSettings

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # Agent's arguments
        super().__init__(*args, **kwargs)
        self.posterior = self.make_posterior()
        self._seen = 0  # interactions of the buffer already in the posterior

    def make_posterior(self) -> BayesLinearRegression:
        """The regression per run and action on the context with an intercept."""
        c = self.config
        return BayesLinearRegression(self.runs, self.n_actions, self.context_dim + 1,
                                     c.lin_a0, c.lin_b0, c.lin_lambda, self.device)

    def features(self, contexts: np.ndarray | Tensor) -> Tensor:
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
            contexts, actions, rewards = buffer.slot(pos)
            self.posterior.add(self.features(contexts), actions, rewards)
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

    The posterior keeps ``A_a^-1`` itself, updated by Sherman-Morrison, and ``theta_a``
    (ridge ``1``, the paper's identity; see the module docstring), so acting solves
    nothing; no randomness: ties go to the lowest action."""

    name = "linucb"
    config: UCBSettings  # type: ignore[assignment]  # its own, not the posterior's prior

    def make_posterior(self) -> BayesLinearRegression:
        if not (math.isfinite(self.config.ucb_alpha) and self.config.ucb_alpha >= 0):
            raise ValueError(f"ucb_alpha must be >= 0, got {self.config.ucb_alpha!r}")
        # ridge 1; the prior's a0, b0 are not used: LinUCB needs only the ridge regression
        return BayesLinearRegression(self.runs, self.n_actions, self.context_dim + 1,
                                     1.0, 1.0, 1.0, self.device, factor=False)

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        post = self.posterior
        z = self.features(contexts)  # (runs, dim)
        theta = post.mean()  # (runs, actions, dim): A^-1 Z^T r
        scores = torch.einsum("rad,rd->ra", theta, z) + self.config.ucb_alpha * post.width(z)
        return scores.argmax(dim=1)


@dataclass
class PosteriorSettings:
    """The normal-inverse-gamma posterior's prior (``linfullpost``, and ``neurallinear``
    on its network's features)."""

    lin_a0: float = setting(6.0, "linfullpost, neurallinear: inverse-gamma prior "
                            "shape a0 of the noise variance", range=POSITIVE)
    lin_b0: float = setting(6.0, "linfullpost, neurallinear: inverse-gamma prior "
                            "scale b0", range=POSITIVE)
    lin_lambda: float = setting(0.25, "linfullpost, neurallinear: prior precision "
                                "lambda (beta ~ N(0, sigma^2/lambda I))", range=POSITIVE)


@dataclass
class UCBSettings:
    """LinUCB's own setting."""

    ucb_alpha: float = setting(1.0, "linucb: the width alpha of the upper confidence bound "
                               "(Li et al. 2010)", range=(0, 1e6))


SPECS = (
    AgentSpec("linfullpost", LinFullPostAgent, "LinFullPost", "#882255", linestyle="-.",
              settings=(PosteriorSettings,), config=PosteriorSettings,
              neural=False),
    AgentSpec("linucb", LinUCBAgent, "LinUCB", "black", settings=(UCBSettings,), config=UCBSettings,
              linestyle="-.", neural=False),
)
