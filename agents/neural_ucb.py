"""NeuralUCB and NeuralTS: exploration from the network's gradient at the context.

NeuralUCB (Zhou, Li and Gu 2020, "Neural Contextual Bandits with UCB-based
Exploration") and NeuralTS (Zhang, Zhou, Li and Gu 2021, "Neural Thompson Sampling")
score every action with the reward network ``f(x_a; theta)`` and its gradient
``g_a = grad_theta f(x_a; theta)`` as features of a linear model in the network's
tangent space. With the design ``U = lambda I + sum_t g_t g_t^T`` over the chosen
actions' gradients, the width of an action is

    sigma_a = sqrt(lambda nu g_a^T U^-1 g_a)

and NeuralUCB takes the argmax of ``f(x_a) + sigma_a``, NeuralTS that of a draw from
``N(f(x_a), sigma_a^2)``. As in the papers' experiments ``U`` is its diagonal by
default (``U_ii = lambda + sum_t g_ti^2``); ``exact_design`` keeps the full ``P x P``
matrix (small networks only). With the diagonal design ``act`` forms no ``g_a``: each
layer's part of ``g_a^T U^-1 g_a`` is ``(delta^2)^T U^-1 (h^2)`` for the gradient
``delta`` at the layer's pre-activations and its input ``h``
(:meth:`bandits.bayes.FlatMLP.weighted_square_norms`), and only the chosen action's
gradient is formed, for the design. ``nu`` and ``lambda`` default to
1 (``--nu``, ``--ucb-lambda``): this project's choice; NeuralUCB's reference code
defaults to nu = 1 and lambda = 0.001, and the papers chose both per data set by grid
search.

The network is the greedy agent's (squared error, Adam on minibatches of the replay
buffer, ``--updates-per-step`` every ``--train-every`` steps). With ``--likelihood
learned`` it has a second output, the reward's noise, trained with the mean by the
Gaussian negative log-likelihood (:func:`agents.neural.gaussian_nll_output_grads`); ``f``
is then the mean output and ``g_a`` that output's gradient. The design takes each
chosen action's gradient at the next ``act`` or training call, whichever comes first, so
it never lags, however seldom the network trains (as in the reference code, which adds
it at once). Every run is independent and draws from the agent's generator: a batch of
runs equals each run alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from agents.base import AgentSpec, CommonSettings
from agents.neural import NeuralAgent
from bandits.bayes import MLP, make_mlp
from bandits.bayes.exact import sqrt
from bandits.core.buffer import ReplayBuffer
from bandits.core.config import OPEN, setting

UCB_LAMBDA_RANGE = (1e-6, 1e6)
"""The accepted ``ucb_lambda``: the design starts at ``lambda I`` (its inverse at
``I / lambda``) in float32, where a smaller lambda underflows and makes every width NaN."""

EXACT_DESIGN_MAX_PARAMS = 4096
"""The largest network (parameters ``P``) whose full ``P x P`` design ``exact_design`` keeps."""


def design_size(in_features: int, hidden: tuple[int, ...], outputs: int) -> int:
    """The parameters ``P`` of a reward network of these sizes: the design is ``P x P``
    (exact) or ``P`` long (diagonal), per run."""
    sizes = [in_features, *hidden, outputs]
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


class NeuralUCBAgent(NeuralAgent):
    """NeuralUCB: the action of largest ``f(x_a) + sigma_a`` (see the module docstring)."""

    name = "neuralucb"
    config: Config
    thompson = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # NeuralAgent's arguments
        super().__init__(*args, **kwargs)
        c = self.config  # nu's and ucb_lambda's ranges: checked by Agent, as declared
        p = self.model.n_params
        if c.exact_design and p > EXACT_DESIGN_MAX_PARAMS:
            raise ValueError(f"exact_design keeps a {p} x {p} matrix per run; use the "
                             "diagonal design (the default) or a smaller network")
        if c.exact_design:  # U^-1, kept by Sherman-Morrison updates
            eye = torch.eye(p, device=self.device) / c.ucb_lambda
            self.u_inv = eye.repeat(self.runs, 1, 1)
        else:
            self.u_diag = torch.full((self.runs, p), c.ucb_lambda, device=self.device)
        self._pending: list[Tensor] = []  # chosen actions' gradients not yet in U

    def build_model(self, in_features: int) -> MLP:
        return make_mlp(in_features, self.config.hidden, self.n_outputs,
                        runs=self.runs, bayesian=False)

    @staticmethod
    def mean_output(out: Tensor) -> Tensor:
        """The output gradient that selects the mean output (the first) of ``out``."""
        d_out = torch.zeros_like(out)
        d_out[..., 0] = 1.0
        return d_out

    @torch.no_grad()
    def scores_and_gradients(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(f, g)`` of network inputs ``x (runs, rows, in)`` (:meth:`all_action_inputs`
        of contexts gives every action's row): the scores ``f`` ``(runs, rows)`` and their
        gradients ``g`` ``(runs, rows, P)``, one row at a time. With the learned likelihood
        the network's second output (the noise) is left out: ``f`` is the mean output and
        ``g`` its gradient."""
        m = self.model
        f, g = [], []
        for a in range(x.shape[1]):
            inputs: list[Tensor] = []
            out = m.apply_layers(x[:, a:a + 1], m.split(m.mu), inputs)  # (runs, 1, outputs)
            g.append(m.backward(inputs, m.mu, self.mean_output(out), torch.empty_like(m.mu)))
            f.append(self.means(out)[:, 0])
        return torch.stack(f, dim=1), torch.stack(g, dim=1)

    @torch.no_grad()
    def widths(self, g: Tensor) -> Tensor:
        """``sigma_a = sqrt(lambda nu g_a^T U^-1 g_a)`` for ``g (runs, actions, P)``."""
        c = self.config
        if c.exact_design:
            quad = torch.einsum("rap,rpq,raq->ra", g, self.u_inv, g)
        else:
            quad = (g.square() / self.u_diag.unsqueeze(1)).sum(-1)
        return sqrt(c.ucb_lambda * c.nu * quad.clamp(min=0))

    @torch.no_grad()
    def scores_widths_and_kept(self, x: Tensor) -> tuple[Tensor, Tensor, Any]:
        """``(f, sigma, kept)`` of network inputs ``x (runs, rows, in)`` under the current
        design: the scores ``f`` and widths ``sigma`` ``(runs, rows)``, and ``kept``, what
        :meth:`chosen_gradients` takes the chosen rows' gradients from. The exact design
        forms every row's gradient (:meth:`scores_and_gradients`, :meth:`widths`) and
        keeps them ``(runs, rows, P)``; the diagonal one forms none, summing
        ``g_a^T U^-1 g_a`` layer by layer
        (:meth:`bandits.bayes.FlatMLP.weighted_square_norms`), and keeps the layer inputs
        of its forward pass (a list, one ``(runs, rows, in)`` per layer)."""
        c = self.config
        if c.exact_design:
            f, g = self.scores_and_gradients(x)
            return f, self.widths(g), g
        m = self.model
        inputs: list[Tensor] = []
        out = m.apply_layers(x, m.split(m.mu), inputs)  # (runs, rows, outputs)
        quad = m.weighted_square_norms(inputs, m.mu, self.mean_output(out),
                                       self.u_diag.reciprocal())
        return self.means(out), sqrt(c.ucb_lambda * c.nu * quad.clamp(min=0)), inputs

    @torch.no_grad()
    def chosen_gradients(self, kept: Any, actions: Tensor) -> Tensor:
        """The gradients ``g`` ``(runs, P)`` of each run's chosen row ``actions (runs,)``,
        from :meth:`scores_widths_and_kept`'s ``kept``: indexed (the exact design) or
        formed by one backward pass through the chosen rows' layer inputs (the diagonal
        one)."""
        rows = torch.arange(self.runs, device=self.device)
        if self.config.exact_design:
            return kept[rows, actions]
        picked = [h[rows, actions].unsqueeze(1) for h in kept]  # (runs, 1, in) per layer
        m = self.model
        d_out = self.mean_output(torch.empty(self.runs, 1, self.n_outputs, device=self.device))
        return m.backward(picked, m.mu, d_out, torch.empty_like(m.mu))

    @torch.no_grad()
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        self.add_to_design()  # the earlier choices, whether or not a training call came
        f, sigma, kept = self.scores_widths_and_kept(self.all_action_inputs(contexts))
        if self.thompson:
            noise = self.fill_random_(torch.empty_like(f), "normal")
            scores = f + sigma * noise
        else:
            scores = f + sigma
        actions = scores.argmax(dim=1)
        self._pending.append(self.chosen_gradients(kept, actions))
        return actions

    @torch.no_grad()
    def add_to_design(self) -> None:
        """Put the chosen actions' gradients since the last call into ``U``."""
        for g in self._pending:  # (runs, P)
            if self.config.exact_design:  # (U + g g^T)^-1 by Sherman-Morrison
                ug = torch.einsum("rpq,rq->rp", self.u_inv, g)
                denom = 1.0 + (g * ug).sum(-1, keepdim=True)
                self.u_inv -= torch.einsum("rp,rq->rpq", ug, ug / denom)
            else:
                self.u_diag += g.square()
        self._pending = []

    def update(self, buffer: ReplayBuffer, updates: int = 1) -> Tensor | None:
        self.add_to_design()  # eagerly, before the (possibly captured) training step
        return super().update(buffer, updates)

    @torch.no_grad()
    def predict_samples(self, contexts: Tensor, samples: int, generator: torch.Generator
                        ) -> Tensor:
        """Draws from ``N(f(x_a), sigma_a^2)``, the tangent-space model's belief about each
        action's reward, for every action of ``contexts (N, d)``: ``(runs, samples, N,
        n_actions)``. NeuralTS acts on one such draw and NeuralUCB on ``f + sigma``, so
        the probes' spread is ``sigma`` itself (how far the agent explores). The design
        first takes the choices since the last call, as :meth:`act` does."""
        self.add_to_design()
        x = self.all_action_inputs(contexts)  # (N, actions, in)
        n = x.shape[0]
        rows = x.reshape(1, -1, x.shape[-1]).expand(self.runs, -1, -1)  # (runs, N actions, in)
        f, sigma, _ = self.scores_widths_and_kept(rows)
        noise = torch.randn(self.runs, samples, rows.shape[1], generator=generator,
                            device=self.device)
        draws = f.unsqueeze(1) + sigma.unsqueeze(1) * noise  # (runs, samples, N actions)
        return draws.reshape(self.runs, samples, n, self.n_actions)

    def state_dict(self) -> dict[str, Any]:
        design = ({"u_inv": self.u_inv} if self.config.exact_design
                  else {"u_diag": self.u_diag})
        return {**super().state_dict(), **design, "pending": list(self._pending)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if self.config.exact_design:
            self.u_inv = state["u_inv"].to(self.device).clone()
        else:
            self.u_diag = state["u_diag"].to(self.device).clone()
        self._pending = [g.to(self.device) for g in state["pending"]]


class NeuralTSAgent(NeuralUCBAgent):
    """NeuralTS: the action of largest draw from ``N(f(x_a), sigma_a^2)``."""

    name = "neuralts"
    thompson = True


def refuse_exact_design(config: Config, context_dim: int, n_actions: int) -> str | None:
    """Why ``exact_design`` cannot run on this network (its ``P x P`` design would be too
    large), or None."""
    if not config.exact_design:
        return None
    outputs = 2 if config.likelihood == "learned" else 1
    inputs = (context_dim * n_actions if config.encoding == "disjoint"
              else context_dim + n_actions)
    p = design_size(inputs, tuple(config.hidden), outputs)
    if p <= EXACT_DESIGN_MAX_PARAMS:
        return None
    return (f"--exact-design keeps a {p:,} x {p:,} design matrix per run "
            f"({4 * p * p / 2**20:,.0f} MiB) for this network of {p:,} parameters; it "
            f"takes at most {EXACT_DESIGN_MAX_PARAMS:,}: leave out --exact-design (the "
            "diagonal design) or give a smaller --hidden")


@dataclass
class Settings:
    """NeuralUCB's and NeuralTS's own settings."""

    nu: float = setting(1.0, "neuralucb, neuralts: exploration scale nu (1: this project's "
                        "untuned default; the papers chose nu per data set by grid search)",
                        range=(OPEN(0), 1e6))
    ucb_lambda: float = setting(
        1.0, "neuralucb, neuralts: regulariser lambda of the design "
        "matrix U = lambda I + sum g g^T (1: this project's default; the reference code's "
        "is 0.001 and the papers chose it per data set; kept in float32: a smaller lambda "
        "would underflow)", range=UCB_LAMBDA_RANGE)
    exact_design: bool = setting(
        False, "neuralucb, neuralts: keep the full design matrix (small networks only) "
        "instead of its diagonal (the papers' approximation)")


@dataclass
class Config(Settings, CommonSettings):
    """What NeuralUCB and NeuralTS read: the settings every network shares and their own,
    and nothing else."""


SPECS = (
    AgentSpec("neuralucb", NeuralUCBAgent, "NeuralUCB", "#DDCC77", linestyle="--",
              check=refuse_exact_design, settings=(Settings,), config=Config),
    AgentSpec("neuralts", NeuralTSAgent, "NeuralTS", "#44AA99", check=refuse_exact_design,
              linestyle="-.", settings=(Settings,), config=Config),
)
