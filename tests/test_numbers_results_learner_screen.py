"""The numbers of the learner screen's hand-written pages (results/mushroom/learner-screen/
README.md and the README.md of each of its screens), checked against the shipped files
they come from, as tests/test_quoted_numbers.py checks the front pages: each screen's
``summary.csv`` (per learner), ``runs.csv`` (per buffer, for the paired differences) and
``screen.json`` (the machine), and the bandit run a page compares with. A rerun that
changes a file without the page fails here.

A hand-written table copied from a screen is checked row by row (:data:`TABLES`): the
numbers of a row's result cells must be those of one learner of the files, as the page
rounds them. The prose is checked by :data:`QUOTES` (snippets built from the files, those
of tests/test_quoted_numbers.py included), and every other number of a page's prose must
be a setting or a citation declared in :data:`SETTINGS`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import page_numbers
import pandas as pd
from page_numbers import (
    REPO,
    cell_numbers,
    flat,
    prose,
    row_cells,
    rows_of,
    same,
    snippets,
    uncovered,
)
from test_quoted_numbers import (
    DECAY_1,
    DECAYS,
    GRID,
    GRID_50K,
    GRID_300,
    NEW_BUFFERS,
    REVISED,
    _against_decay_1,
    _decay_03_vs_1,
)
from test_quoted_numbers import QUOTES as FRONT

SCREEN = "results/mushroom/learner-screen"
PRIOR, UPDATES_8000 = f"{SCREEN}/bbb-prior", f"{SCREEN}/updates-8000"
PAGES = tuple(f"{folder}/README.md" for folder in (
    SCREEN, REVISED, GRID, GRID_50K, GRID_300, DECAYS, NEW_BUFFERS))
TOP, REVISED_PAGE, GRID_PAGE, GRID_50K_PAGE, GRID_300_PAGE, DECAYS_PAGE, NEW_PAGE = PAGES


def _folder(page: str) -> str:
    """A page's id in the tests: its folder's name."""
    return page.split("/")[-2]


# ---------------------------------------------------------------- the shipped files


def _summary(folder: str) -> pd.DataFrame:
    return pd.read_csv(REPO / folder / "summary.csv")


def _row(folder: str, learner: str, size: int | None = None) -> pd.Series:
    t = _summary(folder)
    t = t[t["learner"] == learner]
    if size is not None:
        t = t[t["buffer_size"] == size]
    assert len(t) == 1, (folder, learner, size)
    return t.iloc[0]


def _acts(row: pd.Series, what: str) -> float:
    """A share of the decisions the learner acts on (BBB: its Thompson samples), in %."""
    return 100 * float(row[f"{row['acting']}_{what}"])


def _share(folder: str, learner: str, what: str = "never_eaten",
           size: int | None = None) -> float:
    return _acts(_row(folder, learner, size), what)


def _span(values, digits: int = 0) -> str:
    """``min-max`` of some numbers, each to ``digits`` decimals."""
    values = list(values)
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def _trim(value: float) -> str:
    """A share to one decimal, a whole one without it: ``99.9``, ``100``."""
    return f"{value:.1f}".removesuffix(".0")


def _torch(folder: str) -> str:
    machine = json.loads((REPO / folder / "screen.json").read_text())["machine"]
    return re.search(r"torch \S+ CPU build", machine).group(0)


def _paired(folder: str, ref: str, learner: str, one: str, column: str) -> pd.Series:
    """A share minus another learner's (``one``, in ``ref``), buffer by buffer, in points."""
    a, b = (pd.read_csv(REPO / f / "runs.csv") for f in (folder, ref))
    a, b = (r[r["learner"] == n].set_index("buffer")[column] for r, n in ((a, learner),
                                                                          (b, one)))
    return 100 * (a - b)


def _mean_se(d: pd.Series) -> tuple[float, float]:
    return float(d.mean()), float(d.std() / len(d) ** 0.5)


def _against_1(learner: str, column: str) -> pd.Series:
    """As tests/test_quoted_numbers.py's ``_against_decay_1``: decay 0.3 or 3 against decay
    1 at 50,000 items, on the grid's 6 buffers."""
    one = learner.replace("-0.3-", "-1-").replace("-3-", "-1-")
    return _paired(DECAYS, GRID_50K, learner, one, column)


def _new_buffers(net: str, acting: str) -> pd.Series:
    """As ``_decay_03_vs_1``: decay 0.3 minus decay 1 on the 12 new buffers."""
    col = f"{acting}_never_eaten"
    return _paired(NEW_BUFFERS, NEW_BUFFERS, f"{net}-0.3-50k", f"{net}-1-50k", col)


# ---------------------------------------------------------------- hand-written tables

@dataclass(frozen=True)
class HandTable:
    """Every hand-written table of ``page`` headed by ``header``: the numbers of each
    row's ``columns`` must be, cell by cell, those of one candidate row of ``source``."""

    page: str
    header: str
    columns: tuple[int, ...]
    source: Callable[[], list[list[list[float]]]]


def _plus_minus(value: float, se: float) -> list[float]:
    """A paired difference's cell: ``0`` alone where it is the reference itself."""
    return [value] if value == se == 0 else [value, se]


def _first_screen_rows() -> list[list[list[float]]]:
    """Never eaten (+- se), last paid +5, last paid -35, edible uneaten, x oracle."""
    out = []
    for folder in (SCREEN, PRIOR):
        for _, r in _summary(folder).iterrows():
            out.append([[_acts(r, "never_eaten"), _acts(r, "never_eaten_se")],
                        *([_acts(r, w)] for w in ("last_paid_5", "last_paid_35",
                                                  "edible_uneaten")),
                        [float(r["times_oracle"])]])
    return out


def _at_50k_rows(folder: str, half: bool = True) -> list[list[list[float]]]:
    """Never eaten (+- se), edible uneaten, minus ridge (paired) and, with ``half``,
    x the half-information oracle."""
    out = []
    for _, r in _summary(folder).iterrows():
        row = [[_acts(r, "never_eaten"), _acts(r, "never_eaten_se")],
               [_acts(r, "edible_uneaten")],
               _plus_minus(100 * r["vs_ridge"], 100 * r["vs_ridge_se"])]
        out.append([*row, [float(r["times_half_oracle"])]] if half else row)
    return out


def _longer_rows() -> list[list[list[float]]]:
    """The share at 100 and at 300 draws per item, and their paired difference."""
    out = []
    for learner in ("greedy-wd-1-50k", "bbb-md-1-50k", "ridge"):
        short, long = (_row(f, learner) for f in (GRID_50K, GRID_300))
        column = f"{short['acting']}_never_eaten"
        d = _paired(GRID_300, GRID_50K, learner, learner, column)
        out.append([[_acts(short, "never_eaten")], [_acts(long, "never_eaten")],
                    [0.0] if (d == 0).all() else list(_mean_se(d))])
    return out


def _decays_rows() -> list[list[list[float]]]:
    """The grid's 50,000-item rows with their difference from decay 1 (``0`` for decay 1
    itself; none for the references)."""
    out = []
    for folder in (DECAYS, GRID_50K):
        for (_, r), row in zip(_summary(folder).iterrows(), _at_50k_rows(folder, False),
                               strict=True):
            learner = r["learner"]
            if folder == GRID_50K:
                last = [0.0] if "-1-" in learner else None
            elif learner.startswith(("greedy", "bbb")):
                last = list(_mean_se(_against_1(learner, f"{r['acting']}_never_eaten")))
            else:
                last = []
            if last is not None:
                out.append([*row, last])
    return out


TABLES = [
    HandTable(TOP, "| learner | acts on | never eaten, poisonous: eats | last paid +5: eats | "
                   "last paid -35: eats | edible left uneaten | x oracle |",
              (2, 3, 4, 5, 6), _first_screen_rows),
    HandTable(GRID_50K_PAGE, "| learner (acting decisions) | never eaten, poisonous: eats | "
                             "edible left uneaten | minus ridge, paired | "
                             "x half-information oracle |",
              (1, 2, 3, 4), lambda: _at_50k_rows(GRID_50K)),
    HandTable(GRID_300_PAGE, "| learner (acting decisions) | 100 draws per item | "
                             "300 draws per item | 300 minus 100, paired over the 6 buffers |",
              (1, 2, 3), _longer_rows),
    HandTable(DECAYS_PAGE, "| learner (acting decisions) | never eaten, poisonous: eats | "
                           "edible left uneaten | minus ridge, paired | "
                           "minus decay 1, paired |",
              (1, 2, 3, 4), _decays_rows),
    HandTable(NEW_PAGE, "| learner (acting decisions) | never eaten, poisonous: eats | "
                        "edible left uneaten | minus ridge, paired |",
              (1, 2, 3), lambda: _at_50k_rows(NEW_BUFFERS, False)),
]


def _matches(doc: list[list[str]], candidate: list[list[float]]) -> bool:
    return all(len(d) == len(s) and all(map(same, d, s))
               for d, s in zip(doc, candidate, strict=True))


def _table_errors(spec: HandTable, text: str) -> tuple[int, list[str]]:
    rows, errors = rows_of(text, spec.header), []
    candidates = spec.source()
    for _, line in rows:
        cells = row_cells(line)
        doc = [cell_numbers(cells[c]) for c in spec.columns]
        if not any(_matches(doc, cand) for cand in candidates):
            errors.append(line.strip())
    return len(rows), errors


def _blank_checked_cells(spec: HandTable, text: str) -> str:
    lines = text.splitlines()
    for k, line in rows_of(text, spec.header):
        lines[k] = "| " + " | ".join("" if i in spec.columns else c
                                     for i, c in enumerate(row_cells(line))) + " |"
    return "\n".join(lines)


# ---------------------------------------------------------------- the first screen


def _defaults() -> str:
    """The default learners (greedy, dropout, BBB) against the oracle."""
    rows = [_row(SCREEN, n) for n in ("greedy", "dropout", "bbb")]
    paid = [_acts(r, "last_paid_5") for r in rows]
    return (f"paid +5 ({_trim(min(paid))}-{_trim(max(paid))} %) and "
            f"{_span(_acts(r, 'never_eaten') for r in rows)} % of the poisonous mushrooms it "
            f"never saw eaten, against the oracle's {_share(SCREEN, 'oracle'):.1f} %, trained "
            f"on the same buffers with mean targets: "
            f"{_span(r['times_oracle'] for r in rows)} times as often")


def _likelihoods() -> str:
    greedy = ("greedy-learned", "greedy-learned-floor-1", "greedy-beta-0.5", "greedy-beta-1")
    bbb = ("bbb-learned", "bbb-beta-0.5", "bbb-beta-1")
    return (f"squared error or more ({_span(_share(SCREEN, n) for n in greedy)} % for the "
            f"greedy network, {_span(_share(SCREEN, n) for n in bbb)} % for BBB); beta-NLL "
            f"0.5 halves BBB's \"last paid +5\" bites "
            f"({_share(SCREEN, 'bbb-beta-0.5', 'last_paid_5'):.0f} %)")


def _wide_noise() -> str:
    left = (_share(SCREEN, f"bbb-noise-{n}", "edible_uneaten") for n in (5, 10, 20))
    return f"leaves edible mushrooms uneaten ({_span(left)} %)"


def _weight_decay() -> str:
    wd3 = _row(SCREEN, "greedy-wd-3")
    return (f"cut the never-eaten rate to {_share(SCREEN, 'greedy-wd-1'):.0f} % and "
            f"{_acts(wd3, 'never_eaten'):.0f} %, but weight decay 3 leaves a third of the "
            f"edible mushrooms uneaten in some runs ({_acts(wd3, 'edible_uneaten'):.0f} +- "
            f"{_acts(wd3, 'edible_uneaten_se'):.0f} %)")


def _more_outcomes() -> str:
    rows = [_row(SCREEN, n) for n in ("greedy-buffer-50k", "bbb-buffer-50k")]
    assert max(_acts(r, "edible_uneaten") for r in rows) < 0.05  # "every edible eaten"
    g, b = (_acts(r, "never_eaten") for r in rows)
    return (f"brings the never-eaten share to {g:.1f} % (greedy) and {b:.1f} % (BBB) and the "
            f"\"last paid +5\" share from {_share(SCREEN, 'greedy', 'last_paid_5'):.0f} % to "
            f"{_span(_acts(r, 'last_paid_5') for r in rows)} %, with every edible mushroom "
            f"eaten: the best learner here, and still "
            f"{_span(r['times_oracle'] for r in rows)} times the oracle")


def _fewer_updates() -> str:
    g, b = (_share(UPDATES_8000, n) for n in ("greedy-buffer-50k", "bbb-buffer-50k"))
    oracle = _row(UPDATES_8000, "oracle")
    return (f"50,000-item buffer reached {g:.1f} % (greedy) and {b:.1f} % (BBB)",
            f"the oracle itself then left {_acts(oracle, 'edible_uneaten'):.0f} +- "
            f"{_acts(oracle, 'edible_uneaten_se'):.0f} % of the edible mushrooms uneaten",
            f"to eat them all, with {_share(SCREEN, 'oracle'):.1f} % of never-eaten "
            f"poisonous ones)")


def _top() -> list[str]:
    assert _share(SCREEN, "oracle", "edible_uneaten") < 0.05  # "to eat them all"
    return [_torch(SCREEN), _defaults(), _likelihoods(), _wide_noise(), _weight_decay(),
            _more_outcomes(), *_fewer_updates()]


# ---------------------------------------------------------------- the revised screen


def _references() -> str:
    parts = [f"{_share(REVISED, n):.1f} +- {_share(REVISED, n, 'never_eaten_se'):.1f} %"
             for n in ("oracle", "oracle-half", "ridge", "ridge-means")]
    factor = json.loads((REPO / REVISED / "screen.json").read_text())["settings"]["pass_factor"]
    half = _share(REVISED, "oracle-half")
    return (f"the oracle eats {parts[0]}, the half-information oracle {parts[1]}, ridge "
            f"regression on the outcomes {parts[2]} and on the means {parts[3]}. The rule's "
            f"bar at this size is therefore ridge's {_share(REVISED, 'ridge'):.1f} % and "
            f"{factor:.0f} x {half:.1f} = {factor * half:.1f} %")


REFERENCES = ("oracle", "oracle-half", "ridge", "ridge-means")


def _learners(folder: str) -> pd.DataFrame:
    """The learners of a screen (no reference rows) with the share they act on, what they
    leave uneaten, and whether they leave at most 1 % of the edible mushrooms uneaten."""
    t = _summary(folder)
    t = t[~t["learner"].isin(REFERENCES)].copy()
    t["share"] = [_acts(r, "never_eaten") for _, r in t.iterrows()]
    t["left"] = [_acts(r, "edible_uneaten") for _, r in t.iterrows()]
    t["eats_all"] = t["left"] <= 1
    return t


def _no_learner_passes() -> str:
    t = _learners(REVISED)
    assert not t["passes"].any()
    eats = t[t["eats_all"]]
    wd1, wd3 = _row(REVISED, "greedy-wd-1"), _row(REVISED, "greedy-wd-3")
    return (f"eats {_span(eats['share'])} % of the never-eaten poisonous ones, "
            f"{_span(100 * eats['vs_ridge'])} points above ridge on the same buffers",
            f"({100 * wd1['vs_ridge']:.1f} +- {100 * wd1['vs_ridge_se']:.1f} points above ridge)",
            f"decay 3 eats {_acts(wd3, 'never_eaten'):.1f} % ({-100 * wd3['vs_ridge']:.1f} +- "
            f"{100 * wd3['vs_ridge_se']:.1f} below ridge, within the noise) and leaves "
            f"{_acts(wd3, 'edible_uneaten'):.1f} % uneaten")


def _ranked(folder: str, agent: str, names: dict[str, str], n: int) -> list[str]:
    """The first ``n`` learners of an agent by the ranking (among those that leave at most
    1 % of the edible mushrooms uneaten), as ``name (share %)``."""
    t = _learners(folder)
    t = t[t["eats_all"] & (t["agent"] == agent)].sort_values("share").head(n)
    return [f"{names.get(r.learner, r.learner)} ({r.share:.1f} %)" for r in t.itertuples()]


def _revised_ranking() -> str:
    greedy = _ranked(REVISED, "greedy", {"greedy-wd-0.1": "decay 0.1",
                                         "greedy": "the default"}, 2)
    bbb = _ranked(REVISED, "bbb", {"bbb-prior-0.03": "prior sigma 0.03",
                                   "bbb-beta-0.5": "beta-NLL 0.5", "bbb": "the default"}, 3)
    return (f"greedy: {greedy[0]}, then {greedy[1]}; BBB: {bbb[0]}, then {bbb[1]}, then "
            f"{bbb[2]}; dropout {_share(REVISED, 'dropout'):.1f} %",
            f"a learned noise is worst (BBB {_share(REVISED, 'bbb-learned'):.1f} %, greedy "
            f"{_share(REVISED, 'greedy-learned'):.1f} %)")


def _beside_the_first() -> str:
    at_16k = [_row(GRID, n, 16384) for n in ("greedy-wd-1-16k", "bbb-md-1-16k")]
    assert max(_acts(r, "edible_uneaten") for r in at_16k) < 0.05
    return (f"(the default greedy network {_share(REVISED, 'greedy'):.1f} % here against "
            f"{_share(SCREEN, 'greedy'):.1f} % there; the oracle "
            f"{_share(REVISED, 'oracle'):.1f} % against {_share(SCREEN, 'oracle'):.1f} %)",
            f"items: greedy {_acts(at_16k[0], 'never_eaten'):.1f} %, BBB "
            f"{_acts(at_16k[1], 'never_eaten'):.1f} %, both eating every edible mushroom)")


def _revised() -> list[str]:
    return [_torch(REVISED), _references(), *_no_learner_passes(), *_revised_ranking(),
            *_beside_the_first()]


# ---------------------------------------------------------------- the memory grid


def _grid_passes() -> str:
    best, wd3 = _row(GRID, "bbb-md-1-16k", 16384), _row(GRID, "bbb-md-3-16k", 16384)
    return (f"{best['times_half_oracle']:.1f} times the half-information oracle",
            f"BBB with decay 3 is level with ridge ({_acts(wd3, 'never_eaten'):.1f} %) but "
            f"leaves {_acts(wd3, 'edible_uneaten'):.1f} % of the edible mushrooms uneaten")


def _at_4k() -> str:
    shares = _learners(GRID).query("buffer_size == 4096")["share"]
    return f"{min(shares):.1f}-{max(shares):.0f} %"


def _grid_ranking() -> str:
    bbb = _ranked(GRID, "bbb", {"bbb-md-1-16k": "decay 1 at 16,384",
                                "bbb-md-3-4k": "decay 3 at 4,096",
                                "bbb-md-0.3-16k": "decay 0.3 at 16,384"}, 3)
    greedy = _ranked(GRID, "greedy", {"greedy-wd-1-16k": "decay 1 at 16,384",
                                      "greedy-wd-3-16k": "decay 3 at 16,384"}, 2)
    return (f"BBB: {bbb[0]}, then {bbb[1]} and {bbb[2]}; greedy: {greedy[0]}, then "
            f"{greedy[1]}.")


def _longer_history() -> str:
    t = _learners(GRID)
    t["decay"] = t["learner"].str.rsplit("-", n=1).str[0]
    by = t.pivot(index="decay", columns="buffer_size", values="share")
    return f"falls by a factor of {_span(by[4096] / by[16384], 1)} from 4,096 to 16,384"


def _decay_03_ahead() -> str:
    z = [-m / s for m, s in (_mean_se(_against_1(n, c)) for n, c in (
        ("greedy-wd-0.3-50k", "greedy_never_eaten"), ("bbb-md-0.3-50k", "thompson_never_eaten")))]
    return f"decay 0.3 ahead of decay 1 by {_span(z, 1)} standard errors"


def _grid() -> list[str]:
    return [_torch(GRID), *_grid_passes(), f"there ({_at_4k()}) are", _grid_ranking(),
            _longer_history(), f"(4,096 items) stays at {_at_4k()}", _decay_03_ahead()]


# ---------------------------------------------------------------- the 50,000-item column


def _late_regret() -> float:
    """The memory-horizon run's BBB: its expected regret per step over its last 10,000."""
    from test_quoted_numbers import _late

    return _late(DECAY_1, "bbb")


def _pilot_reference() -> float:
    """BBB's expected regret per step over steps 14,001-20,000 of memory-horizon (the
    50,000-item runs of memory-20k)."""
    from bandits.tools.memory_tables import at_step

    t = at_step(REPO / DECAY_1, 20_000, 6_000)
    return float(t[t["agent"] == "bbb"]["late"].mean())


def _grid_50k() -> list[str]:
    nets = [_row(GRID_50K, n) for n in ("greedy-wd-1-50k", "bbb-md-1-50k")]
    oracles = {f"{_share(GRID_50K, n):.1f}" for n in ("oracle", "oracle-half")}
    assert len(oracles) == 1, oracles
    ridge = _share(GRID_50K, "ridge")
    cost = 0.48 * 15 / 100  # per step, per % of the never-eaten poisonous ones eaten
    return [
        _torch(GRID_50K),
        f"against {_share(REVISED, 'greedy-wd-1'):.1f} % (greedy, decay 1) and "
        f"{_share(REVISED, 'bbb'):.0f} % (BBB without decay) at the paper's 4,096 items",
        f"and {_share(GRID, 'greedy-wd-1-16k'):.1f} % and {_share(GRID, 'bbb-md-1-16k'):.1f} % "
        f"at 16,384",
        f"ridge regression on the one-hot features reaches {ridge:.1f} % and the oracles "
        f"{oracles.pop()} %: the networks are {_span((100 * r['vs_ridge'] for r in nets), 1)} "
        f"points above ridge, paired over the buffers, and "
        f"{_span(r['times_half_oracle'] for r in nets)} times the half-information oracle",
        f"step: {_span((cost * _acts(r, 'never_eaten') for r in nets), 2)} at these networks' "
        f"{_span((_acts(r, 'never_eaten') for r in nets), 1)} %, {cost * ridge:.3f} at "
        f"ridge's {ridge:.1f} %",
        f"pays {_late_regret():.3f} per step",
    ]


def _grid_300() -> list[str]:
    g, b, ridge = (_share(GRID_50K, n) for n in ("greedy-wd-1-50k", "bbb-md-1-50k", "ridge"))
    return [_torch(GRID_300),
            f"eats {g:.1f} % (greedy) and {b:.1f} % (BBB) of the never-eaten poisonous "
            f"mushrooms, where ridge regression on the same outcomes eats {ridge:.1f} %",
            f"over steps 14,001-20,000 ({_pilot_reference():.3f} there)"]


def _by_decay_03() -> str:
    """Decay 0.3 against decay 1 on the grid's 6 buffers, as both later pages write it."""
    d = [_against_1(n, c) for n, c in (("greedy-wd-0.3-50k", "greedy_never_eaten"),
                                       ("bbb-md-0.3-50k", "thompson_never_eaten"))]
    (gm, gs), (bm, bs) = (_mean_se(x) for x in d)
    assert f"{gm:+.2f} +- {gs:.2f}" == _against_decay_1("greedy-wd-0.3-50k",
                                                        "greedy_never_eaten")
    return (f"by {-gm:.2f} +- {gs:.2f} points (greedy) and {-bm:.2f} +- {bs:.2f} points (BBB",
            f"{-gm / gs:.1f} and {-bm / bs:.1f} standard errors")


def _decays() -> list[str]:
    nets = _learners(DECAYS)
    assert not nets["passes"].any() and (nets["vs_ridge"] > 0).all()
    lower = {int((_against_1(n, c) < 0).sum()) for n, c in (
        ("greedy-wd-0.3-50k", "greedy_never_eaten"), ("bbb-md-0.3-50k", "thompson_never_eaten"))}
    n = len(_against_1("bbb-md-0.3-50k", "thompson_never_eaten"))
    wd3 = _mean_se(_against_1("greedy-wd-3-50k", "greedy_never_eaten"))
    bbb = _row(DECAYS, "bbb-md-0.3-50k")
    return [_torch(DECAYS),
            f"same outcomes and {_span(nets['times_half_oracle'])} times the half-information",
            f"decay 1 on {lower.pop() if len(lower) == 1 else lower} of the {n} buffers",
            *_by_decay_03(),
            f"(by {wd3[0]:.2f} +- {wd3[1]:.2f} points)",
            f"with BBB at {_acts(bbb, 'never_eaten'):.1f} % and {100 * bbb['vs_ridge']:.1f} +- "
            f"{100 * bbb['vs_ridge_se']:.1f} points above ridge"]


def _new() -> list[str]:
    bbb, greedy = _new_buffers("bbb-md", "thompson"), _new_buffers("greedy-wd", "greedy")
    assert _decay_03_vs_1("bbb-md", "thompson") == "{:+.2f} +- {:.2f}".format(*_mean_se(bbb))
    z = f"{-bbb.mean() / _mean_se(bbb)[1]:.1f} standard errors"
    assert _share(NEW_BUFFERS, "bbb-md-0.3-50k", "edible_uneaten") < 0.05
    nets = _learners(NEW_BUFFERS)
    row = _row(NEW_BUFFERS, "bbb-md-0.3-50k")
    grid = [_mean_se(_against_1(n, c)) for n, c in (
        ("greedy-wd-0.3-50k", "greedy_never_eaten"), ("bbb-md-0.3-50k", "thompson_never_eaten"))]
    assert all(m < 0 for m, _ in grid) and bbb.mean() < 0 and greedy.mean() < 0  # one sign
    return [_torch(NEW_BUFFERS), *_by_decay_03(),
            f"decay 0.3 is ahead for BBB by {z}",
            f"(lower on {(bbb < 0).sum()} of the {len(bbb)} buffers)",
            f"greedy {_decay_03_vs_1('greedy-wd', 'greedy')} points (lower on "
            f"{(greedy < 0).sum()}). BBB's is below zero by {z}",
            f"(BBB at decay 0.3: {100 * row['vs_ridge']:.1f} +- {100 * row['vs_ridge_se']:.1f} "
            f"points above it)",
            f"these are {_span(nets['times_half_oracle'])} times it",
            f"where BBB at decay 0.3 was {-grid[1][0]:.2f} +- {grid[1][1]:.2f} points below"]


# (a page, a callable giving the snippets of its prose it must hold, built from the files)
QUOTES = [(TOP, _top), (REVISED_PAGE, _revised), (GRID_PAGE, _grid),
          (GRID_50K_PAGE, _grid_50k), (GRID_300_PAGE, _grid_300), (DECAYS_PAGE, _decays),
          (NEW_PAGE, _new)]

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES)


test_every_row_of_a_hand_written_table_is_a_row_of_its_files = page_numbers.table_test(
    TABLES, _table_errors, "match no learner of their files", ids=lambda s: _folder(s.page))


def test_a_changed_number_fails_its_row():
    """The table check can fail: one number moved by a rounding step breaks the row."""
    spec = TABLES[0]
    text = (REPO / spec.page).read_text(encoding="utf-8")
    k, line = rows_of(text, spec.header)[1]
    cells = row_cells(line)
    cells[2] = cells[2].replace(cell_numbers(cells[2])[0],
                                f"{float(cell_numbers(cells[2])[0]) + 0.1:.1f}", 1)
    lines = text.splitlines()
    lines[k] = "| " + " | ".join(cells) + " |"
    assert _table_errors(spec, "\n".join(lines))[1] != []


# Numbers of the pages' prose that are not results: the settings of the screens (buffer
# sizes, draws per item and the updates and draws they come to, decays, noises, priors,
# widths, eat rate, steps and seeds of the bandit runs named), the rule's bars fixed
# before the runs, the target of 0.04 per step, versions and the year of a paper cited.
# An entry with words is a setting in its context (the number there only); a bare number
# is a setting wherever the page writes it.
LABELS = {"floor 0.1", "beta-NLL 0.5", "weight decay 0.1", "layer 100 x 10", "buffer 50,000",
          "dropout 0.2", "noise 0.1", "prior sigma 0.1", "prior sigma 0.03"}
SETTINGS = {
    TOP: {"20,000", "about 310", "about 26", "4,096", "50,000", "300", "4096", "0.03",
          "about 500", "8124", "2022", "beta 0.5 and 1", "(0.1, 0.03)", "8,000",
          "about 10 times", *LABELS},
    REVISED_PAGE: {"4,096", "0.03", "300", "19,200", "50,000", "100", "78,125", "16,384",
                   "Decay 0.3 and 3"},
    GRID_PAGE: {"0.03", "100", "6,400", "4,096", "25,600", "16,384", "78,125", "50,000",
                "300", "about 100 to 350 draws", "{0.3, 1, 3}", "20,000-step",
                "at decay 0.3 and 3"},
    GRID_50K_PAGE: {"100", "78,125", "0.03", "50,000", "0.48 x 15 x s = 7.2 s",
                    "10,000", "0.04", "4,096", "16,384", "Decay 0.3 and 3"},
    GRID_300_PAGE: {"100", "50,000", "300", "234,375", "20,000", "14,001-20,000", "0.04"},
    DECAYS_PAGE: {"{0.3, 1, 3}", "4,096", "16,384", "50,000", "100", "78,125", "0.03",
                  "20,000", "0.3"},
    NEW_PAGE: {"50,000", "100", "20,000", "14,001-20,000", "0.3"},
}


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page``'s prose that no check builds and no setting declares."""
    text = (REPO / page).read_text(encoding="utf-8")
    for spec in TABLES:
        if spec.page == page:
            text = _blank_checked_cells(spec, text)
    longest_first = sorted(snippets(page, FRONT, QUOTES), key=len, reverse=True)
    return uncovered(flat(prose(text)), longest_first, SETTINGS[page])


test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked, ids=_folder)
test_every_declared_setting_is_on_its_page = page_numbers.settings_test(
    SETTINGS, pages=PAGES, ids=_folder)
