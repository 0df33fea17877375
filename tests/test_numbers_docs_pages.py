"""Numbers that the docs pages on the simulator, its settings, sweeps, environments, data
sets, the toy regression, the tests, the worked example, the library and long runs quote
in their prose (hand-written tables included), checked against the shipped files they
come from, or against the code's own constants where the number is a property of the
code (as tests/test_quoted_numbers.py does for the README and docs/index.md): a rerun or
a change of the code that moves a number without the page fails here."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
from functools import lru_cache

import page_numbers
import pandas as pd
from page_numbers import REPO, prose_numbers, snippets, unquoted
from test_quoted_numbers import QUOTES as FRONT
from test_quoted_numbers import _pin_cost

PAGES = ("docs/design-choices.md", "docs/simulator.md", "docs/sweeps.md",
         "docs/environments.md", "docs/datasets.md", "docs/regression.md", "docs/tests.md",
         "docs/worked-example.md", "docs/library.md", "docs/long-runs.md")


# --- the code's own constants -------------------------------------------------------


def _mushroom_rows() -> str:
    """The rows of the UCI Mushroom file, as the data module requires them."""
    from envs.mushroom_data import N_ROWS

    return f"{N_ROWS}"


def _mushroom_features() -> str:
    """The one-hot features of a mushroom: one column per attribute value."""
    from envs.mushroom_data import N_FEATURES

    return f"{N_FEATURES}"


def _mnist_train() -> tuple[int, int]:
    """MNIST's training images and pixels per image, as the IDX reader checks them."""
    from bandits.core.idx import MNIST_SHAPES

    n, *shape = MNIST_SHAPES["train_images"][1]
    return n, math.prod(shape)


def _pixel_scale() -> str:
    from bandits.core.idx import PIXEL_SCALE

    return f"{PIXEL_SCALE:g}"


def _wheel_default(name: str) -> float:
    """A default of the wheel bandit's rules."""
    from envs.wheel import WheelProblem

    return inspect.signature(WheelProblem.__init__).parameters[name].default


def _checkpoint_every(module: str, cls: str) -> str:
    """A command's default ``--checkpoint-every`` as the prose writes it (``300``)."""
    fields = dataclasses.fields(getattr(importlib.import_module(module), cls))
    return f"{next(f.default for f in fields if f.name == 'checkpoint_every'):g}"


def _weights(in_features: int, hidden, outputs: int = 1) -> int:
    """The weights and biases of one reward network of these sizes."""
    from agents.neural_ucb import design_size

    return design_size(in_features, tuple(hidden), outputs)


def _mushroom_network_weights() -> str:
    """BBB's reward network on Mushroom (context and one-hot action in, the default
    hidden layers), to the thousand as the prose writes it."""
    import envs
    from agents.base import CommonSettings

    context, actions = envs.SHAPES["mushroom"]
    return f"~{round(_weights(context + actions, CommonSettings().hidden), -3):,}"


def _disjoint_mnist_weights() -> str:
    """One network of the MNIST run under the papers' set-up: the disjoint input (a first
    layer of its own per arm) and the run's hidden layer (its ``config.json``)."""
    import envs

    config = json.loads((REPO / NEURAL_MNIST / "config.json").read_text())
    assert config["env"] == "mnist" and config["encoding"] == "disjoint", config
    context, arms = envs.SHAPES["mnist"]
    return f"{_weights(context * arms, config['hidden']):,}"


def _site_widths() -> tuple[int, ...]:
    from site_check import WIDTHS

    return WIDTHS


# --- the shipped results ---------------------------------------------------------------

SCREENS = "results/mushroom/screens/screens.csv"
TUNING = "results/mushroom/tuning.md"
KL_SEEN = "results/mushroom/paper-horizon-kl-seen"
BUFFER = "results/mushroom/paper-horizon"
SWEEP = "results/mushroom/sweeps/bbb-open-settings"
NEURAL_MNIST = "results/neural-bandits/mnist-reference"
NEURAL_MUSHROOM = "results/neural-bandits/mushroom-reference"
WHEEL = "results/wheel/showdown"
REGRESSION = "results/regression"


def _screen(prior: str, noise: float, act: int = 1, init: float = 0.02,
            prior_sigma: float | None = None, se: bool = True) -> str:
    """A row of the 10-seed screens at 3000 steps: final regret, mean +- s.e."""
    t = pd.read_csv(REPO / SCREENS)
    t = t[(t["agent"] == "bbb") & (t["prior"] == prior) & (t["noise_sigma"] == noise)
          & (t["act_samples"] == act) & (t["init_sigma"] == init)]
    if prior_sigma is not None:
        t = t[t["prior_sigma"] == prior_sigma]
    assert len(t) == 1, (prior, noise, act, init, prior_sigma)
    r = t.iloc[0]
    return f"{r['final_regret_mean']:.0f} +- {r['final_regret_sem']:.0f}" if se \
        else f"{r['final_regret_mean']:.0f}"


def _gauss(noise: float = 0.1, act: int = 1, init: float = 0.02, sigma: float = 1.0,
           se: bool = True) -> str:
    return _screen("gaussian", noise, act, init, sigma, se)


def _mixture(noise: float = 0.1, act: int = 1, se: bool = True) -> str:
    return _screen("mixture", noise, act, se=se)


def _tuning(steps_updates: str, changed: str) -> str:
    """BBB's mean regret of a row of the tuning runs' table (``tuning.md``)."""
    rows = [line for line in (REPO / TUNING).read_text(encoding="utf-8").splitlines()
            if line.startswith(f"| {steps_updates} | {changed} |")]
    assert len(rows) == 1, (steps_updates, changed)
    return rows[0].strip("|").split("|")[2].split()[0]


def _kl(run: str) -> str:
    """BBB's final regret of a 10-seed run at the paper's horizon, mean +- s.e."""
    t = pd.read_csv(REPO / run / "summary.csv").set_index("agent").loc["bbb"]
    return (f"{t['cumulative_regret_mean']:.0f} +- "
            f"{t['cumulative_regret_std'] / t['seeds'] ** 0.5:.0f}")


@lru_cache
def _sweep() -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    return (pd.read_csv(REPO / SWEEP / "sweep.csv"),
            pd.read_csv(REPO / SWEEP / "sweep_summary.csv"),
            json.loads((REPO / SWEEP / "sweep.json").read_text()))


def _sweep_range() -> str:
    """The lowest and highest point of the sweep and their 3-seed standard deviations."""
    _, s, meta = _sweep()
    mean, std = s["cumulative_regret_mean"], s["cumulative_regret_std"]
    return (f"between {mean.min():.0f} and {mean.max():.0f} final regret with "
            f"{meta['base']['seeds']}-seed\nstandard deviations of {std.min():.0f} to "
            f"{std.max():.0f}")


def _per(setting: str, value) -> str:
    """The sweep's final regret at one value of a setting, over the other two settings'
    points and the seeds: mean +- standard error."""
    runs, _, _ = _sweep()
    r = runs[runs[setting] == value]["cumulative_regret"]
    return f"{r.mean():.0f} +- {r.std() / len(r) ** 0.5:.0f}"


def _noise_lowest() -> str:
    """The sweep's likelihood noises, the lowest (as the page says: noise 0.1) first."""
    runs, _, _ = _sweep()
    means = runs.groupby("noise_sigma")["cumulative_regret"].mean()
    assert means.idxmin() == 0.1, means
    return (f"**noise 0.1** is lowest ({_per('noise_sigma', 0.1)}, against "
            f"{_per('noise_sigma', 0.05)} for\n0.05 and {_per('noise_sigma', 0.2)} for 0.2)")


def _sweep_counts() -> str:
    runs, _, meta = _sweep()
    per = {k: runs.groupby(k).size().unique() for k in meta["swept"]}
    assert all(len(v) == 1 for v in per.values()), per
    return (f"({per['noise_sigma'][0]} runs per value, {per['prior'][0]} per prior, "
            "mean +-")


def _worker_pays() -> int:
    """The updates below which a run starts no worker (bandits.simulator.parallel)."""
    from bandits.simulator.parallel import WORKER_PAYS
    return WORKER_PAYS

def _sweep_points() -> str:
    _, s, meta = _sweep()
    assert meta["points"] == len(s) and meta["failed"] == 0, meta
    return f"{meta['base']['seeds']} seeds each at the {meta['base']['preset']} preset, " \
           f"{meta['points']} points in"


def _sweep_grid() -> str:
    """The grid the sweep ran, as its ``sweep.json`` records it."""
    _, _, meta = _sweep()

    def values(name: str) -> str:
        return "{" + ", ".join(f"{v:g}" for v in meta["grid"][name]) + "}"

    return (f"likelihood noise {values('noise_sigma')} x\ninitial posterior sigma "
            f"{values('init_sigma')}")


def _wheel_deltas() -> str:
    deltas = pd.read_csv(REPO / WHEEL / "sweep_summary.csv")["wheel_delta"]
    return f"delta {deltas.min():g} to {deltas.max():g}"


def _mushroom_reference() -> str:
    """NeuralUCB's wall time in the Mushroom run under the papers' set-up (one pass)."""
    config = json.loads((REPO / NEURAL_MUSHROOM / "config.json").read_text())
    minutes = config["wall_seconds_per_agent"]["neuralucb"] / 60
    return (f"NeuralUCB's took about {minutes:.0f} minutes for {config['steps']:,} rounds of "
            f"{config['seeds']} seeds")


@lru_cache
def _made_with_mkl_avx2() -> str:
    """The shipped runs made with MKL in its AVX2 mode, which the page names: every
    run's record but the emulated checks' (whose commands set it themselves)."""
    found = sorted(str(p.parent.relative_to(REPO)) for p in (REPO / "results").rglob(
        "config.json") if "same-bytes" not in p.parts and "parts" not in p.parts
        and json.loads(p.read_text()).get("versions", {}).get("kernels", {}).get(
            "MKL_CBWR") == "AVX2")
    assert found == ["results/mushroom/memory-20k/decay-0.3-50k",
                     "results/mushroom/memory-20k/decay-0.3-50k-greedy",
                     "results/mushroom/memory-decay-0.3"], found
    runs = [json.loads((REPO / f / "config.json").read_text()) for f in found]
    assert {(r["weight_decay"], r["buffer_size"]) for r in runs[:2]} == {(0.3, 50000)}
    return (f"two runs of [decay {runs[0]['weight_decay']} at {runs[0]['buffer_size']:,} "
            "items]")


def _regression() -> tuple[pd.Series, pd.Series, pd.Series, dict]:
    t = pd.read_csv(REPO / REGRESSION / "regression.csv").set_index("model")
    config = json.loads((REPO / REGRESSION / "config.json").read_text())
    return t.loc["bbb-fixed"], t.loc["bbb-learned"], t.loc["dropout"], config


def _regression_bbb() -> str:
    fixed, _, _, _ = _regression()
    return (f"band covers {100 * fixed['coverage_95_inside']:.1f} % of the held-out points "
            f"inside the range and its predictive\nstd is "
            f"{fixed['std_ratio_outside_to_inside']:.1f} times larger outside it")


def _regression_dropout() -> str:
    _, _, dropout, _ = _regression()
    return (f"grows only {dropout['std_ratio_outside_to_inside']:.1f} times and covers "
            f"{100 * dropout['coverage_95_outside']:.0f} % of the points outside")


def _regression_learned() -> str:
    _, learned, _, config = _regression()
    return (f"noise explains the data as noise ({learned['learned_noise']:.1f} against "
            f"{config['noise']:g})")


def _regression_setup() -> str:
    _, _, _, config = _regression()
    return f"N(0, {config['noise']:g}^2)` from {config['points']} points"


QUOTES = [  # (the page, the text it must hold, built from the shipped files or the code)
    *(("docs/design-choices.md", text) for text in (
        lambda: f"final regret {_mixture()} (mean +- s.e.); with the Gaussian prior no seed "
                f"stops eating, {_gauss()}. A narrower Gaussian (sigma 0.3) was no better "
                f"({_gauss(sigma=0.3)}; with two samples {_gauss(act=2, sigma=0.3)})",
        lambda: f"two samples did better than one: {_gauss(act=2)} against {_gauss()} "
                f"(Gaussian prior), {_mixture(act=2)} against {_mixture()} (scale mixture)",
        lambda: f"the complexity cost of {_mushroom_network_weights()} weights",
        lambda: f"gave {_mixture(se=False)} (sigma 0.1), {_mixture(0.5, se=False)} (0.5), "
                f"{_mixture(2.0, se=False)} (2) with the scale mixture, "
                f"{_gauss(sigma=0.3, se=False)} (0.1) against "
                f"{_gauss(0.3, sigma=0.3, se=False)} (0.3) with a Gaussian prior of sigma 0.3 "
                f"(earlier tuning: {_tuning('2000 x 16', 'noise 1, init 0.05')} with sigma 1",
        lambda: f"lowered BBB's regret from {_kl(BUFFER)} to {_kl(KL_SEEN)}",
        lambda: f"was worse in the screen ({_gauss(init=0.1)} against {_gauss()}",
    )),
    *(("docs/simulator.md", text) for text in (
        _made_with_mkl_avx2,
        lambda: "measured the\ndefault command {} times as long pinned and the fused training "
                "step {} times".format(*_pin_cost()),
        lambda: f"MNIST pixels / {_pixel_scale()}",
        lambda: f"(disjoint inputs:\n{_disjoint_mnist_weights()} weights per run)",
        lambda: f"Mushroom (2 x {_mushroom_features()} inputs) {_mushroom_reference()}",
        lambda: f"A run of fewer than {_worker_pays():,} network updates",
    )),
    *(("docs/sweeps.md", text) for text in (
        _sweep_grid,
        _sweep_points,
        _sweep_range,
        _sweep_counts,
        _noise_lowest,
        lambda: f"beat 0.01 ({_per('init_sigma', 0.02).replace(' +-', chr(10) + '+-')} and "
                f"{_per('init_sigma', 0.05)} against {_per('init_sigma', 0.01)})",
        lambda: f"(Gaussian {_per('prior', 'gaussian')}, mixture {_per('prior', 'mixture')})",
    )),
    *(("docs/environments.md", text) for text in (
        lambda: f"| {_mushroom_features()} one-hot features, float32 |",
        lambda: f"from the {_mushroom_rows()} rows",
        lambda: f"Arm 0 pays N({_wheel_default('mu_1'):.1f}, σ²) everywhere; arms 1–4 pay "
                f"N({_wheel_default('mu_2'):.1f}, σ²)",
        lambda: f"pays N({_wheel_default('mu_3'):g}, σ²)",
        lambda: f"`delta` (default {_wheel_default('delta'):g}), "
                f"`sigma` ({_wheel_default('sigma'):g})",
        _wheel_deltas,
        lambda: f"(MNIST's pixels divided by {_pixel_scale()},\nMushroom's "
                f"{_mushroom_features()} one-hot features)",
    )),
    *(("docs/datasets.md", text) for text in (
        lambda: f"| UCI Mushroom, {_mushroom_rows()} rows | {_mushroom_features()} one-hot "
                "features |",
        lambda: f"| MNIST's {_mnist_train()[0]:,} training images, pixels / {_pixel_scale()} "
                f"| {_mnist_train()[1]} |",
    )),
    *(("docs/regression.md", text) for text in (
        _regression_setup,
        _regression_bbb,
        _regression_dropout,
        _regression_learned,
        lambda: f"time ({_regression()[3]['wall_seconds']:.1f} s with other work on the cores)",
    )),
    ("docs/tests.md", lambda: "at {} and {} px".format(*_site_widths())),
    ("docs/worked-example.md", lambda: f"log 2 = {math.log(2):.2f} at the first step"),
    *(("docs/long-runs.md", text) for text in (
        lambda: f"(default {_checkpoint_every('bandits.simulator.parts', 'OutputSettings')}; "
                "0 = after every step)",
        lambda: f"(default {_checkpoint_every('bandits.mnist.models.config', 'Config')}; 0: every "
                "epoch)",
    )),
]


# Numbers of each page's prose that are not results: years of the papers cited, section
# numbers, versions (of torch, of this package, an instruction set's name), exit statuses,
# and the settings of the runs and agents the page describes (steps, buffer sizes,
# widths, epsilons, priors' and likelihoods' sigmas, the grids searched, the papers'
# horizons). Every other number must be built by a check of QUOTES.
SETTINGS = {
    "docs/design-choices.md": {"2015", "3000", "0.3", "0.1", "0.5", "0.02", "20,000",
                               "50,000", "400", "1200"},
    "docs/simulator.md": {"2,000",
                          "2010", "2015", "2016", "2018", "2020", "2021", "7.2", "2.13", "512",
                          "100", "0.01", "0.05", "0.1", "0.001", "500", "1000", "2000",
                          "4096", "10,000", "15,000", "50,000",
                          "400", "200"},  # the steps of same_bytes's bandit and agents checks
    "docs/sweeps.md": {"130"},
    "docs/environments.md": {"2015", "5.3", "2018"},
    "docs/datasets.md": {"2018"},
    "docs/regression.md": set(),
    "docs/tests.md": {"2.11"},
    "docs/worked-example.md": {"2.13", "1,000", "0.5"},
    "docs/library.md": {"2015", "2018"},
    "docs/long-runs.md": {"0.1", "130"},
}

# The numbers of a snippet, written as the prose writes them (``8,124``, ``0.02``; a comma
# that ends a clause is not part of its number).
NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES, whitespace=False)
test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, lambda doc: unquoted(doc, snippets(doc, FRONT, QUOTES), SETTINGS[doc], NUMBER),
    add="a check to QUOTES")
test_every_setting_is_one_of_the_pages_prose = page_numbers.settings_test(
    SETTINGS, lambda text: set(prose_numbers(text)), PAGES)
