"""The learners of the learner screen (:mod:`bandits.studies.learner_screen`): an agent of
:mod:`agents` with its settings, each named; the reference rows screened at every buffer
size; the decay x buffer grid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Learner:
    """An agent of :mod:`agents` with its settings, as the screen trains it."""

    agent: str
    settings: dict[str, Any] = field(default_factory=dict)  # AgentConfig overrides
    note: str = ""
    targets: str = "outcomes"  # or "means": the oracle, trained on the mean reward
    buffer_size: int | None = None  # None: --buffer-size
    eat_rate_factor: float = 1.0  # the oracle with half the information: 0.5
    ridge: bool = False  # ridge regression on the one-hot features instead of the agent


REFERENCES: dict[str, Learner] = {
    "oracle": Learner("greedy", {}, "squared error on the mean reward, not the outcome "
                      "(the floor)", targets="means"),
    "oracle-half": Learner("greedy", {}, "the oracle with half the poisonous bites "
                           "(half the eat rate)", targets="means", eat_rate_factor=0.5),
    "ridge": Learner("greedy", {}, "ridge regression (lambda 1) on the one-hot features, "
                     "outcomes", ridge=True),
    "ridge-means": Learner("greedy", {}, "ridge regression (lambda 1) on the one-hot "
                           "features, mean rewards", targets="means", ridge=True),
}
"""The reference rows, screened at every buffer size of the learners asked for."""


LEARNERS: dict[str, Learner] = {
    "greedy": Learner("greedy", {}, "squared error (every point-estimate agent's default)"),
    "greedy-learned": Learner("greedy", {"likelihood": "learned"},
                              "learned noise per context, Gaussian NLL, floor 0.1"),
    "greedy-learned-floor-1": Learner("greedy", {"likelihood": "learned", "noise_sigma": 1.0},
                                      "learned noise, floor 1"),
    "greedy-beta-0.5": Learner("greedy", {"likelihood": "learned", "nll_beta": 0.5},
                               "beta-NLL, beta 0.5, floor 0.1"),
    "greedy-beta-1": Learner("greedy", {"likelihood": "learned", "nll_beta": 1.0},
                             "beta-NLL, beta 1, floor 0.1"),
    "greedy-wd-0.1": Learner("greedy", {"weight_decay": 0.1}, "AdamW weight decay 0.1"),
    "greedy-wd-1": Learner("greedy", {"weight_decay": 1.0}, "AdamW weight decay 1"),
    "greedy-wd-3": Learner("greedy", {"weight_decay": 3.0}, "AdamW weight decay 3"),
    "greedy-wd-10": Learner("greedy", {"weight_decay": 10.0}, "AdamW weight decay 10"),
    "greedy-last-10": Learner("greedy", {"hidden": (100, 10)}, "a smaller last layer, 100 x 10"),
    "greedy-buffer-50k": Learner("greedy", {}, "squared error, a buffer of 50,000",
                                 buffer_size=50_000),
    "dropout": Learner("dropout", {}, "MC dropout 0.2, squared error (mean network)"),
    "bbb": Learner("bbb", {}, "fixed noise 0.1 (the default)"),
    "bbb-noise-1": Learner("bbb", {"noise_sigma": 1.0}, "fixed noise 1"),
    "bbb-noise-5": Learner("bbb", {"noise_sigma": 5.0}, "fixed noise 5"),
    "bbb-noise-10": Learner("bbb", {"noise_sigma": 10.0}, "fixed noise 10"),
    "bbb-noise-20": Learner("bbb", {"noise_sigma": 20.0},
                            "fixed noise 20 (the eaten poisonous reward's own std)"),
    "bbb-learned": Learner("bbb", {"likelihood": "learned"},
                           "learned noise per context, floor 0.1"),
    "bbb-beta-0.5": Learner("bbb", {"likelihood": "learned", "nll_beta": 0.5},
                            "beta-NLL, beta 0.5, floor 0.1"),
    "bbb-beta-1": Learner("bbb", {"likelihood": "learned", "nll_beta": 1.0},
                          "beta-NLL, beta 1, floor 0.1"),
    "bbb-prior-0.1": Learner("bbb", {"prior_sigma": 0.1},
                             "Gaussian prior sigma 0.1 (the Bayesian weight decay)"),
    "bbb-prior-0.03": Learner("bbb", {"prior_sigma": 0.03}, "Gaussian prior sigma 0.03"),
    "bbb-buffer-50k": Learner("bbb", {}, "fixed noise 0.1, a buffer of 50,000",
                              buffer_size=50_000),
}

MAIN = list(LEARNERS)
"""The learners of the first screen, all at ``--buffer-size`` unless they name their own."""

# the grid of decoupled decay and history: the point-estimate networks' AdamW decay, BBB's
# decay of its posterior means, each at three buffer sizes
for _decay in (0.3, 1.0, 3.0):
    for _size, _tag in ((4096, "4k"), (16_384, "16k"), (50_000, "50k")):
        LEARNERS[f"greedy-wd-{_decay:g}-{_tag}"] = Learner(
            "greedy", {"weight_decay": _decay}, f"AdamW weight decay {_decay:g}, buffer "
            f"{_size:,}", buffer_size=_size)
        LEARNERS[f"bbb-md-{_decay:g}-{_tag}"] = Learner(
            "bbb", {"mean_decay": _decay}, f"decoupled decay {_decay:g} of the posterior "
            f"means, buffer {_size:,}", buffer_size=_size)

GRID = [name for name in LEARNERS if name not in MAIN]
"""The decay x buffer grid (``--learner grid`` asks for all of it)."""

METRICS = ("never_eaten", "last_paid_5", "last_paid_35", "edible_uneaten")
