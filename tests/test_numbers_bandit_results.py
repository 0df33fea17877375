"""The numbers of docs/bandit-results.md's prose (and of its hand-written table), outside
the generated tables, checked against the shipped files they come from, as
tests/test_quoted_numbers.py checks the front pages: a rerun that changes a file without
the prose fails here, and a number the prose adds without a check or a declared setting
fails the last test."""

from __future__ import annotations

import json
import math
from decimal import ROUND_HALF_UP, Decimal

import page_numbers
import pandas as pd
import test_quoted_numbers as front
from page_numbers import GROUPED_NUMBER, REPO, snippets, starved, unquoted
from test_quoted_numbers import (
    ALONE,
    BESIDE_GREEDY,
    DECAY_1,
    DECAYS,
    GRID,
    GRID_50K,
    NEW_BUFFERS,
    PRESET,
    REVISED,
    _late,
    _screen,
    _times_floor,
)

PAGE = "docs/bandit-results.md"

PAPER = "results/mushroom/paper-horizon"
KL_SEEN = "results/mushroom/paper-horizon-kl-seen"
SCREEN_20K = "results/mushroom/screens/20k/screen20k.csv"
SWEEPS = "results/mushroom/sweeps"
FIRST_SCREEN = "results/mushroom/learner-screen"
H100 = "results/mushroom/paper-preset-h100"
QUICK_10K = "results/mushroom/quick-10k"
SHOWDOWN = "results/mushroom/showdown"
WHEEL = "results/wheel/showdown/sweep_summary.csv"


def _config(run: str) -> dict:
    return json.loads((REPO / run / "config.json").read_text())


def _wall(run: str) -> str:
    """A run's wall time as the prose writes it: ``44 min 30 s``, ``1 h 18 min 58 s``."""
    hours, rest = divmod(round(_config(run)["wall_seconds"]), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours} h {minutes} min {seconds} s" if hours else f"{minutes} min {seconds} s"


def _half_up(value: float) -> str:
    """A whole number rounded half up, as the 20,000-step screen's own page rounds it."""
    return str(Decimal(str(value)).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def _span(values, digits: int) -> str:
    """``min-max`` of some numbers, each to ``digits`` decimals."""
    values = list(values)
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


# --- Figure 6 at the paper's horizon --------------------------------------------------------

def _paper_set_up() -> str:
    c = _config(PAPER)
    return (f"{c['steps']:,} steps, {c['seeds']} seeds, {c['updates_per_step']} updates of "
            f"{c['batch_size']}")


def _torch() -> str:
    return f"(torch {_config(PAPER)['versions']['torch'].removesuffix('+cpu')} CPU build"


def _starved() -> str:
    """The greedy seed that stopped eating: the stretch of phases without one eat, and what
    that seed paid in all."""
    p, (start, end, seed) = starved(PAPER)
    paid = p[p["seed"] == seed]["regret"].sum()
    return f"it ate nothing from step {start:,} to {end:,} ({paid:,} regret)"


def _late_poisonous_bites() -> str:
    """BBB's share of steps with a poisonous mushroom eaten over the last 10,000 steps."""
    d = pd.read_csv(REPO / PAPER / "diagnosis.csv")
    d = d[(d["agent"] == "bbb") & (d["start"] > d["end"].max() - 10_000)]
    steps = d["end"] - d["start"] + 1
    rate, left = ((d[c] * steps).sum() / steps.sum() for c in ("ate_poisonous_rate",
                                                                "left_edible_rate"))
    assert left < rate / 5, (rate, left)  # "almost all poisonous mushrooms eaten"
    return f"(about {100 * rate:.1f} % of steps)"


def _spread_grows() -> str:
    """The spread of BBB's sampled reward for eating a poisonous probe mushroom: at step
    3000, and from step 20,000 on."""
    p = pd.read_csv(REPO / PAPER / "probes.csv")
    p = p[(p["agent"] == "bbb") & (p["action"] == 1) & (p["best_action"] == 0)]
    at = p.groupby("step")["predicted_std"].mean()
    return f"(from {at[3000]:.0f} at step 3000 to about {at[at.index >= 20_000].mean():.0f})"


# --- what was tried to flatten BBB's curve ---------------------------------------------------

def _kl_seen_row() -> str:
    s = pd.read_csv(REPO / KL_SEEN / "summary.csv").set_index("agent").loc["bbb"]
    se = s["cumulative_regret_std"] / math.sqrt(s["seeds"])
    return f"| {s['cumulative_regret_mean']:.0f} +- {se:.0f} | {_late(KL_SEEN, 'bbb'):.3f} (steps"


def _screen_20k(point: str) -> pd.Series:
    t = pd.read_csv(REPO / SCREEN_20K).set_index("point")
    return t.loc[point]


def _screen_20k_row(point: str) -> str:
    r = _screen_20k(point)
    return (f"| {_half_up(r['final_regret_mean'])} +- {_half_up(r['final_regret_sem'])} | "
            f"{r['regret_per_step_10001_20000']:.3f}")


def _screen_20k_defaults() -> str:
    r = _screen_20k("default")
    return (f"(defaults: {_half_up(r['final_regret_mean'])} +- {_half_up(r['final_regret_sem'])}, "
            f"{r['regret_per_step_10001_20000']:.3f})")


def _kept_spread() -> str:
    r = _screen_20k("buffer-50000")
    spread = [r[f"spread_eat_poisonous_step_{step}"] for step in (3000, 20000)]
    return f"stays at\n{_span(spread, 1)})"


def _kl_seen_late() -> str:
    seeds = pd.read_csv(REPO / KL_SEEN / "diagnosis_seeds.csv")
    median = seeds[seeds["agent"] == "bbb"]["cumulative_regret"].median()
    return (f"BBB's late regret falls to {_late(KL_SEEN, 'bbb'):.3f} per step and its median "
            f"to {median:.0f}")


# --- memorised outcomes ----------------------------------------------------------------------

POINTS = {  # (sweep, point) -> the agents of its memorisation.csv
    "bbb": ("fig6-bbb", "likelihood=fixed__kl_scale=buffer"),
    "eps": ("fig6-eps", "likelihood=fixed"),
    "ts": ("fig6-ts", "likelihood=fixed"),
    "bbb-learned": ("fig6-bbb", "likelihood=learned__kl_scale=buffer"),
    "bbb-seen": ("fig6-bbb", "likelihood=fixed__kl_scale=seen"),
    "bbb-learned-seen": ("fig6-bbb", "likelihood=learned__kl_scale=seen"),
    "eps-learned": ("fig6-eps", "likelihood=learned"),
}
DEFAULTS = [("bbb", "bbb"), ("eps", "greedy"), ("eps", "eps1"), ("eps", "eps5")]
LEARNED = [("bbb-learned", "bbb"), ("bbb-learned-seen", "bbb"), ("eps-learned", "greedy"),
           ("eps-learned", "eps1"), ("eps-learned", "eps5")]
WITHOUT = ["bbb", "bbb-seen", "eps", "eps", "eps"]  # each learned point's fixed-noise point


def _poisonous(point: str, agent: str) -> pd.DataFrame:
    sweep, name = POINTS[point]
    m = pd.read_csv(REPO / SWEEPS / sweep / "per-point" / name / "memorisation.csv")
    return m[(m["agent"] == agent) & ~m["edible"]]


def _rows(point: str, agent: str, history: str, in_buffer: str | None = None) -> pd.DataFrame:
    m = _poisonous(point, agent)
    m = m[m["history"] == history]
    return m if in_buffer is None else m[m["in_buffer"] == in_buffer]


def _own_rate(rows: pd.DataFrame) -> float:
    """The share of these poisonous mushrooms shown that the agent ate by its own choice."""
    return float((rows["own_mistake_rate"] * rows["shown"]).sum() / rows["shown"].sum())


def _memorised(point: str, agent: str) -> float:
    return 100 * _own_rate(_rows(point, agent, "last paid 5", "yes"))


def _memorisation_rates() -> str:
    b, g, e1, e5 = (_memorised(p, a) for p, a in DEFAULTS)
    dropout, bootstrap = (_memorised("ts", a) for a in ("dropout", "bootstrap"))
    paid_35 = [100 * _own_rate(_rows(p, a, "last paid -35")) for p, a in DEFAULTS]
    never = [100 * _own_rate(_rows(p, a, "never eaten")) for p, a in DEFAULTS]
    return (f"replay buffer {b:.0f} % (BBB), {g:.0f} % (greedy), {e1:.0f} % (1 %) and {e5:.0f} % "
            f"(5 % greedy) of the\ntime by its own choice (the dropout and bootstrap agents "
            f"{dropout:.0f} % and {bootstrap:.0f} %), against {_span(paid_35, 1)} % for one last "
            f"seen paying -35 and {_span(never, 1)} %")


def _rare_but_costly() -> str:
    shown = [_rows(p, a, "last paid 5", "yes")["shown"].sum() for p, a in DEFAULTS]
    every = {_poisonous(p, a)["shown"].sum() for p, a in DEFAULTS}
    assert len(every) == 1, every  # the same mushrooms are shown to every agent
    in_buffer = [100 * _rows(p, a, "last paid 5", "yes")["share_of_own_mistakes"].sum()
                 for p, a in DEFAULTS]
    either = [100 * _rows(p, a, "last paid 5")["share_of_own_mistakes"].sum()
              for p, a in DEFAULTS]
    return (f"({min(shown)}-{max(shown)} of about {round(every.pop(), -4):,} poisonous\n"
            f"mushrooms shown), yet they take {_span(in_buffer, 0)} % of the agents' own "
            f"poisonous bites ({_span(either, 0)} %")


def _first_screen() -> str:
    t = pd.read_csv(REPO / FIRST_SCREEN / "summary.csv").set_index("learner")
    acting = [100 * t.loc[n, f"{t.loc[n, 'acting']}_never_eaten"]
              for n in ("greedy", "dropout", "bbb")]  # the defaults of each network
    oracle = 100 * t.loc["oracle", "greedy_never_eaten"]
    return (f"eats {_span(acting, 0)} % of\nthe poisonous mushrooms never eaten in its buffer, "
            f"one fitted to their means {oracle:.1f} %")


# --- learners that average -------------------------------------------------------------------

def _sweep(sweep: str) -> pd.DataFrame:
    return pd.read_csv(REPO / SWEEPS / sweep / "sweep_summary.csv")


def _second_half(sweep: str, agent: str, point: str | None = None) -> float:
    t = _sweep(sweep)
    t = t[(t["agent"] == agent) & ((t["point"] == point) if point else True)]
    assert len(t) == 1, (sweep, agent, point)
    return float(t["expected_regret_per_step_second_half_mean"].iloc[0])


def _weight_decay() -> str:
    eps1, eps5 = (_second_half("fig6-eps-wd", a) for a in ("eps1", "eps5"))
    return f"5 % greedy where they were, {eps1:.3f} and {eps5:.3f} per step"


def _fixed_noise() -> str:
    seen = _second_half("fig6-bbb", "bbb", "likelihood=fixed__kl_scale=seen")
    noise = _second_half("fig6-bbb-noise", "bbb")
    default = _second_half("fig6-bbb", "bbb", "likelihood=fixed__kl_scale=buffer")
    return f"({seen:.3f} and {noise:.3f} against {default:.3f} per step)"


def _learned_noise() -> str:
    learned = [_memorised(p, a) for p, a in LEARNED]
    default = [_memorised(p, a) for p, a in DEFAULTS]
    bbb = [_second_half("fig6-bbb", "bbb", f"likelihood=learned__kl_scale={k}")
           for k in ("buffer", "seen")]
    eps1 = {k: _second_half("fig6-eps", "eps1", f"likelihood={k}") for k in ("learned", "fixed")}
    return (f"({_span(learned, 0)} % instead of\n{_span(default, 0)} %), is far worse "
            f"(BBB {_span(bbb, 1)} per step; 1 % greedy {eps1['learned']:.2f} against "
            f"{eps1['fixed']:.2f})")


def _poisonous_variance() -> str:
    """The variance of a poisonous bite's reward, from the environment's reward constants."""
    import inspect

    from envs.mushroom import MushroomProblem

    d = {k: v.default for k, v in inspect.signature(MushroomProblem).parameters.items()}
    p = d["poison_prob"]
    variance = p * (1 - p) * (d["reward_eat"] - d["reward_poisoned"]) ** 2
    return f"a poisonous bite's outcomes have variance {variance:.0f}"


def _times(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def _learned_noise_eats() -> str:
    """How many times as often the learned noise eats (by its own choice) the poisonous
    mushrooms last seen paying -35 and those never eaten, against the fixed noise."""
    def ratios(history: str) -> list[float]:
        return [_own_rate(_rows(point, a, history)) / _own_rate(_rows(fixed, a, history))
                for (point, a), fixed in zip(LEARNED, WITHOUT)]

    paid_35, never = ratios("last paid -35"), ratios("never eaten")
    return (f"eaten {_times(min(paid_35))}-{_times(max(paid_35))} times as often (untried ones "
            f"{_times(min(never))}-{_times(max(never))} times)")


# --- the learner screen ----------------------------------------------------------------------

REFERENCES = ("oracle", "oracle-half", "ridge", "ridge-means")


def _revised() -> pd.DataFrame:
    """The first screen's learners rerun at 4,096 items (the reference rows left out)."""
    t = pd.read_csv(REPO / REVISED / "summary.csv")
    t = t[~t["learner"].isin(REFERENCES)]
    assert not t["passes"].any()
    return t


def _revised_count() -> str:
    return f"the {len(_revised())} learners of the\nfirst screen"


def _revised_shares() -> str:
    """The never-eaten share the learners' acting decisions eat, over those that leave at
    most 1 % of the edible mushrooms uneaten."""
    shares = [100 * r[f"{r['acting']}_never_eaten"] for _, r in _revised().iterrows()
              if r[f"{r['acting']}_edible_uneaten"] <= 0.01]
    return f"eat {_span(shares, 0)} % of the never-eaten poisonous mushrooms"


def _longer_history() -> str:
    """Decay 1's never-eaten share (acting decisions) at 16,384 and 50,000 items."""
    def span(size: int, folder: str) -> str:
        k = f"{size // 1000}k"
        shares = [_screen(f"greedy-wd-1-{k}", "greedy_never_eaten", size, folder=folder),
                  _screen(f"bbb-md-1-{k}", "thompson_never_eaten", size, folder=folder)]
        return _span(map(float, shares), 1)

    return f"{span(16384, GRID)} % at {16384:,} items and {span(50000, GRID_50K)} %"


def _decay_03_margin() -> str:
    """Decay 0.3's paired lead over decay 1 at 50,000 items, in standard errors."""
    new = pd.read_csv(REPO / DECAYS / "runs.csv")
    ref = pd.read_csv(REPO / GRID_50K / "runs.csv")
    z = []
    for learner, column in (("greedy-wd-0.3-50k", "greedy_never_eaten"),
                            ("bbb-md-0.3-50k", "thompson_never_eaten")):
        a, b = (r[r["learner"] == n].set_index("buffer")[column]
                for r, n in ((new, learner), (ref, learner.replace("-0.3-", "-1-"))))
        d = a - b
        z.append(-d.mean() / (d.std() / len(d) ** 0.5))
    return f"ahead of decay 1 by {_span(z, 1)}\nstandard errors"


def _paper_preset() -> str:
    """BBB's late regret under the exact paper preset (64 updates) against 8 updates, on the
    same seeds, over the last 10,000 steps of complete phases the GPU run reached."""
    from bandits.tools.memory_tables import at_step

    phases = pd.read_csv(REPO / H100 / "phases.csv")
    whole = phases[phases["end"] - phases["start"] + 1 == 2000]
    end = int(whole.groupby(["agent", "seed"])["end"].max().min())
    gpu = at_step(REPO / H100, end, 10_000)
    cpu = at_step(REPO / PAPER, end, 10_000)
    cpu = cpu[cpu["seed"].isin(gpu["seed"])]
    late = {k: t.groupby("agent")["late"].mean() for k, t in (("gpu", gpu), ("cpu", cpu))}
    assert (late["gpu"] > late["cpu"]).all(), late  # "more late regret ... for every agent"
    return (f"(BBB {late['gpu']['bbb']:.3f} against {late['cpu']['bbb']:.3f} per\nstep over steps "
            f"{end - 10_000 + 1:,}-{end:,}, the same {gpu['seed'].nunique()} seeds")


# --- Figure 6 with a memory ------------------------------------------------------------------

def _bars_met() -> str:
    """The bars set for the learner with a memory, on the `memory` preset's run."""
    from bandits.tools.memory_tables import at_step

    t = at_step(REPO / PRESET, 50_000, 10_000).groupby("agent")["regret"]
    lowest = all(t.agg(f).idxmin() == "bbb" for f in ("mean", "median"))
    met = (lowest and _late(PRESET, "bbb") <= 0.04
           and all(_times_floor(PRESET, a) <= 1.5 for a in ("eps1", "eps5")))
    return "Every bar set for this learner is met" if met else "bars missed"


def _decay_1() -> str:
    return (f"its late regret ({_late(DECAY_1, 'bbb'):.3f} per step) misses the 0.04 set for "
            f"it, and 1 %\ngreedy pays {_times_floor(DECAY_1, 'eps1'):.1f} times")


def _new_buffers() -> str:
    buffers = pd.read_csv(REPO / NEW_BUFFERS / "runs.csv")["buffer"].nunique()
    return f"Screened on {buffers} new buffers"


def _decay_03_in_the_bandit() -> str:
    final = {run: pd.read_csv(REPO / run / "summary.csv").set_index("agent").loc[
        "bbb", "cumulative_regret_mean"] for run in (ALONE, DECAY_1)}
    assert final[ALONE] <= final[DECAY_1], final  # "a final regret not higher"
    return (f"is {_late(ALONE, 'bbb'):.3f} per step against decay 1's {_late(DECAY_1, 'bbb'):.3f}, "
            f"with a final regret not higher,\nand 1 % greedy pays "
            f"{_times_floor(ALONE, 'eps1'):.2f} times")


def _four_agents() -> str:
    return f"5 % greedy pays {_times_floor(BESIDE_GREEDY, 'eps5'):.1f} times"


# --- quick-10k, the paper preset's GPU run, the showdown -------------------------------------

WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
         9: "nine"}


def _quick_10k() -> str:
    s = pd.read_csv(REPO / QUICK_10K / "summary.csv").set_index("agent")

    def cell(agent: str, bold: str = "") -> str:
        return (f"{bold}{s.loc[agent, 'cumulative_regret_mean']:.0f}{bold} "
                f"({s.loc[agent, 'cumulative_regret_std']:.0f}")

    finals = (pd.read_csv(REPO / QUICK_10K / "phases.csv").groupby(["agent", "seed"])["regret"]
              .sum().loc["greedy"].sort_values())
    return (f"BBB (one sample) {cell('bbb', '**')}), 1 % greedy {cell('eps1')}), 5 %\n"
            f"greedy {cell('eps5')}), greedy {cell('greedy')}; one seed stops eating, "
            f"{finals.iloc[-1]:,}; its other {WORDS[len(finals) - 1]}\nend at {finals.iloc[0]}-"
            f"{finals.iloc[-2]})")


def _quick_10k_set_up() -> str:
    c = _config(QUICK_10K)
    assert c["weight_decay"] == 0 and c["act_samples"] == 1
    return (f"{c['seeds']} seeds, {c['steps']:,} steps, the quick preset's\n"
            f"{c['updates_per_step']} updates per step, a buffer of {c['buffer_size']:,} and no "
            f"decay")


def _gpu_stop() -> str:
    c = _config(H100)
    return f"to step {c['steps_completed']:,} of {c['steps']:,}"


def _showdown_set_up() -> str:
    c = _config(SHOWDOWN)
    assert c["weight_decay"] == 0 and c["act_samples"] == 1
    return (f"{c['seeds']} seeds, the paper's buffer of {c['buffer_size']:,} and no decay, BBB "
            f"acting on\none weight sample")


# --- the wheel -------------------------------------------------------------------------------

def _wheel() -> str:
    t = pd.read_csv(REPO / WHEEL)
    mean = t.pivot(index="agent", columns="wheel_delta", values="cumulative_regret_mean")
    rel = mean.drop(index="uniform") / mean.loc["uniform"]
    order = {d: list(rel[d].sort_values().index) for d in rel.columns}
    deltas = sorted(order)
    assert all(set(order[d][:2]) == {"linfullpost", "neurallinear"}
               for d in deltas if d <= 0.95)
    assert order[0.99][0] == "linfullpost"
    after = [d for d in deltas if order[d][2 if d <= 0.95 else 1] == "bbb"]
    assert after == [d for d in deltas if d >= 0.7], after
    assert order[0.5][2:4] == ["bootstrap", "bbb"]
    lin = rel.loc["linfullpost"]
    bbb = _span(rel.loc["bbb", after], 2)
    return (f"({lin.min():.1g}-{lin.max():.1g} of uniform's regret); BBB comes next at delta "
            f"{min(after)} to\n{max(after)} ({bbb} of uniform's regret), "
            f"while at {deltas[0]} the bootstrapped ensemble does\n"
            f"({rel.loc['bootstrap', deltas[0]]:.2f}) and BBB follows "
            f"({rel.loc['bbb', deltas[0]]:.2f}); greedy does no better than uniform "
            f"({_span(rel.loc['greedy'], 2)} of\nits regret)")


QUOTES = [  # (the page, the text it must hold, built from the shipped files)
    *((page, text) for page, text in front.QUOTES if page == PAGE),  # already checked there
    *((PAGE, text) for text in (
        _paper_set_up,
        _torch,
        _starved,
        lambda: f"median, and BBB's curve is not flat ({_late(PAPER, 'bbb'):.3f} per step",
        _late_poisonous_bites,
        _spread_grows,
        _kl_seen_row,
        lambda: _screen_20k_row("buffer-50000"),
        _screen_20k_defaults,
        lambda: _screen_20k_row("updates-16"),
        lambda: _screen_20k_row("prior-0.3"),
        lambda: _screen_20k_row("noise-0.05"),
        _kept_spread,
        _kl_seen_late,
        lambda: _wall(KL_SEEN),
        lambda: f"the closest of the settings tried to greedy's {_late(PAPER, 'greedy'):.3f}",
        _memorisation_rates,
        _rare_but_costly,
        _first_screen,
        _weight_decay,
        _fixed_noise,
        _learned_noise,
        _poisonous_variance,
        _learned_noise_eats,
        _revised_count,
        _revised_shares,
        _longer_history,
        _decay_03_margin,
        _paper_preset,
        lambda: _wall(PRESET),
        _bars_met,
        lambda: _wall(DECAY_1),
        _decay_1,
        _new_buffers,
        _decay_03_in_the_bandit,
        _four_agents,
        _quick_10k_set_up,
        lambda: _wall(QUICK_10K),
        _quick_10k,
        _gpu_stop,
        _showdown_set_up,
        lambda: _wall(SHOWDOWN),
        _wheel,
    )),
]

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES, whitespace=False)


# The page's numbers that are not results: the year of the paper cited and the settings of
# the runs it describes (steps and windows of steps, buffer sizes, the probe step, noise,
# prior and initial sigmas, decay, the wheel's deltas) and the targets set before the runs
# (at most 0.04 per step late, within 1.5 times the exploration floors).
SETTINGS = {
    PAGE: {"2018",  # Riquelme, Tucker and Snoek (2018)
           "2000", "3000", "10,000", "20,000", "50,000",  # steps
           "10,001", "40,001",  # the first steps of the late windows
           "4096", "4,096", "16,384",  # buffer sizes
           "0.05", "0.1", "0.3", "0.5",  # noise, initial sigma, prior sigma, decay
           "0.7", "0.95", "0.99",  # the wheel's deltas (0.5 above)
           "0.04", "1.5"},  # the targets
}

test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    (PAGE,), lambda page: unquoted(page, snippets(page, QUOTES), SETTINGS[page],
                                   number=GROUPED_NUMBER),
    add="a check to QUOTES")
