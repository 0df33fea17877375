"""What the neural agents share: a reward model ``f(context, action)`` trained from the buffer.

The network's input is the context concatenated with a one-hot action and its
output is the expected reward (Blundell et al. 2015, section 5.3), so scoring
all actions of a context is one forward call over ``n_actions`` rows.

**The training step** (:meth:`NeuralAgent.update`) does ``updates`` minibatch updates
of every run of the population without waiting for the device once: minibatch
indices are drawn on the device from the agent's generator and the buffer's
on-device length, the gradients of the per-weight terms are computed in a few
whole-tensor operations on the flat parameters (:mod:`bandits.bayes.flat`), the
optimiser steps them (torch's SGD with ``--optimizer sgd``; otherwise torch's fused AdamW
where the weights decay, by ``--weight-decay`` or BBB's ``--mean-decay``, and its fused
Adam where they do not), and the loss is returned as a device tensor. On CUDA,
:func:`agents.make_agents` has the whole sequence of updates captured once as a CUDA
graph and replayed on every later call (:mod:`agents.graph_capture`), so a step of 64
updates is one launch from Python.
"""

from __future__ import annotations

import abc
import sys
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from agents.base import Agent, CommonSettings
from agents.graph_capture import CapturedUpdates
from bandits.bayes import MLP, FlatMLP
from bandits.bayes.exact import power
from bandits.core.buffer import ReplayBuffer

LIKELIHOODS = ("fixed", "learned")


def gaussian_nll_output_grads(out: Tensor, rewards: Tensor, floor: float,
                              weights: Tensor | None = None, beta: float = 0.0
                              ) -> tuple[Tensor, Tensor]:
    """The heteroscedastic likelihood of a network's two outputs ``out (runs, batch, 2)``:
    the mean ``mu`` and ``s``, with noise ``sigma = floor + softplus(s)``. Returns the
    gradient of ``mean_b w_b nll_b`` at the outputs, ``(runs, batch, 2)``, and the per-datum
    ``nll_b = (r_b - mu_b)^2 / (2 sigma_b^2) + log sigma_b``, ``(runs, batch)``.

    The floor keeps the noise from explaining every outcome away (it is the noise of an
    exact reward); a noisy outcome's pull on the mean is divided by its ``sigma^2``, so the
    network averages noisy outcomes over similar inputs instead of fitting each one.

    ``beta > 0``: the beta-NLL of Seitzer et al. (2022), each datum's term weighted by
    ``sigma_b^(2 beta)`` held constant (a stop-gradient), so the mean's gradient is
    ``err * sigma^(2 beta - 2)``: beta = 1 gives the mean the squared error's gradient,
    beta = 0 is the plain NLL."""
    mu, s = out[..., 0], out[..., 1]
    sigma = F.softplus(s).add_(floor)
    err = mu - rewards
    inv_var = sigma.pow(-2)
    nll = err.square().mul(inv_var).mul_(0.5).add_(sigma.log())
    d_mu = err * inv_var
    d_sigma = (1.0 - err.square() * inv_var) / sigma
    d_s = d_sigma * torch.sigmoid(s)
    d_out = torch.stack([d_mu, d_s], dim=-1).div_(out.shape[1])
    if beta:
        d_out.mul_(power(sigma, 2.0 * beta).unsqueeze(-1))
    if weights is not None:
        d_out.mul_(weights.unsqueeze(-1))
    return d_out, nll


def epochs_need_sgd(fit: str, optimizer: str) -> str | None:
    """Why a network with this ``fit`` and ``optimizer`` cannot train: ``--fit epochs`` with
    Adam, whose step count all runs share (the command's check and the agent's, in one
    wording)."""
    if fit == "epochs" and optimizer != "sgd":
        return ("--fit epochs stops each run at its own step; it trains with --optimizer sgd "
                "(NeuralUCB's reference), not Adam")
    return None


class NeuralAgent(Agent):
    """An agent with a reward model trained by SGD, AdamW or Adam (see the module
    docstring) on minibatches from the buffer."""

    config: CommonSettings  # each agent names its own (CommonSettings and its settings)

    def __init__(self, *args: Any, compile: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._compile = compile
        self._compiled: dict = {}
        # Initial weights come from the agent's own seed, not torch's global state
        disjoint = self.config.encoding == "disjoint"  # see bandits.bayes.flat.FlatMLP
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._init_seed)
            model = self.build_model(self.context_dim * self.n_actions if disjoint else
                                     self.context_dim + self.n_actions)
        self.model = FlatMLP([model], arms=self.n_actions if disjoint else 0).to(self.device)
        cuda = self.device.type == "cuda"
        # fused: one kernel for all parameters (CPU and CUDA); capturable: its step
        # counter lives on the device, so the update can be captured in a CUDA graph.
        # decoupled weight decay of the weights, or of a Bayesian model's posterior means
        # (its rho is never decayed): the agent's own (decoupled_decay)
        decay = self.decoupled_decay()
        self._decay = decay  # its range: checked by Agent, as declared
        why = epochs_need_sgd(self.config.fit, self.config.optimizer)
        if why is not None:
            raise ValueError(why)
        if not compile:
            skip_dynamo_import()
        params = [{"params": [self.model.mu], "weight_decay": decay}]
        if self.model.bayesian:
            params.append({"params": [self.model.rho], "weight_decay": 0.0})
        if self.config.optimizer == "sgd":  # plain SGD's L2 term is the decoupled decay
            self.optimizer: torch.optim.Optimizer = torch.optim.SGD(params, lr=self.config.lr)
        elif decay:  # AdamW: w <- w - lr * decay * w besides the Adam step
            self.optimizer = torch.optim.AdamW(params, lr=self.config.lr,
                                               fused=True, capturable=cuda)
        else:
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.config.lr,
                                              fused=True, capturable=cuda)
        self._eye = torch.eye(self.n_actions, device=self.device)  # one-hot rows
        self._u = torch.empty(self.runs, self.config.batch_size, device=self.device)
        # the updates replayed from a CUDA graph, where agents.make_agents had them captured
        self.captured: CapturedUpdates | None = None

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.captured is not None:
            self.captured.reset()  # capture again

    @abc.abstractmethod
    def build_model(self, in_features: int) -> MLP:
        """The reward network with ``runs`` copies (on the CPU)."""

    @torch.no_grad()
    def gradients(self, x: Tensor, rewards: Tensor, n_data: Tensor, want_loss: bool
                  ) -> tuple[list[Tensor], Tensor | None]:
        """Gradients of the loss for every parameter of the model, and the loss per run.

        ``x (runs, batch, in)``, ``rewards (runs, batch)``, ``n_data``: the number of data
        the loss stands for (a device scalar, :meth:`data_count`). The loss is computed
        only if ``want_loss``. Here the squared error of a point-estimate network, or its
        learned-noise likelihood (:meth:`squared_error_gradients`); a Bayesian model
        overrides it.
        """
        return self.squared_error_gradients(x, rewards, want_loss)

    @torch.no_grad()
    def squared_error_gradients(self, x: Tensor, rewards: Tensor, want_loss: bool,
                                weights: Tensor | None = None,
                                masks: list[Tensor] | None = None
                                ) -> tuple[list[Tensor], Tensor | None]:
        """The gradient of ``mean_b w_b (f(x_b) - r_b)^2`` with respect to the network's
        flat weights, and that loss per run: ``weights (runs, batch)`` (default 1, as
        for ``rewards``), ``masks`` the dropout masks of the hidden layers (default none).
        With the ``learned`` likelihood the loss is ``mean_b w_b nll_b`` of
        :func:`gaussian_nll_output_grads` (floor ``noise_sigma``, ``nll_beta``) instead."""
        m = self.model
        inputs: list[Tensor] = []
        out = m.apply_layers(x, m.split(m.mu), inputs, masks)
        if self.learned_noise:
            d_out, nll = gaussian_nll_output_grads(out, rewards, self.config.noise_sigma,
                                                   weights, self.config.nll_beta)
        else:
            err = out.squeeze(-1) - rewards
            d_out = (err.mul(2.0 / err.shape[1]) if weights is None else (
                (err * weights).mul_(2.0 / err.shape[1]))).unsqueeze(-1)
        g = m.backward(inputs, m.mu, d_out, torch.empty_like(m.mu), masks)
        if not want_loss:
            return [g], None
        per_datum = nll if self.learned_noise else err.square()  # only when asked for
        return [g], (per_datum if weights is None else weights * per_datum).mean(dim=1)

    @property
    def learned_noise(self) -> bool:
        """Whether the network also predicts the reward's noise (``likelihood="learned"``)."""
        return self.config.likelihood == "learned"

    @property
    def n_outputs(self) -> int:
        """The network's outputs per input: the expected reward, and with the learned
        likelihood the noise's ``s`` (:func:`gaussian_nll_output_grads`)."""
        if self.config.likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {', '.join(LIKELIHOODS)}, "
                             f"got {self.config.likelihood!r}")
        return 2 if self.learned_noise else 1

    def means(self, out: Tensor) -> Tensor:
        """The expected rewards of a network's output ``(..., n_outputs) -> (...)``."""
        return out[..., 0]

    def maybe_compiled(self, fn):
        """``fn`` itself, or with ``compile`` its ``torch.compile`` (compiled on first use)."""
        if not self._compile:
            return fn
        if fn not in self._compiled:
            self._compiled[fn] = torch.compile(fn, dynamic=False, fullgraph=True)
        return self._compiled[fn]

    def inputs(self, contexts: Tensor, actions: Tensor) -> Tensor:
        """``contexts (..., d)``, ``actions (...)`` -> network inputs ``(..., d + n_actions)``."""
        return torch.cat([contexts, self._eye[actions]], dim=-1)

    @torch.no_grad()
    def point_predictions(self, contexts: Tensor, samples: int) -> Tensor:
        """The network's reward predictions for every action of ``contexts (N, d)``, per
        run, as :meth:`~agents.base.Agent.predict_samples` gives them:
        ``(runs, samples, N, n_actions)``, the samples equal (a point estimate's)."""
        x = self.all_action_inputs(contexts)  # (N, n_actions, in)
        n = x.shape[0]
        x = x.reshape(1, -1, x.shape[-1]).expand(self.runs, -1, -1)
        pred = self.means(self.model(x)).reshape(self.runs, 1, n, self.n_actions)
        return pred.expand(-1, samples, -1, -1)

    def all_action_inputs(self, contexts: np.ndarray | Tensor) -> Tensor:
        """All actions of each run's context: ``(runs, d) -> (runs, n_actions, d + n_actions)``."""
        c = torch.as_tensor(contexts, dtype=torch.float32, device=self.device)
        c = c.unsqueeze(1).expand(-1, self.n_actions, -1)  # (runs, n_actions, d)
        eye = self._eye.expand(c.shape[0], -1, -1)  # (runs, n_actions, n_actions)
        return torch.cat([c, eye], dim=-1)

    def minibatch_gradients(self, buffer: ReplayBuffer, want_loss: bool
                            ) -> tuple[list[Tensor], Tensor | None]:
        """Draw one minibatch per run and return :meth:`gradients` on it (the loss per run)."""
        return self.batch_gradients(buffer, buffer.indices(self.fill_random_(self._u, "uniform")),
                                    want_loss)

    def batch_gradients(self, buffer: ReplayBuffer, idx: Tensor, want_loss: bool
                        ) -> tuple[list[Tensor], Tensor | None]:
        """:meth:`gradients` on the items ``idx (runs, batch)`` of each run's buffer."""
        batch = buffer.gather(idx)
        x = self.inputs(batch.contexts, batch.actions)  # (runs, batch, in)
        return self.gradients(x, batch.rewards, self.data_count(buffer), want_loss)

    def decoupled_decay(self) -> float:
        """The decoupled weight decay of the network's weights: ``--weight-decay`` (BBB
        decays its posterior means by its own ``--mean-decay``)."""
        return self.config.weight_decay

    def data_count(self, buffer: ReplayBuffer) -> Tensor:
        """The number of data the loss stands for (a device scalar): the items in the
        buffer (BBB may count every interaction seen; the squared-error agents do not
        use it)."""
        return buffer.size

    def _one_update(self, buffer: ReplayBuffer, want_loss: bool) -> Tensor | None:
        grads, loss = self.minibatch_gradients(buffer, want_loss)
        self._step(grads)
        return loss

    def _updates(self, buffer: ReplayBuffer, updates: int) -> Tensor | None:
        if self.config.weight_decay_per_datum:
            self.optimizer.param_groups[0]["weight_decay"] = self._decay / len(buffer)
        if self.config.fit == "epochs":
            return fit_epochs(self, buffer, updates)
        loss = None
        for i in range(updates):
            if self.config.fit == "full":  # every item of the buffer, every step
                n = len(buffer)
                idx = torch.arange(n, device=self.device).expand(self.runs, n)
                grads, loss = self.batch_gradients(buffer, idx, want_loss=i == updates - 1)
                self._step(grads)
            else:
                loss = self._one_update(buffer, want_loss=i == updates - 1)
        return loss

    def _step(self, grads: list[Tensor]) -> None:
        for p, g in zip(self.model.parameters(), grads):
            p.grad = g
        if not fused_adam_step(self.optimizer):
            self.optimizer.step()

    def update(self, buffer: ReplayBuffer, updates: int = 1) -> Tensor | None:
        """``updates`` optimiser steps, each on a fresh minibatch per run.

        Returns the loss per run of the last update, ``(runs,)``, on the device (read it
        only now and then: reading waits for the device).
        """
        if len(buffer) == 0:
            raise ValueError("cannot update from an empty replay buffer: add interactions first")
        if self.captured is not None:  # replayed from a CUDA graph (agents.graph_capture)
            return self.captured(buffer, updates)
        return self._updates(buffer, updates)


_DYNAMO_DISABLED = (torch.optim.Optimizer.add_param_group, torch.optim.Optimizer.state_dict,
                    torch.optim.Optimizer.load_state_dict, torch.optim.Optimizer.zero_grad)
"""The optimiser's methods torch wraps in ``torch._disable_dynamo``: each imports
``torch._dynamo`` on its first call (about 3 s of CPU), to keep ``torch.compile`` from
tracing into it."""


def skip_dynamo_import() -> None:
    """Keep :data:`_DYNAMO_DISABLED` from importing ``torch._dynamo`` in a process that
    compiles nothing: each wrapper caches the function it calls on that function's
    ``__dynamo_disable`` attribute, and here that is the method itself (what the wrapper
    would call outside ``torch.compile`` anyway). Nothing where ``torch._dynamo`` is
    already loaded, or where a torch release no longer wraps them so."""
    if "torch._dynamo" in sys.modules:
        return
    for wrapper in _DYNAMO_DISABLED:
        method = getattr(wrapper, "__wrapped__", None)
        if method is not None and getattr(method, "__dynamo_disable", None) is None:
            setattr(method, "__dynamo_disable", method)


@torch.no_grad()
def fused_adam_step(optimizer: torch.optim.Optimizer) -> bool:
    """The step of torch's fused Adam or AdamW without ``Optimizer.step``'s Python around
    it: per parameter group, the two kernels that step calls (the step counts'
    ``_foreach_add_``, then ``_fused_adam_`` or ``_fused_adamw_``) with the same
    arguments, so the same bytes, at a third of the time of a small network's step (and
    without ``Optimizer.step``'s import of ``torch._dynamo``: seconds of a short run's
    start). A parameter's state is made on its first step as that step makes it (a zero
    step count and zero moments). False, with nothing done, for another optimiser,
    options this does not take (amsgrad, maximize, capturable) or a parameter without a
    gradient: the caller then steps it the usual way."""
    if type(optimizer) not in (torch.optim.Adam, torch.optim.AdamW):
        return False
    work = []
    for group in optimizer.param_groups:
        if (not group["fused"] or group["amsgrad"] or group["maximize"]
                or group["capturable"] or group["differentiable"]):
            return False
        params = group["params"]
        if any(p.grad is None for p in params):
            return False
        work.append((group, params))
    for group, params in work:
        states = [optimizer.state[p] or _first_state(optimizer, p) for p in params]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, 1)
        kernel = torch._fused_adamw_ if group["decoupled_weight_decay"] else torch._fused_adam_
        beta1, beta2 = group["betas"]
        kernel([p for p in params], [p.grad for p in params], [s["exp_avg"] for s in states],
               [s["exp_avg_sq"] for s in states], [], steps, amsgrad=False, lr=group["lr"],
               beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
               eps=group["eps"], maximize=False, grad_scale=None, found_inf=None)
    return True


def _first_state(optimizer: torch.optim.Optimizer, p: Tensor) -> dict[str, Tensor]:
    """A fused Adam's state of ``p`` before its first step, as ``Optimizer.step`` makes it
    (the same keys in the same order, so the same checkpoint)."""
    optimizer.state[p] = {
        "step": torch.zeros((), dtype=torch.float32, device=p.device),
        "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
        "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}
    return optimizer.state[p]


@torch.no_grad()
def fit_epochs(agent: NeuralAgent, buffer: ReplayBuffer, max_steps: int) -> Tensor:
    """Shuffled passes over each run's whole buffer in minibatches of ``batch_size``, each
    run until the mean loss of one of its epochs is at most ``fit_tolerance`` (it then
    stops: its weights stay as they are) or ``max_steps`` steps are taken in all (as
    NeuralUCB's reference trains, with minibatches of one). The runs shuffle with the
    agent's generator. Returns each run's last
    epoch's mean loss (of the epoch cut short, if the steps ran out first)."""
    n, size = len(buffer), agent.config.batch_size
    active = torch.ones(agent.runs, dtype=torch.bool, device=agent.device)
    steps = 0
    while True:
        order = agent.fill_random_(torch.empty(agent.runs, n, device=agent.device),
                                   "uniform").argsort(dim=1)  # (runs, n): each run's pass
        total = torch.zeros(agent.runs, device=agent.device)
        seen = 0
        for start in range(0, n, size):
            idx = order[:, start:start + size]
            grads, loss = agent.batch_gradients(buffer, idx, want_loss=True)
            assert loss is not None  # asked for
            if bool(active.all()):  # no run has stopped: a plain step
                agent._step(grads)
            else:  # stopped runs keep their weights: their rows (runs first) put back
                stopped = ~active
                before = [p.detach()[stopped] for p in agent.model.parameters()]  # copies
                agent._step(grads)
                for p, old in zip(agent.model.parameters(), before):
                    p.detach()[stopped] = old
            total += loss * idx.shape[1]
            seen += idx.shape[1]
            steps += 1
            if steps >= max_steps:
                return total / seen
        mean = total / seen
        active &= mean > agent.config.fit_tolerance
        if not active.any():
            return mean

