"""A stack of (Bayesian or ordinary) linear layers with an activation between them
(:class:`MLP`), built by :func:`make_mlp`; the layers: :mod:`bandits.bayes.layers`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from bandits.bayes.layers import MODES, BayesLinear, RunsLinear
from bandits.bayes.priors import Prior

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "sigmoid": nn.Sigmoid}


class MLP(nn.Module):
    """A stack of (Bayesian or ordinary) linear layers with an activation between them."""

    def __init__(self, layers: Sequence[nn.Module], activation: str = "relu",
                 dropout: float = 0.0) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be in {sorted(_ACTIVATIONS)}, got {activation!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.layers = nn.ModuleList(layers)
        self.act = _ACTIVATIONS[activation]()
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < last:
                x = self.drop(self.act(x))
        return x

    def bayes_layers(self) -> list[BayesLinear]:
        return [m for m in self.layers if isinstance(m, BayesLinear)]

    @property
    def mode(self) -> str:
        modes = {m.mode for m in self.bayes_layers()}
        return modes.pop() if len(modes) == 1 else "mixed"

    def set_mode(self, mode: str) -> MLP:
        """Set the sampling mode (:data:`MODES`) of every Bayesian layer."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        for m in self.bayes_layers():
            m.mode = mode
        return self

    @contextmanager
    def sampling(self, mode: str) -> Iterator[MLP]:
        """Temporarily use another sampling mode: ``with model.sampling("mean"): ...``."""
        old = [m.mode for m in self.bayes_layers()]
        self.set_mode(mode)
        try:
            yield self
        finally:
            for m, o in zip(self.bayes_layers(), old):
                m.mode = o

    def resample(self) -> None:
        """Draw new held noise in every Bayesian layer."""
        for m in self.bayes_layers():
            m.resample()

    def complexity_cost(self, kind: str = "mc") -> Tensor:
        """Sum of the layers' complexity costs (see :meth:`BayesLinear.complexity_cost`)."""
        layers = self.bayes_layers()
        if not layers:
            raise ValueError("the model has no Bayesian layers, so it has no complexity cost")
        total = sum(m.complexity_cost(kind) for m in layers)
        assert isinstance(total, Tensor)  # layers is not empty
        return total


def make_mlp(
    in_features: int,
    hidden: Sequence[int],
    out_features: int,
    *,
    bayesian: bool = True,
    runs: int | None = None,
    prior: Prior | None = None,
    activation: str = "relu",
    dropout: float = 0.0,
    init_sigma: float = 0.01,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    estimator: str = "reparam",
) -> MLP:
    """Build an MLP ``in -> hidden[0] -> ... -> out``.

    Args:
        in_features: Input size.
        hidden: Sizes of the hidden layers.
        out_features: Output size.
        bayesian: :class:`BayesLinear` layers if true, else :class:`RunsLinear`.
        runs: Independent models held at once (see the module docstring).
        prior: Prior of every Bayesian layer (default: scale mixture).
        activation: ``"relu"``, ``"tanh"``, ``"elu"`` or ``"sigmoid"``.
        dropout: Dropout probability after each hidden activation.
        init_sigma: Initial posterior standard deviation (Bayesian layers).
        generator: Noise source shared by the Bayesian layers.
        estimator: How the Bayesian layers draw their noise (:data:`ESTIMATORS`).
    """
    sizes = [in_features, *hidden, out_features]
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        if bayesian:
            layers.append(BayesLinear(a, b, runs=runs, prior=prior, init_sigma=init_sigma,
                                      generator=generator, device=device, dtype=dtype,
                                      estimator=estimator))
        else:
            layers.append(RunsLinear(a, b, runs=runs, device=device, dtype=dtype))
    return MLP(layers, activation=activation, dropout=dropout)
