"""Numbers that the hand-written pages of the Mushroom screens and sweeps quote in their
prose and in their hand-written tables (results/mushroom/screens/README.md, its 20k/
page, results/mushroom/sweeps/README.md, fig6.md and neural-nu/README.md), checked
against the shipped files they come from (``screens.csv``, ``screen20k.csv``, each
sweep's ``sweep.csv``, ``sweep_summary.csv``, ``sweep.json`` and its points'
``memorisation.csv`` and ``config.json``), as tests/test_quoted_numbers.py checks the
front pages: a rerun that changes a file without the page fails here.

A hand-written table is checked row by row (:data:`TABLES`): each row's label names one
row of its file (built from the file where the file holds the label), and the numbers of
every other cell, in order, must be that row's numbers as the page rounds them. The
prose is checked by :data:`QUOTES` (snippets built from the files, compared with the
page's line breaks ignored), and every other number of the prose must be a setting or a
citation declared in :data:`SETTINGS`."""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import page_numbers
import pandas as pd
from page_numbers import REPO, cell_numbers, flat, prose, row_cells, same, snippets, uncovered
from test_quoted_numbers import QUOTES as FRONT

SCREENS = "results/mushroom/screens"
SCREENS_PAGE = f"{SCREENS}/README.md"
SCREEN_20K = "results/mushroom/screens/20k"
SCREEN_20K_PAGE = f"{SCREEN_20K}/README.md"
SWEEPS = "results/mushroom/sweeps"
FIG6 = f"{SWEEPS}/fig6.md"
OPEN = f"{SWEEPS}/bbb-open-settings"
OPEN_PAGE = f"{SWEEPS}/README.md"
NU = f"{SWEEPS}/neural-nu"
NU_PAGE = f"{NU}/README.md"
SHOWDOWN = "results/mushroom/showdown"
PAPER = "results/mushroom/paper-horizon"
PAGES = (SCREENS_PAGE, SCREEN_20K_PAGE, FIG6, OPEN_PAGE, NU_PAGE)


def _cells(line: str) -> list[str]:
    """A row's cells, bold marks dropped."""
    return [c.replace("**", "") for c in row_cells(line)]


def _span(values, digits: int = 0) -> str:
    values = list(values)
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def _two(x: float) -> str:
    """A share in percent as the memorisation tables write it: two significant digits."""
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def _wall_s(folder: str) -> str:
    return f"{json.loads((REPO / folder / 'sweep.json').read_text())['wall_seconds']:.0f} s"


# ---------------------------------------------------------------- the code's constants


def _mushroom() -> dict:
    """The Mushroom problem's reward defaults."""
    from envs.mushroom import MushroomProblem

    return {k: v.default for k, v in inspect.signature(MushroomProblem).parameters.items()}


def _poisonous_cost() -> float:
    """The expected regret of eating a poisonous mushroom (not eating pays 0)."""
    d = _mushroom()
    return -(d["poison_prob"] * d["reward_poisoned"] + (1 - d["poison_prob"]) * d["reward_eat"])


def _edible_share() -> float:
    """The share of edible rows of the UCI file, as the data module documents them."""
    from envs import mushroom_data

    m = re.search(r"(\d+) edible, (\d+) poisonous", inspect.getsource(mushroom_data))
    assert m and int(m[1]) + int(m[2]) == mushroom_data.N_ROWS, m
    return int(m[1]) / mushroom_data.N_ROWS


# ---------------------------------------------------------------- the shipped files


@lru_cache
def _screens() -> pd.DataFrame:
    return pd.read_csv(REPO / SCREENS / "screens.csv")


@lru_cache
def _screen_20k() -> pd.DataFrame:
    return pd.read_csv(REPO / SCREEN_20K / "screen20k.csv").set_index("point")


@lru_cache
def _runs(sweep: str) -> pd.DataFrame:
    return pd.read_csv(REPO / SWEEPS / sweep / "sweep.csv")


@lru_cache
def _summary(sweep: str) -> pd.DataFrame:
    return pd.read_csv(REPO / SWEEPS / sweep / "sweep_summary.csv")


def _row(sweep: str, point: str, agent: str) -> pd.Series:
    t = _summary(sweep)
    t = t[(t["point"] == point) & (t["agent"] == agent)]
    assert len(t) == 1, (sweep, point, agent)
    return t.iloc[0]


def _seeds(sweep: str, point: str, agent: str, column: str) -> pd.Series:
    t = _runs(sweep)
    return t[(t["point"] == point) & (t["agent"] == agent)].set_index("seed")[column]


def _paired(a: tuple[str, str, str], b: tuple[str, str, str],
            column: str = "expected_regret_per_step_second_half") -> tuple[float, float]:
    """``a`` minus ``b`` (sweep, point, agent), seed by seed: mean and standard error."""
    d = (_seeds(*a, column) - _seeds(*b, column)).dropna()
    assert len(d) == len(_seeds(*a, column)), (a, b)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))


# ---------------------------------------------------------------- hand-written tables


@dataclass(frozen=True)
class HandTable:
    """The table of ``page`` whose first line is ``header``: ``rows`` gives, per label (the
    first ``labels`` cells), the numbers each other cell must hold; every row of the page
    must be one label's, and every label must have its row. Where ``prefix``, a cell may
    give only the first of its numbers (a count left out); where ``carry``, a blank first
    cell repeats the row above's."""

    page: str
    header: str
    labels: int
    rows: Callable[[], dict[tuple[str, ...], list[list[float]]]]
    prefix: bool = False
    carry: bool = False


def _table_lines(text: str, header: str) -> list[tuple[int, str]]:
    """The data rows (line index, line) of the first table headed by ``header``."""
    found = page_numbers.tables(text, header)
    assert found, f"no table headed {header!r}"
    return found[0]


def _table_errors(spec: HandTable, text: str) -> list[str]:
    want = spec.rows()
    errors, seen, last = [], [], ()
    for _, line in _table_lines(text, spec.header):
        cells = _cells(line)
        label = tuple(cells[:spec.labels])
        if spec.carry and not label[0]:
            label = last[:1] + label[1:]
        last = label
        seen.append(label)
        if label not in want:
            errors.append(f"{line.strip()}: no row {label} in its file")
            continue
        for cell, expected in zip(cells[spec.labels:], want[label], strict=True):
            doc = cell_numbers(cell)
            n = len(doc) if spec.prefix and 0 < len(doc) <= len(expected) else len(expected)
            if len(doc) != n or not all(map(same, doc, expected[:n])):
                errors.append(f"{line.strip()}: {cell!r} is not {expected}")
    if sorted(seen) != sorted(want):
        errors.append(f"rows {seen} are not the file's {list(want)}")
    return errors


def _blank_checked(page: str, text: str) -> str:
    """The page with the rows its tables check emptied (their numbers are covered: the
    labels name the file's rows, the other cells are those rows' numbers)."""
    lines = text.splitlines()
    for spec in TABLES:
        if spec.page == page:
            for k, _ in _table_lines(text, spec.header):
                lines[k] = "|"
    return "\n".join(lines)


def _screens_label(r: pd.Series) -> tuple[str, ...]:
    if r["agent"] != "bbb":
        return (r["agent"], "", "", "", "")
    prior = (r["prior"] if pd.isna(r["prior_sigma"])
             else f"{r['prior']} (sigma {r['prior_sigma']:g})")
    return ("bbb", prior, f"{r['noise_sigma']:g}", f"{r['init_sigma']:g}",
            f"{r['act_samples']:g}")


def _screens_rows() -> dict:
    return {_screens_label(r): [
        [r["final_regret_mean"], r["final_regret_sem"]], [r["final_regret_median"]],
        [r["last_1000_expected_regret_per_step"], r["last_1000_sem"]],
        [r["last_1000_ate_poisonous_rate"]], [r["last_1000_left_edible_rate"]],
        [r["seeds_not_eating"]]] for _, r in _screens().iterrows()}


def _screen_20k_rows() -> dict:
    out = {}
    for point, r in _screen_20k().iterrows():
        label = "none (the defaults)" if point == "default" else r["change"]
        out[(label,)] = [
            [r["final_regret_mean"], r["final_regret_sem"]], [r["final_regret_median"]],
            [r["regret_per_step_10001_20000"], r["regret_per_step_sem"]],
            [100 * r["poisonous_eaten_share_10001_20000"]],
            [r["spread_eat_poisonous_step_3000"], r["spread_eat_poisonous_step_20000"]]]
    return out


BBB_DEFAULTS = ("fig6-bbb", "likelihood=fixed__kl_scale=buffer", "bbb")
FIG6_POINTS = {  # the first table's labels -> (sweep, point, agent)
    ("BBB", "defaults (fixed noise 0.1, cost over the buffer)"): BBB_DEFAULTS,
    ("BBB", "cost over every interaction seen"):
        ("fig6-bbb", "likelihood=fixed__kl_scale=seen", "bbb"),
    ("BBB", "fixed noise 0.3, cost over every interaction seen"):
        ("fig6-bbb-noise", "noise_sigma=0.3__kl_scale=seen", "bbb"),
    ("BBB", "learned noise, cost over the buffer"):
        ("fig6-bbb", "likelihood=learned__kl_scale=buffer", "bbb"),
    ("BBB", "learned noise, cost over every interaction seen"):
        ("fig6-bbb", "likelihood=learned__kl_scale=seen", "bbb"),
    **{(name, point): ("fig6-eps", f"likelihood={kind}", agent)
       for agent, name in (("greedy", "greedy"), ("eps1", "1 % greedy"),
                           ("eps5", "5 % greedy"))
       for point, kind in (("defaults (squared error)" if agent == "greedy" else "defaults",
                            "fixed"), ("learned noise", "learned"))},
}


def _defaults_of(key: tuple[str, str, str]) -> tuple[str, str, str]:
    sweep, _, agent = key
    return BBB_DEFAULTS if sweep.startswith("fig6-bbb") else ("fig6-eps", "likelihood=fixed",
                                                              agent)


def _late_cell(key: tuple[str, str, str]) -> list[float]:
    r = _row(*key)
    return [r["expected_regret_per_step_second_half_mean"],
            r["expected_regret_per_step_second_half_sem"]]


def _final_cell(key: tuple[str, str, str]) -> list[float]:
    r = _row(*key)
    return [r["cumulative_regret_mean"], r["cumulative_regret_median"]]


def _against(key: tuple[str, str, str], defaults: tuple[str, str, str]) -> list[float]:
    return [] if key == defaults else list(_paired(key, defaults))


def _config(key: tuple[str, str, str]) -> dict:
    sweep, point, _ = key
    return json.loads((REPO / SWEEPS / sweep / "per-point" / point / "config.json").read_text())


def _fig6_rows() -> dict:
    out = {}
    for label, key in FIG6_POINTS.items():
        noise = re.search(r"noise (\d\.\d+)", label[1])  # a label's noise is its point's
        assert noise is None or float(noise[1]) == _config(key)["noise_sigma"], label
        out[label] = [_late_cell(key), _against(key, _defaults_of(key)), _final_cell(key)]
    return out


# --- memorisation: what the networks eat, by what they last saw

MEMORISATION = {  # the memorisation table's labels -> (sweep, point, agent)
    "BBB, defaults": BBB_DEFAULTS,
    "BBB, cost over every interaction seen": FIG6_POINTS[
        ("BBB", "cost over every interaction seen")],
    "BBB, noise 0.3, cost over every interaction seen": FIG6_POINTS[
        ("BBB", "fixed noise 0.3, cost over every interaction seen")],
    "BBB, learned noise, cost over the buffer": FIG6_POINTS[
        ("BBB", "learned noise, cost over the buffer")],
    **{f"{name}, {kind}": ("fig6-eps", f"likelihood={point}", agent)
       for agent, name in (("greedy", "greedy"), ("eps1", "1 % greedy"),
                           ("eps5", "5 % greedy"))
       for kind, point in (("defaults", "fixed"), ("learned noise", "learned"))},
}
DEFAULT_AGENTS = ["BBB, defaults", "greedy, defaults", "1 % greedy, defaults",
                  "5 % greedy, defaults"]
LEARNED_AGENTS = ["BBB, learned noise, cost over the buffer", "greedy, learned noise",
                  "1 % greedy, learned noise", "5 % greedy, learned noise"]


def _poisonous(key: tuple[str, str, str], history: str,
               in_buffer: str | None = None) -> pd.DataFrame:
    sweep, point, agent = key
    m = pd.read_csv(REPO / SWEEPS / sweep / "per-point" / point / "memorisation.csv")
    m = m[(m["agent"] == agent) & ~m["edible"] & (m["history"] == history)]
    return m if in_buffer is None else m[m["in_buffer"] == in_buffer]


def _own(rows: pd.DataFrame) -> list[float]:
    """The share (%) of these poisonous mushrooms shown that the agent ate by its own
    choice, and how many were shown."""
    shown = rows["shown"].sum()
    return [100 * float((rows["own_mistake_rate"] * rows["shown"]).sum() / shown), shown]


def _memorised(key: tuple[str, str, str]) -> list[float]:
    return _own(_poisonous(key, "last paid 5", "yes"))


def _memorisation_cells(key: tuple[str, str, str]) -> list[list[float]]:
    share = [100 * _poisonous(key, "last paid 5", b)["share_of_own_mistakes"].sum()
             for b in (None, "yes")]
    return [_own(_poisonous(key, "never eaten")), _memorised(key),
            _own(_poisonous(key, "last paid 5", "no")), _own(_poisonous(key, "last paid -35")),
            share]


def _memorisation_rows() -> dict:
    return {(label,): _memorisation_cells(key) for label, key in MEMORISATION.items()}


def _shown(label: str, column: int) -> str:
    """A share of the memorisation table as the page writes it (two digits)."""
    return _two(_memorisation_cells(MEMORISATION[label])[column][0])


# --- weight decay, dropout and bootstrap

def _wd_rows() -> dict:
    out = {}
    for agent, name in (("greedy", "greedy"), ("eps1", "1 % greedy"), ("eps5", "5 % greedy")):
        key = ("fig6-eps-wd", "weight_decay=0.01", agent)
        out[(name,)] = [_late_cell(key), _against(key, ("fig6-eps", "likelihood=fixed", agent)),
                        _final_cell(key), _memorised(key)]
    return out


def _ts_rows() -> dict:
    out = {}
    for agent, name in (("dropout", "Dropout TS"), ("bootstrap", "Bootstrapped NN")):
        fixed, learned = (("fig6-ts", f"likelihood={k}", agent) for k in ("fixed", "learned"))
        out[(name,)] = [_late_cell(fixed), _late_cell(learned), _against(learned, fixed),
                        _final_cell(fixed) + _final_cell(learned),
                        _memorised(fixed) + _memorised(learned)]
    return out


# --- the open settings and nu

@lru_cache
def _open_meta() -> dict:
    return json.loads((REPO / OPEN / "sweep.json").read_text())


def _per(setting: str, value) -> list[float]:
    """The open-settings sweep's final regret at one value of a setting, over the other
    settings' points and the seeds: mean and standard error."""
    r = _runs("bbb-open-settings")
    r = r[r[setting] == value]["cumulative_regret"]
    return [r.mean(), r.std(ddof=1) / math.sqrt(len(r))]


def _open_rows() -> dict:
    names = {"noise_sigma": "likelihood noise", "init_sigma": "initial sigma",
             "prior": "prior"}
    priors = {"gaussian": "Gaussian", "mixture": "scale mixture"}
    return {(names[k], priors[v] if k == "prior" else f"{v:g}"): [_per(k, v)]
            for k in _open_meta()["swept"] for v in _open_meta()["grid"][k]}


def _nu_rows() -> dict:
    out = {}
    for nu in sorted(_summary("neural-nu")["nu"].unique(), reverse=True):
        cells = []
        for agent in ("neuralucb", "neuralts"):
            r = _row("neural-nu", f"nu={nu:g}", agent)
            cells.append([r["cumulative_regret_mean"],
                          r["cumulative_regret_std"] / math.sqrt(r["seeds"])])
            cells.append([] if nu == 1 else list(_paired(
                ("neural-nu", f"nu={nu:g}", agent), ("neural-nu", "nu=1", agent),
                "cumulative_regret")))
        out[(f"{nu:g} (default)" if nu == 1 else f"{nu:g}",)] = cells
    return out


TABLES = [
    HandTable(SCREENS_PAGE, "| agent | prior | noise sigma | init sigma | act samples | final "
                            "regret, mean +- s.e. | median | regret per step, steps 2001-3000 "
                            "| poisonous eaten (share of steps) | edible left | seeds that "
                            "stopped eating |", 5, _screens_rows),
    HandTable(SCREEN_20K_PAGE, "| change | final regret, mean +- s.e. | median | regret per "
                               "step, steps 10,001-20,000 | poisonous eaten (share of steps) | "
                               "spread of \"eat\" on poisonous probes, step 3000 -> 20,000 |",
              1, _screen_20k_rows),
    HandTable(FIG6, "| agent | point | regret per step, second half | against the defaults | "
                    "final regret, mean (median) |", 2, _fig6_rows),
    HandTable(FIG6, "| agent, point | never eaten before | last paid +5, still in the buffer | "
                    "last paid +5, out of the buffer | last paid -35 | own bites on \"last paid "
                    "+5\" (in the buffer) |", 1, _memorisation_rows, prefix=True),
    HandTable(FIG6, "| agent | weight decay 0.01 | against the defaults | final regret, mean "
                    "(median) | eats \"last paid +5, in the buffer\" |", 1, _wd_rows),
    HandTable(FIG6, "| agent | defaults | learned noise | against the defaults | final regret, "
                    "mean (median): defaults, learned | eats \"last paid +5, in the buffer\": "
                    "defaults, learned |", 1, _ts_rows),
    HandTable(OPEN_PAGE, "| setting | value | final regret |", 2, _open_rows, carry=True),
    HandTable(NU_PAGE, "| nu | NeuralUCB | against nu = 1 | NeuralTS | against nu = 1 |", 1,
              _nu_rows),
]


test_every_row_of_a_hand_written_table_is_a_row_of_its_file = page_numbers.table_test(
    TABLES, _table_errors, "are not their files'")


def test_a_changed_number_fails_its_row():
    """The table check can fail: a number moved on the page, or two rows' labels swapped."""
    spec = TABLES[0]
    text = (REPO / spec.page).read_text(encoding="utf-8")
    (_, first), (_, second) = _table_lines(text, spec.header)[:2]
    median = _cells(first)[6]
    moved = text.replace(first, first.replace(f"| {median} |", f"| {int(median) + 1} |"))
    assert _table_errors(spec, moved), "a changed median went unnoticed"
    a, b = (" | ".join(_cells(x)[:5]) for x in (first, second))
    swapped = text.replace(first, first.replace(a, b)).replace(second, second.replace(b, a))
    assert _table_errors(spec, swapped), "two rows' labels swapped went unnoticed"


# ---------------------------------------------------------------- the prose


def _screens_set_up() -> list[str]:
    t = _screens()
    steps, seeds, updates = (t[c].unique() for c in ("steps", "seeds", "updates_per_step"))
    assert len(steps) == len(seeds) == len(updates) == 1, (steps, seeds, updates)
    return [f"({seeds[0]} seeds, {steps[0]} steps)",
            f"`bandits.run` configuration with {seeds[0]} seeds",
            f"the quick preset's training (buffer 4096, {updates[0]} updates of 64 per step), "
            f"{steps[0]} steps.",
            f"a seed that never eats leaves about {_edible_share():.2f})"]


def _screens_bbb(prior: str, noise: float, act: int, prior_sigma: float | None = None,
                 init: float = 0.02) -> pd.Series:
    t = _screens()
    t = t[(t["agent"] == "bbb") & (t["prior"] == prior) & (t["noise_sigma"] == noise)
          & (t["act_samples"] == act) & (t["init_sigma"] == init)]
    if prior_sigma is not None:
        t = t[t["prior_sigma"] == prior_sigma]
    assert len(t) == 1, (prior, noise, act, prior_sigma)
    return t.iloc[0]


def _screens_chosen() -> list[str]:
    """The winner rule: the lowest mean, or a setting within one standard error of it with
    fewer changes."""
    chosen = _screens_bbb("gaussian", 0.1, 2, 1.0)
    other = _screens_bbb("gaussian", 0.1, 2, 0.3)
    bbb = _screens()[_screens()["agent"] == "bbb"]
    assert chosen["final_regret_mean"] == bbb["final_regret_mean"].min()
    assert other["final_regret_mean"] - chosen["final_regret_mean"] < chosen["final_regret_sem"]

    def cell(r: pd.Series) -> str:
        return f"({r['final_regret_mean']:.0f} +- {r['final_regret_sem']:.0f})"

    noisy = [_screens_bbb("mixture", n, 1)["final_regret_mean"] for n in (0.5, 2.0)]
    return [f"averaged to act {cell(chosen)}; the Gaussian prior with sigma 0.3 and two samples "
            f"{cell(other)} is within one standard error",
            f"more seeds not eating early, {noisy[0]:.0f} and {noisy[1]:.0f} regret"]


def _screens_late() -> list[str]:
    """Over the last 1000 steps, the rows at the starting point's noise and initial sigma
    where no seed stopped eating (5 % greedy aside): the share of steps with a poisonous
    mushroom eaten, what it costs per step, and the regret per step."""
    t = _screens()
    rows = t[(t["seeds_not_eating"] == 0) & (t["agent"] != "eps5")
             & (t["noise_sigma"].fillna(0.1) == 0.1) & (t["init_sigma"].fillna(0.02) == 0.02)]
    rate = rows["last_1000_ate_poisonous_rate"].mean()
    eps5 = t.loc[t["agent"] == "eps5", "last_1000_ate_poisonous_rate"].iloc[0]
    late = rows["last_1000_expected_regret_per_step"]
    return [f"about {100 * rate:.0f} % of steps (5 % greedy: {100 * eps5:.0f} %): "
            f"{_poisonous_cost() * rate:.1f} of the {_span(late, 2)} regret per step"]


def _screen_20k_page() -> list[str]:
    t = _screen_20k()
    d, kept, more = t.loc["default"], t.loc["buffer-50000"], t.loc["updates-16"]
    beaten = [p for p, r in t.iterrows()
              if d["regret_per_step_10001_20000"] - r["regret_per_step_10001_20000"]
              > d["regret_per_step_sem"]]
    assert abs(kept["regret_per_step_10001_20000"] - d["regret_per_step_10001_20000"]) \
        < d["regret_per_step_sem"]
    spread = [kept[f"spread_eat_poisonous_step_{s}"] for s in (3000, 20000)]
    p = pd.read_csv(REPO / PAPER / "diagnosis.csv")
    p = p[(p["agent"] == "bbb") & (p["start"] > p["end"].max() - 10_000)]
    steps = p["end"] - p["start"] + 1
    late_50k = (p["ate_poisonous_rate"] * steps).sum() / steps.sum()
    return [
        "No change beats the default by more than a standard error" if not beaten
        else f"{beaten} beat the default",
        f"stays at {_span(spread, 1)} instead of growing to "
        f"{d['spread_eat_poisonous_step_20000']:.1f} once",
        f"({kept['regret_per_step_10001_20000']:.3f} against "
        f"{d['regret_per_step_10001_20000']:.3f}, within one standard error), and it still eats "
        f"a poisonous mushroom on {100 * kept['poisonous_eaten_share_10001_20000']:.2f} % of "
        "steps",
        f"pays more ({more['regret_per_step_10001_20000']:.3f} per step, "
        f"{more['final_regret_mean']:.0f} in all)",
        f"(about {100 * d['poisonous_eaten_share_10001_20000']:.0f} % of steps at 20,000, "
        f"{100 * late_50k:.1f} % at 50,000; each costs {_poisonous_cost():.0f} in expectation)",
    ]


def _fig6_set_up() -> list[str]:
    c = _config(BBB_DEFAULTS)
    return [f"the `{c['preset']}` preset (buffer {c['buffer_size']}, minibatch {c['batch_size']}, "
            f"{c['updates_per_step']} updates per step, 2 x 100 ReLU, Adam {c['lr']:.0e}"
            .replace("e-0", "e-") + f"), **{c['steps']:,} steps, seeds 0-{c['seeds'] - 1}**",
            f"torch {c['versions']['torch'].removesuffix('+cpu')} CPU build",
            f"`fig6-bbb` {_wall_s(f'{SWEEPS}/fig6-bbb')} for its four points one after another, "
            f"`fig6-bbb-noise` {_wall_s(f'{SWEEPS}/fig6-bbb-noise')}, `fig6-eps` "
            f"{_wall_s(f'{SWEEPS}/fig6-eps')} for its two."]


def _fig6_same_as_screen() -> list[str]:
    """The defaults' BBB point against the 20,000-step screen's default row."""
    r, s = _row(*BBB_DEFAULTS), _screen_20k().loc["default"]
    ours = (f"{r['cumulative_regret_mean']:.0f}",
            f"{r['expected_regret_per_step_second_half_mean']:.3f}")
    assert ours == (f"{s['final_regret_mean']:.0f}", f"{s['regret_per_step_10001_20000']:.3f}")
    return [f"to the last digit ({ours[0]}, {ours[1]})"]


def _fig6_memorisation() -> list[str]:
    cells = {label: _memorisation_cells(MEMORISATION[label]) for label in MEMORISATION}
    d = [cells[a] for a in DEFAULT_AGENTS]
    shown = [c[1][1] for c in d]
    every = {sum(c[i][1] for i in (0, 2, 3)) + c[1][1] for c in d}
    around = {round(x, -4) for x in every}
    assert len(around) == 1, every

    def span(column: int, rows=d) -> str:
        values = [float(_two(c[column][0])) for c in rows]
        return f"{_two(min(values))}-{_two(max(values))}"

    def share(k: int) -> str:
        return _span([c[4][k] for c in d])

    return [f"still in the replay buffer {span(1)} % of the time, against {span(3)} % for one "
            f"last seen paying -35 and {span(0)} % for one never eaten",
            f"the rate falls to {_span([c[2][0] for c in d])} %",
            f"({min(shown)}-{max(shown)} of about {around.pop():,.0f} poisonous mushrooms shown "
            f"per agent), but they take {share(1)} % of the agents' own poisonous bites "
            f"({share(0)} % with those out of the buffer)"]


def _fig6_learned() -> list[str]:
    """The learned noise against the fixed one, from the table's rounded shares."""
    learned = [_memorisation_cells(MEMORISATION[a]) for a in LEARNED_AGENTS]
    fixed = [_memorisation_cells(MEMORISATION[a]) for a in DEFAULT_AGENTS]

    def ratios(column: int) -> str:
        r = [float(_two(a[column][0])) / float(_two(b[column][0]))
             for a, b in zip(learned, fixed)]
        return f"{_two(min(r))}-{_two(max(r))}"

    def span(rows) -> str:
        return _span([float(_two(c[1][0])) for c in rows])

    d = _mushroom()
    p = d["poison_prob"]
    variance = p * (1 - p) * (d["reward_eat"] - d["reward_poisoned"]) ** 2
    return [f"halves the memorisation ({span(learned)} % instead of {span(fixed)} %)",
            f"(about {variance:.0f} for eating a poisonous mushroom)",
            f"paying -35 {ratios(3)} times as often, and those they have never tried "
            f"{ratios(0)} times as often (from the table's rounded shares)"]


def _fig6_weight_decay() -> list[str]:
    meta = json.loads((REPO / SWEEPS / "fig6-eps-wd" / "sweep.json").read_text())
    wd = meta["grid"]["weight_decay"]
    assert wd == [0.01], wd
    kept = [a for a in ("greedy", "eps1", "eps5")
            if -_paired(("fig6-eps-wd", "weight_decay=0.01", a), ("fig6-eps", "likelihood=fixed",
                                                                  a))[0]
            > 2 * _paired(("fig6-eps-wd", "weight_decay=0.01", a),
                          ("fig6-eps", "likelihood=fixed", a))[1]]
    assert kept != ["greedy", "eps1", "eps5"]  # "By the rule above the defaults stay"
    rates = [_two(_memorised(("fig6-eps-wd", "weight_decay=0.01", a))[0])
             for a in ("greedy", "eps1", "eps5")]
    greedy = _seeds("fig6-eps", "likelihood=fixed", "greedy", "cumulative_regret")
    assert greedy.max() == _row("fig6-eps", "likelihood=fixed", "greedy")["cumulative_regret_max"]
    return [f"(decoupled weight decay {wd[0]:g}; {_wall_s(f'{SWEEPS}/fig6-eps-wd')})",
            f"still eat {min(rates, key=float)}-{max(rates, key=float)} % of the poisonous",
            f"outlier seed ({greedy.max():,.0f} with the defaults)"]


def _fig6_ts() -> list[str]:
    ts = [_two(_memorised(("fig6-ts", "likelihood=fixed", a))[0])
          for a in ("bootstrap", "dropout")]
    every = [float(_two(_memorised(MEMORISATION[a])[0])) for a in DEFAULT_AGENTS] + \
        [float(x) for x in ts]
    d = [_memorisation_cells(MEMORISATION[a])[4][1] for a in DEFAULT_AGENTS]
    return [f"(both points one after another, {_wall_s(f'{SWEEPS}/fig6-ts')})",
            f"memorise too ({_span(map(float, ts))} % with the defaults)",
            f"outcomes ({_span(every)} % of the poisonous mushrooms last seen paying +5",
            f"but those decisions are {_span(d)} % of the agents' own late"]


def _open_page() -> list[str]:
    meta = _open_meta()
    runs, s = _runs("bbb-open-settings"), _summary("bbb-open-settings")

    def values(name: str) -> str:
        return "{" + ", ".join(f"{v:g}" for v in meta["grid"][name]) + "}"

    points = runs.groupby("point")["wall_seconds"].first()
    defaults = s[s["point"] == "noise_sigma=0.1__init_sigma=0.02__prior=mixture"].iloc[0]
    best = s.loc[s["cumulative_regret_mean"].idxmin()]
    per = {k: {v: _per(k, v)[0] for v in meta["grid"][k]} for k in ("noise_sigma", "init_sigma")}
    assert max(per["init_sigma"], key=per["init_sigma"].get) == 0.01
    return [f"likelihood noise sigma {values('noise_sigma')} x initial posterior sigma "
            f"{values('init_sigma')} x prior",
            "noise 0.1 is the lowest of the three" if min(
                per["noise_sigma"], key=per["noise_sigma"].get) == 0.1 else "another noise",
            f"at the {meta['base']['preset']} preset ({runs['steps'].max()} steps",
            f"with seeds {', '.join(map(str, sorted(runs['seed'].unique())))}.",
            f"for the {len(points)} points (about {points.mean():.0f} s per point",
            f"ends at {defaults['cumulative_regret_mean']:.0f} "
            f"({defaults['cumulative_regret_std']:.0f})",
            f"standard deviations of up to {round(s['cumulative_regret_std'].max(), -2):.0f}",
            f"the best one ({best['cumulative_regret_mean']:.0f}, noise {best['noise_sigma']:g}, "
            f"initial sigma {best['init_sigma']:g}, {best['prior'].capitalize()} prior, whose "
            f"small std of {best['cumulative_regret_std']:.0f}"]


def _nu_page() -> list[str]:
    def diff(nu: str, agent: str) -> tuple[float, float]:
        return _paired(("neural-nu", nu, agent), ("neural-nu", "nu=1", agent),
                       "cumulative_regret")

    assert all(-m > 2 * se for m, se in (diff("nu=0.1", a) for a in ("neuralucb", "neuralts")))
    m, se = diff("nu=0.01", "neuralucb")
    assert abs(m) <= 2 * se  # "NeuralUCB at 0.01 is not separated from nu = 1"
    ts = _row("neural-nu", "nu=0.01", "neuralts")["cumulative_regret_mean"]
    bbb = pd.read_csv(REPO / SHOWDOWN / "summary.csv").set_index("agent").loc[
        "bbb", "cumulative_regret_mean"]
    assert ts < bbb
    return [f"where its {ts:.0f} is below"]


QUOTES = [  # (a page, a callable giving the snippets of its prose, built from the files)
    (SCREENS_PAGE, _screens_set_up), (SCREENS_PAGE, _screens_chosen),
    (SCREENS_PAGE, _screens_late),
    (SCREEN_20K_PAGE, _screen_20k_page),
    (FIG6, _fig6_set_up), (FIG6, _fig6_same_as_screen), (FIG6, _fig6_memorisation),
    (FIG6, _fig6_learned), (FIG6, _fig6_weight_decay), (FIG6, _fig6_ts),
    (OPEN_PAGE, _open_page),
    (NU_PAGE, _nu_page),
]

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES)


# Numbers of a page's prose that are not results: the settings of the runs (steps and
# windows of steps, seeds, buffer sizes, widths, noise, prior and initial sigmas, weight
# decay, nu, the probe step), the versions of the machine, the year of the paper cited,
# the reference defaults cited. An entry with words is a setting in its context (the
# number there only); a bare number is a setting wherever the page writes it.
TORCH = "torch 2.13.0"  # the screens and sweeps ran on one machine (fig6.md checks it)
SETTINGS = {
    SCREENS_PAGE: {TORCH, "steps 2001-3000", "likelihood noise 0.1, initial posterior sigma 0.02",
                   "Gaussian prior (sigma 1), noise 0.1, initial sigma 0.02",
                   "the Gaussian prior with sigma 0.3", "at noise 0.5", "Noise 0.5 and 2",
                   "after step 1000", "(initial sigma 0.02 and 0.1)",
                   "at noise 0.1 and initial sigma 0.02"},
    SCREEN_20K_PAGE: {TORCH, "20,000", "10,001-20,000", "(buffer 4096",
                      "likelihood noise 0.1, initial posterior sigma 0.02",
                      "after step 10,000", "4096-item", "50,000-step", "(initial sigma 0.02)",
                      "(sigma 0.3)", "(noise 0.05)", "(2018)", "step 3000 ->"},
    FIG6: {"10,001-20,000", "the floor `noise_sigma` (0.1)", "`kl_scale buffer`, noise 0.1)",
           "50,000 steps", "strength 0.01", "weight decay 0.01 |", "(fixed noise 0.1",
           "20,000 steps", "20,000-step"},
    OPEN_PAGE: {TORCH, "buffer 4096", "buffer of 4096", "a buffer of 50,000 and decay 0.3",
                "2 x 100",
                "(noise 0.1, initial sigma 0.02, mixture)",
                "0.01 is worse than 0.02 or 0.05", "(noise 0.1, initial sigma 0.02, the"},
    NU_PAGE: {TORCH, "(2000 steps", "buffer 4096", "2 x 100", "defaults to 0.001",
              "(1, 0.1, 0.01, ...)", "`--nu 0.1`", "down to 0.01", "NeuralUCB at 0.01",
              "`--nu 0.01`"},
}


def _prose(text: str) -> str:
    """A page's prose, flattened: no generated tables, no code blocks (fenced, or indented
    by four spaces, in a list or not)."""
    return flat(prose(text, lists=False))


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page``'s prose that no check builds and no setting declares."""
    text = _prose(_blank_checked(page, (REPO / page).read_text(encoding="utf-8")))
    return uncovered(text, snippets(page, FRONT, QUOTES), SETTINGS[page])


test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked)
test_every_declared_setting_is_on_its_page = page_numbers.settings_test(
    SETTINGS, _prose, PAGES)
