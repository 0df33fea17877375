"""The agent contract and the settings shared by every agent.

An agent is a population of ``runs`` independent learners that advance in lockstep. It
has two methods (as in bsuite's baselines):

* ``act(contexts)`` chooses one action per run. It may draw randomness but never
  learns. The actions stay on the agent's device (a tensor); the runner copies them to
  the host once per step, where the environment needs them.
* ``update(buffer, updates)`` takes ``updates`` gradient steps, each on one minibatch per
  run. It is the only place learning happens; the runner decides how often to call it.
  It returns the loss per run as a device tensor and never waits for the device.

Every run of an agent has its own seed and its own settings are the agent's; its
generators are its own, so an agent's numbers depend only on its seeds and settings, never
on the agents beside it (:func:`agents.make_agents` builds one agent per name).
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bandits.core.buffer import ReplayBuffer
from bandits.core.config import COUNT, OPEN, check_ranges, setting


@dataclass
class CommonSettings:
    """The settings every neural agent reads (its own: each agent module's ``Settings``,
    named in its spec). :class:`agents.AgentConfig` holds them with every registered
    agent's own; ``python -m bandits.run`` offers each as a flag."""

    hidden: tuple[int, ...] = setting(
        (100, 100), "hidden layer sizes of the reward network", range=(1, 100_000), nargs="+")
    lr: float = setting(1e-3, "learning rate of every neural agent's optimiser",
                        range=(OPEN(0), math.inf))
    batch_size: int = setting(64, "minibatch size of each update", range=COUNT)
    noise_sigma: float = setting(
        0.1, "BBB Gaussian likelihood noise sigma of the reward; with --likelihood "
        "learned, the floor of every neural agent's learned noise", range=(1e-3, 1e3))
    # the reward's likelihood: "fixed" (BBB: Gaussian noise noise_sigma; the others: squared
    # error) or "learned" (heteroscedastic: the network also predicts the noise of each
    # context and action, sigma = noise_sigma + softplus(s), trained by Gaussian NLL)
    likelihood: str = setting(
        "fixed", "every neural agent's reward likelihood: fixed (BBB: "
        "Gaussian with --noise-sigma; the others: squared error) or learned (the "
        "network also predicts the noise of each context and action, at least "
        "--noise-sigma, trained by Gaussian negative log-likelihood)",
        choices=["fixed", "learned"])
    # beta-NLL (Seitzer et al. 2022) with the learned likelihood: each datum's NLL weighted
    # by sigma^(2 beta), held constant; 0: the plain NLL, 1: the mean learns as by squared error
    nll_beta: float = setting(
        0.0, "with --likelihood learned: beta-NLL (Seitzer et al. 2022), "
        "each datum's negative log-likelihood weighted by sigma^(2 beta) held constant "
        "(0: the plain NLL; 1: the mean learns as by squared error)", range=(0, 1))
    # decoupled weight decay (AdamW) of the point-estimate networks' weights; 0: plain Adam.
    # BBB's means are not decayed: its prior is its regulariser
    optimizer: str = setting(
        "adam", "the networks' optimiser: 'adam' (this project's) or 'sgd' (plain gradient "
        "descent with --lr, the NeuralUCB and NeuralTS reference code's, there at lr 0.01; "
        "its --weight-decay is their L2 term)", choices=["adam", "sgd"])
    fit: str = setting(
        "steps", "what one training call does: 'steps' (--updates-per-step minibatches "
        "drawn with replacement: this project's), 'epochs' (shuffled passes over the whole "
        "buffer in minibatches of --batch-size, each run until an epoch's mean loss is at "
        "most --fit-tolerance or --updates-per-step steps are taken: NeuralUCB's reference, "
        "with --batch-size 1 --updates-per-step 1000 --optimizer sgd) or 'full' "
        "(--updates-per-step steps on the whole buffer at once: NeuralTS's reference, with "
        "100)", choices=["steps", "epochs", "full"])
    fit_tolerance: float = setting(
        1e-3, "with --fit epochs: the epoch's mean loss at which a run stops training",
        range=(0, 1e6), acts_when=(lambda c: c["fit"] == "epochs", "add --fit epochs"))
    weight_decay_per_datum: bool = setting(
        False, "divide --weight-decay by the items in the buffer at each training call "
        "(NeuralTS's reference: lambda / t)")
    encoding: str = setting(
        "onehot", "how a network sees an action: 'onehot' (the context and a one-hot of "
        "the action, this project's) or 'disjoint' (the NeuralUCB and NeuralTS papers' "
        "x_a = (0, ..., x, ..., 0): a first layer of its own per action, kept as per-arm "
        "blocks); the linear agents keep a model per action either way",
        choices=["onehot", "disjoint"])
    weight_decay: float = setting(
        0.0, "weight decay of the point-estimate networks (greedy, epsilon-greedy, "
        "dropout, bootstrap, neurallinear, neuralucb, neuralts): AdamW's decoupled decay, "
        "or with --optimizer sgd the L2 term; BBB's prior is its own regulariser (0: none)",
        range=(0, 10.0))


@dataclass
class NoSettings:
    """The settings of an agent that reads none (``uniform``)."""


AgentSettings = Any
"""An agent's settings as its spec passes them around (to ``networks``, ``check`` and a
:class:`Agent`): an instance of that spec's ``config``. Each agent class names its own
type (``config: Config``), so a type checker sees every field an agent reads."""


def _one_network(config: AgentSettings) -> int:
    return 1


def _no_check(config: AgentSettings, context_dim: int, n_actions: int) -> str | None:
    return None


@dataclass(frozen=True)
class AgentSpec:
    """An agent as the registry (:data:`agents.SPECS`) holds it, declared in the agent's
    own module: everything the rest of the project knows of it.

    Attributes:
        name: The name ``--agent`` takes.
        cls: Its :class:`Agent` class.
        label: How figures and tables name it.
        color: Its colour in every figure (a matplotlib colour; the project's agents take
            theirs from the Okabe-Ito and Paul Tol palettes, told apart by colour-blind readers).
        overrides: The settings that differ from their defaults for this name
            (``eps1``: ``{"epsilon": 0.01}``).
        cost: The cost of one of its runs, relative to a plain network's: the worker
            processes are balanced by it.
        networks: The networks one run holds, from the settings (an ensemble's heads):
            the memory estimate counts them.
        check: Why these settings cannot run for this agent on contexts of
            ``context_dim`` features and ``n_actions`` actions (one line), or None;
            asked before anything is allocated.
        settings: The dataclasses of the agent's own settings (each field made with
            :func:`bandits.core.config.setting`: a flag of ``bandits.run``, with its help and
            range), beside :class:`CommonSettings`. Agents may share one (``bbb`` and
            ``bbb-lrt``); each setting has one owner.
        config: The dataclass its agents receive as their settings: :class:`CommonSettings`
            where it is ``neural``, and its ``settings``, nothing else (checked when the
            spec is made; :class:`NoSettings` for an agent that reads none). An agent
            module declares it (``class Config(Settings, CommonSettings)``) so that its
            class can name it (``config: Config``) and a type checker sees every field.
        columns: Per-step quantities of the agent (:meth:`Agent.step_values` gives them),
            each a column of ``metrics.csv`` after the regret's.
        neural: Whether it holds a network, and so reads :class:`CommonSettings`: a run
            that lists no such agent refuses their flags.
        linestyle: Its line style in every figure of one run (a matplotlib line style), so
            that agents of near colours (greedy, 1 % and 5 % greedy) differ in grey too.
    """

    name: str
    cls: type[Agent]
    label: str
    color: str
    overrides: dict[str, Any] = field(default_factory=dict)
    cost: float = 1.0
    networks: Callable[[AgentSettings], int] = _one_network
    check: Callable[[AgentSettings, int, int], str | None] = _no_check
    settings: tuple[type, ...] = ()
    config: type = NoSettings
    columns: tuple[str, ...] = ()
    neural: bool = True
    linestyle: str = "-"

    def __post_init__(self) -> None:
        parts = [*((CommonSettings,) if self.neural else ()), *self.settings]
        own = {f.name for part in parts for f in dataclasses.fields(part)}
        given = {f.name for f in dataclasses.fields(self.config)}
        if given != own:
            raise TypeError(f"agent {self.name!r}: its config {self.config.__qualname__} "
                            f"has the settings {sorted(given)}, but its spec declares "
                            f"{sorted(own)} (CommonSettings where neural, and its settings)")

    def own(self, settings: Any) -> AgentSettings:
        """This agent's settings from ``settings`` (any object with at least its fields:
        :data:`agents.AgentConfig`, a run's settings), with its ``overrides``."""
        values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(self.config)}
        return self.config(**{**values, **self.overrides})


class Agent(abc.ABC):
    """``runs`` learners (one per seed) choosing among ``n_actions`` actions.

    Args:
        context_dim: Size of a context vector.
        n_actions: Number of actions.
        runs: Runs (seeds), advanced in lockstep.
        name: The name it is registered as (``eps1``; the registry's key).
        seed: The entropy of its generators (an int or a sequence of ints).
        config: Its settings: an instance of its spec's ``config``.
        device: Torch device of the model and of the actions ``act`` returns.
    """

    name = "agent"  # the kind; an instance's is the name it is registered as
    learns = True
    config: AgentSettings  # each agent class names its own type

    def __init__(
        self,
        context_dim: int,
        n_actions: int,
        runs: int,
        name: str,
        seed: int | Sequence[int],
        config: AgentSettings,
        device: torch.device | str = "cpu",
    ) -> None:
        self.context_dim, self.n_actions, self.runs = context_dim, n_actions, runs
        self.name, self.config = name, config
        check_ranges(config, ValueError)  # every range where it is declared (the command
        self.device = torch.device(device)  # checks the same before it builds anything)
        np_seed, torch_seed, init_seed = np.random.SeedSequence(seed).generate_state(3)
        self.rng = np.random.default_rng(int(np_seed))
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(torch_seed))
        self._init_seed = int(init_seed)

    def fill_random_(self, out: Tensor, distribution: str) -> Tensor:
        """Fill ``out (runs, ...)`` in place with random numbers from the agent's
        generator: ``distribution`` is ``"normal"`` (N(0, 1)) or ``"uniform"`` (U[0, 1))."""
        if distribution == "normal":
            return out.normal_(generator=self.generator)
        return out.uniform_(generator=self.generator)

    @abc.abstractmethod
    def act(self, contexts: np.ndarray | Tensor) -> Tensor:
        """One action per run: ``contexts (runs, context_dim) -> actions (runs,)`` int64."""

    def step_values(self) -> dict[str, Tensor]:
        """The per-step quantities its spec's ``columns`` name, of the last ``act`` (and
        ``update``): one ``(runs,)`` tensor each. None by default."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """Everything that changes as the agent acts and learns (for checkpoints). The
        generators' states are lists of one, as checkpoints have always held them."""
        return {"generators": [self.generator.get_state()],
                "rngs": [self.rng.bit_generator.state]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (same agent, same settings)."""
        if len(state["generators"]) != 1 or len(state["rngs"]) != 1:
            raise ValueError("the state holds the generators of several agents, not this one's")
        self.generator.set_state(state["generators"][0])
        self.rng.bit_generator.state = state["rngs"][0]

    def update(self, buffer: ReplayBuffer, updates: int = 1) -> Tensor | None:
        """``updates`` gradient steps on fresh minibatches; the loss per run (``None``: none)."""
        return None

    def predict_samples(self, contexts: Tensor, samples: int, generator: torch.Generator
                        ) -> Tensor | None:
        """The reward model's predictions for every action of ``contexts (N, d)`` under
        ``samples`` draws per run, ``(runs, samples, N, n_actions)``, any randomness drawn
        from ``generator`` (never from the agent's own: looking changes nothing); ``None``
        where the agent has no reward model the probes can look at (the default)."""
        return None
