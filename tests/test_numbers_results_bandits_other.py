"""Numbers that the results pages of the wheel bandit (results/wheel), of MNIST as a bandit
(results/mnist-bandit) and of the neural bandits under their papers' set-up
(results/neural-bandits and its runs) quote in their prose and in their hand-written
tables, checked against the shipped files they come from (as tests/test_quoted_numbers.py
does for the README and docs/index.md): a rerun that changes a file without the page
fails here.

A hand-written table is checked whole (:data:`TABLES`): its rows, built from the files as
the page writes them, must be the page's rows. The prose is checked by :data:`QUOTES`
(snippets built from the files), and every other number of the prose must be a setting
or a citation declared in :data:`SETTINGS`."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import page_numbers
import pandas as pd
import pytest
from page_numbers import REPO, flat, prose, row_cells, rows_of, snippets, uncovered
from test_numbers_agents_compared import ROW_NAMES, _next, _ranking

from bandits.tools.memory_tables import EPSILON, at_step
from bandits.tools.neural_tables import _screen

WHEEL = "results/wheel/README.md"
MNIST_BANDIT = "results/mnist-bandit/README.md"
NB = "results/neural-bandits"
INDEX = f"{NB}/README.md"
MUSH_REF = f"{NB}/mushroom-reference/README.md"
MNIST_REF = f"{NB}/mnist-reference/README.md"
MUSH_GRID = f"{NB}/mushroom-grid/README.md"
MNIST_NU = f"{NB}/mnist-nu/README.md"
PAGES = (WHEEL, MNIST_BANDIT, INDEX, MUSH_REF, MNIST_REF, MUSH_GRID, MNIST_NU)

SHOWDOWN = "results/wheel/showdown"
MB = "results/mnist-bandit"
REF_1 = f"{NB}/mushroom-reference"  # nu = 1, lambda = 0.001
REF_5 = f"{NB}/mushroom-reference/nu-lambda-1e-5"
MREF = f"{NB}/mnist-reference"
WIDTHS = f"{MREF}/widths"
NU_FINAL = f"{NB}/mnist-nu/final"
NU_SCREEN = f"{NB}/mnist-nu/screen/lambda-0.00001"
GRID = f"{NB}/mushroom-grid"
GRID_FINAL = tuple(f"{GRID}/final/{r}" for r in ("neuralucb", "neuralts", "baselines"))
SPLIT = 2000  # the papers' every-round phase: rounds 1-2,000
PROBES = (100, 1000, 2000, 5000, 10000)  # the probe rounds of the widths tables
NETWORKS = ("neurallinear", "greedy", "neuralts", "neuralucb")  # mnist-reference, no BBB


# ---------------------------------------------------------------- the shipped files


@lru_cache
def _config(run: str) -> dict:
    return json.loads((REPO / run / "config.json").read_text(encoding="utf-8"))


def _sweep_wall(sweep: str) -> float:
    return json.loads((REPO / sweep / "sweep.json").read_text())["wall_seconds"]


@lru_cache
def _ranked(*runs: str) -> pd.DataFrame:
    """The agents of runs over the same seeds, ranked together (``metrics.csv``), as the
    generated tables of bandits.tools.neural_tables rank them."""
    if len(runs) == 1:
        return _ranking(runs[0]).set_index("agent", drop=False)
    from bandits.records.regret import ranking

    metrics = pd.concat([pd.read_csv(REPO / r / "metrics.csv") for r in runs])
    return ranking(metrics).set_index("agent", drop=False)


def _mean(runs: str | tuple[str, ...], agent: str, digits: int = 1) -> str:
    runs = (runs,) if isinstance(runs, str) else runs
    return f"{_ranked(*runs).loc[agent, 'mean']:.{digits}f}"


def _next_diff(runs: tuple[str, ...], agent: str) -> tuple[str, str]:
    """The ranking's paired difference of ``agent`` to the next agent: ``"8 +- 3"``, and
    which agent that is (a difference the seeds do not separate fails)."""
    m = re.fullmatch(r"(\d+ \+- \d+) lower than (\S+)", _ranked(*runs).loc[agent, "next"])
    assert m, (runs, agent, _ranked(*runs).loc[agent, "next"])
    return m[1], m[2]


@lru_cache
def _finals(run: str, agent: str) -> pd.Series:
    """An agent's cumulative regret at the horizon, per seed (``metrics.csv``)."""
    m = pd.read_csv(REPO / run / "metrics.csv")
    m = m[m["agent"] == agent]
    return m[m["step"] == m["step"].max()].set_index("seed")["cumulative_regret"]


def _paired(a: tuple[str, str], b: tuple[str, str], digits: int) -> tuple[float, str]:
    """The seed-by-seed difference ``a - b`` of two agents (run, agent): its mean, and
    ``"|mean| +- s.e."`` as the pages write it."""
    d = (_finals(*a) - _finals(*b)).dropna()
    assert len(d) == 5, (a, b)
    se = d.std() / math.sqrt(len(d))
    return d.mean(), f"{abs(d.mean()):.{digits}f} +- {se:.{digits}f}"


@lru_cache
def _phases(run: str) -> pd.DataFrame:
    return pd.read_csv(REPO / run / "phases.csv")


def _window(run: str, agent: str, first: int, last: int) -> float:
    """An agent's regret over rounds ``first``-``last`` (``phases.csv``), mean over the
    seeds (the window must be whole phases)."""
    p = _phases(run)
    p = p[p["agent"] == agent]
    assert first in set(p["start"]) and last in set(p["end"]), (run, first, last)
    inside = p[(p["start"] >= first) & (p["end"] <= last)]
    return inside["regret"].sum() / p["seed"].nunique()


def _steps(run: str) -> int:
    return int(_config(run)["steps"])


def _early(run: str, agent: str) -> float:
    return _window(run, agent, 1, SPLIT)


def _late(run: str, agent: str) -> float:
    return _window(run, agent, SPLIT + 1, _steps(run))


def _wall(run: str, agent: str | None = None, fmt: str = ",.0f") -> str:
    c = _config(run)
    return format(c["wall_seconds"] if agent is None else c["wall_seconds_per_agent"][agent],
                  fmt)


def _e(x: float) -> str:
    """A setting as the pages write it: 1e-5, 0.1, 1."""
    text = f"{x:g}"
    return re.sub(r"e-0*(\d)", r"e-\1", text)


def _span(values, digits: int = 0) -> str:
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


@lru_cache
def _exploration(where: str) -> pd.DataFrame:
    return pd.read_csv(REPO / where / "exploration.csv")


def _thousandth_from() -> str:
    """The first probe round of mnist-reference from which on both networks' width (the
    other arms') is a thousandth of the gap of the means or less, at every later probe."""
    f = _exploration(WIDTHS)
    f = f[f["step"].isin(PROBES)]
    small = f.assign(ok=f["spread_other"] <= 1e-3 * f["gap"]).groupby("step")["ok"].all()
    first = next(s for s in PROBES if small[[p for p in PROBES if p >= s]].all())
    assert first < PROBES[-1]
    return f"from round {first:,} on"


# ---------------------------------------------------------------- the hand-written tables


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _bold(text: str, flag: bool) -> str:
    return f"**{text}**" if flag else text


def _wheel_rows() -> list[str]:
    """Both wheel tables (the same header): final cumulative regret per delta, and as a
    share of uniform's, the lowest of a column in bold (``sweep_summary.csv``)."""
    t = pd.read_csv(REPO / SHOWDOWN / "sweep_summary.csv")
    mean = t.pivot(index="agent", columns="wheel_delta", values="cumulative_regret_mean")
    share = (mean / mean.loc["uniform"]).drop("uniform")
    rows = []
    for table, fmt in ((mean, ".0f"), (share, ".3f")):
        for agent, r in table.iterrows():
            rows.append(_row(ROW_NAMES[agent], *(
                _bold(format(v, fmt), agent == table[d].idxmin()) for d, v in r.items())))
    return rows


def _mnist_bandit_rows() -> list[str]:
    """The MNIST bandit's ranking (``bandits.records.regret.ranking`` of ``metrics.csv``)
    and each agent's share of wrong digits in the last 200 steps (``phases.csv``), mean
    +- standard error over the seeds, the lowest in bold."""
    table = _ranking(MB).reset_index(drop=True)
    late = at_step(REPO / MB, _steps(MB), 200)
    shares = late.groupby("agent")["late"]
    mean, se = shares.mean(), shares.std() / shares.count() ** 0.5
    rows = []
    for i, r in table.iterrows():
        a = r["agent"]
        rows.append(_row(ROW_NAMES[a], _bold(f"{r['mean']:.0f}", i == 0), f"{r['s.e.']:.0f}",
                         f"{r['min']:.0f}", f"{r['max']:.0f}", _next(r["next"]),
                         f"{_bold(f'{mean[a]:.3f}', a == mean.idxmin())} +- {se[a]:.3f}"
                         ).replace("|  |", "| |"))
    return rows


# the labels of the mushroom-reference table, by run and agent (settings, checked against
# each run's config.json by _mushroom_reference_rows)
REF_LABELS = {(REF_5, "neuralucb"): "NeuralUCB | 1e-5, 1e-5",
              (REF_1, "neuralucb"): "NeuralUCB | 1, 0.001",
              (REF_1, "greedy"): "greedy network | (weight decay 1e-3)",
              (REF_5, "greedy"): "greedy network | (weight decay 1e-5)",
              (REF_1, "linucb"): "LinUCB (alpha 1) |",
              (REF_5, "linucb"): "LinUCB (alpha 1) |"}


def _mushroom_reference_rows() -> list[str]:
    """Both runs of mushroom-reference in one table, lowest mean first (bold): mean +-
    standard error, spread, the regret of rounds 1-2,000 and of the rest (LinUCB, which
    reads none of the settings, once: its two runs must give the same row)."""
    rows = []
    for (run, agent), label in REF_LABELS.items():
        c = _config(run)
        settings = {"neuralucb": (c["nu"], c["ucb_lambda"]), "greedy": (c["weight_decay"],),
                    "linucb": (c["ucb_alpha"],)}[agent]
        assert [float(x) for x in re.findall(r"\d[\d.e-]*", label)] == list(settings), label
        r = _ranked(run).loc[agent]
        rows.append((r["mean"], label, f"{r['mean']:.1f} +- {r['s.e.']:.1f}",
                     f"{r['min']:.0f} - {r['max']:.0f}", f"{_early(run, agent):.1f}",
                     f"{_late(run, agent):.1f}"))
    rows = sorted(set(rows))
    return [f"| {label} | " + " | ".join([_bold(mean, i == 0), *rest]) + " |"
            for i, (_, label, mean, *rest) in enumerate(rows)]


def _mnist_reference_rows() -> list[str]:
    """mnist-reference's regret per phase (the header's windows, from ``phases.csv``),
    mean over the seeds, in the order of the run's ranking."""
    header = next(line for line in (REPO / MNIST_REF).read_text().splitlines()
                  if line.startswith("| agent | 1-1,000 |"))
    windows = [tuple(int(x.replace(",", "")) for x in c.split("-")) for c in row_cells(header)[1:]]
    return [_row(ROW_NAMES[a], *(f"{_window(MREF, a, *w):.1f}" for w in windows))
            for a in _ranking(MREF)["agent"]]


INDEX_RUNS = {"mushroom-reference": REF_5, "mnist-reference": MREF,
              "mushroom-grid": GRID_FINAL[0], "mnist-nu": NU_FINAL}


def _index_rows() -> list[str]:
    """The index's list of runs: the seeds and the horizon of each (its config.json); the
    other cells are the page's words."""
    text = (REPO / INDEX).read_text(encoding="utf-8")
    rows = []
    for _, line in rows_of(text, "| run | data | training | seeds | horizon |"):
        cells = row_cells(line)
        run = INDEX_RUNS[re.match(r"\[([\w-]+)\]", cells[0])[1]]
        rows.append(_row(*cells[:3], str(_config(run)["seeds"]), f"{_steps(run):,}"))
    return rows


# (page, the header of its hand-written table(s), the rows built from the files)
TABLES: list[tuple[str, str, Callable[[], list[str]]]] = [
    (WHEEL, "| agent | delta 0.5 | 0.7 | 0.9 | 0.95 | 0.99 |", _wheel_rows),
    (MNIST_BANDIT, "| agent | mean | s.e. | min | max | next | wrong, steps 3801-4000 |",
     _mnist_bandit_rows),
    (MUSH_REF, "| agent | nu, lambda | regret at 8,124 | min - max | first 2,000 rounds | "
               "rounds 2,001-8,124 |", _mushroom_reference_rows),
    (MNIST_REF, "| agent | 1-1,000 | 1,001-2,000 | 2,001-5,000 | 5,001-10,000 | "
                "9,001-10,000 |", _mnist_reference_rows),
    (INDEX, "| run | data | training | seeds | horizon |", _index_rows),
]


@pytest.mark.parametrize("page, header, rows", TABLES, ids=lambda x: getattr(x, "__name__", x))
def test_a_hand_written_table_is_its_files(page, header, rows):
    have = sorted(line.strip() for _, line in rows_of((REPO / page).read_text(), header))
    want = sorted(rows())
    assert have, f"{page} has no table headed {header!r}"
    assert have == want, (f"{page}: rows of no file {sorted(set(have) - set(want))}; "
                          f"rows the files give {sorted(set(want) - set(have))}")


def test_a_changed_row_fails():
    """The table check can fail: one number moved in a row breaks it."""
    page, header, rows = TABLES[1]
    text = (REPO / page).read_text()
    k, line = rows_of(text, header)[0]
    changed = line.replace(row_cells(line)[2], str(int(row_cells(line)[2]) + 1), 1)
    assert changed.strip() not in rows()


# ---------------------------------------------------------------- the prose


def _wheel_std() -> str:
    t = pd.read_csv(REPO / SHOWDOWN / "sweep_summary.csv").set_index(["agent", "wheel_delta"])
    std = t["cumulative_regret_std"]
    return f"(BBB's std is {std['bbb', 0.5]:,.0f} at delta 0.5, {std['bbb', 0.7]:,.0f} at 0.7:"


def _wheel_greedy() -> str:
    t = pd.read_csv(REPO / SHOWDOWN / "sweep_summary.csv")
    m = t.pivot(index="agent", columns="wheel_delta", values="cumulative_regret_mean")
    return f"does no better than uniform ({_span(m.loc['greedy'] / m.loc['uniform'], 2)} of"


def _mnist_bandit_walls() -> str:
    w = _config(MB)["wall_seconds_per_agent"]
    others = [w[a] for a in ("neuralucb", "neuralts", "neurallinear", "greedy", "eps1", "eps5")]
    return (f"LinFullPost {w['linfullpost']:.0f} s and LinUCB {w['linucb']:.0f} s, whose "
            f"785 x 785 float64 posteriors per arm and run dominate; BBB {w['bbb']:.0f} s; the "
            f"other networks {_span(others)} s)")


def _mnist_bandit_uniform() -> str:
    late = at_step(REPO / MB, _steps(MB), 200)
    return f"(uniform: {late[late['agent'] == 'uniform']['late'].mean():.1f})"


def _beats_linucb() -> str:
    diff, below = _next_diff((MREF,), "neuralucb")
    assert below == "linucb"
    return f"NeuralUCB by {diff} wrong answers"


def _index_mnist() -> str:
    return f"NeuralUCB and NeuralTS beat LinUCB ({_beats_linucb()})"


def _index_nu() -> str:
    _, d = _paired((MREF, "greedy"), (NU_FINAL, "neuralucb"), 0)
    return (f"NeuralUCB makes {_mean(NU_FINAL, 'neuralucb')} wrong answers, level with the "
            f"greedy network (paired difference {d})")


def _ref_walls() -> str:
    def run(r: str) -> str:
        return f"**{_wall(r)} s ({_config(r)['wall_seconds'] / 60:.1f} min)**"
    return (f"Wall time {run(REF_1)} for nu = 1 (NeuralUCB {_wall(REF_1, 'neuralucb')} s, "
            f"greedy {_wall(REF_1, 'greedy')} s, LinUCB {_wall(REF_1, 'linucb')} s) and "
            f"{run(REF_5)} for nu = 1e-5 ({_wall(REF_5, 'neuralucb')} s, "
            f"{_wall(REF_5, 'greedy')} s, {_wall(REF_5, 'linucb')} s)")


NAMED = {"neuralucb": "NeuralUCB", "greedy": "the greedy network", "linucb": "LinUCB"}


def _ref_pairs() -> str:
    def pairs(run: str) -> str:
        order = list(_ranked(run)["agent"])
        (d0, n0), (d1, n1) = (_next_diff((run,), a) for a in order[:2])
        assert [n0, n1] == order[1:], order
        return (f"{NAMED[order[0]]} is {d0} below {NAMED[order[1]]} and {NAMED[order[1]]} "
                f"{d1} below {NAMED[order[2]]}")
    return f"at nu = 1e-5 {pairs(REF_5)}; at nu = 1 {pairs(REF_1)}."


def _ref_late() -> str:
    return (f"round 2,000 ({_late(REF_5, 'neuralucb'):.1f} in {_steps(REF_5) - SPLIT:,} rounds, "
            f"against the greedy network's {_late(REF_5, 'greedy'):.1f})")


def _ref_nu_1() -> str:
    early = _early(REF_1, "neuralucb") - _early(REF_1, "greedy")
    late = _late(REF_1, "neuralucb") - _late(REF_1, "greedy")
    return (f"it pays {early:.0f} more wrong answers than the greedy network in the first "
            f"2,000 rounds and {late:.0f} more after")


def _reference_minutes() -> str:
    """What the reference fit costs per setting: the mean of the two runs' wall times."""
    minutes = (_config(REF_1)["wall_seconds"] + _config(REF_5)["wall_seconds"]) / 2 / 60
    return f"costs about {minutes:.0f} minutes per setting here"


def _ref_grid() -> str:
    d, _ = _paired((GRID_FINAL[2], "greedy"), (GRID_FINAL[0], "neuralucb"), 1)
    assert d > 0
    return (f"NeuralUCB makes {_mean(GRID_FINAL, 'neuralucb')} wrong answers on these seeds, "
            f"the greedy network {_mean(GRID_FINAL, 'greedy')}, not separated")


def _mref_walls() -> str:
    return f"Wall time **{_wall(MREF)} s ("


def _weights() -> int:
    """The number of weights of mnist-reference's network: the disjoint input (784 pixels
    per arm, 10 arms), its one hidden layer and the output."""
    (hidden,) = _config(MREF)["hidden"]
    return 10 * 784 * hidden + hidden + hidden + 1


def _mref_rerun() -> str:
    m = pd.read_csv(REPO / MREF / "metrics.csv")
    agents = _config(WIDTHS)["agent"]
    again = pd.read_csv(REPO / WIDTHS / "summary.csv").set_index("agent")
    first = pd.read_csv(REPO / MREF / "summary.csv").set_index("agent").loc[again.index]
    pd.testing.assert_frame_equal(again, first)  # the rerun's regret is the run's
    return (f"(`--agent neuralucb neuralts`, {_config(WIDTHS)['wall_seconds']:.0f} s, two "
            f"workers, idle 2-core CPU; their `metrics.csv` came out identical to the rows "
            f"above, {m['agent'].isin(agents).sum():,} rows)")


def _last(agent: str) -> float:
    return _window(MREF, agent, _steps(MREF) - 999, _steps(MREF))


def _first(agent: str) -> float:
    return _window(MREF, agent, 1, 1000)


def _mref_first() -> str:
    lin = _first("linucb")
    assert lin == min(_first(a) for a in _ranking(MREF)["agent"])
    return (f"LinUCB leads for the first 1,000 rounds ({lin:.0f} against "
            f"{_span([_first(a) for a in NETWORKS])})")


def _mref_last() -> str:
    nets = [_last(a) for a in NETWORKS]
    return (f"it errs about {_last('linucb') / (sum(nets) / len(nets)):.1f} times as often as "
            f"the networks ({_last('linucb'):.0f} against {_span(nets)} in the last 1,000 "
            f"rounds)")


def _mref_order() -> str:
    def m(a: str) -> str:
        return _mean(MREF, a, 0)
    return (f"The greedy network ({m('greedy')}) and NeuralLinear ({m('neurallinear')}) are "
            f"ahead of NeuralUCB ({m('neuralucb')}) and NeuralTS ({m('neuralts')})")


def _mref_same() -> str:
    return (f"({_last('greedy'):.1f} greedy, {_last('neuralucb'):.1f} NeuralUCB, "
            f"{_last('neuralts'):.1f} NeuralTS)")


def _mref_draws() -> str:
    f = _exploration(WIDTHS)
    f = f[f["step"] == _steps(MREF)].set_index("agent")["wrong_share"]
    pct = [_last(a) / 10 for a in NETWORKS]
    return (f"round 10,000 ({f['neuralucb']:.3f} and {f['neuralts']:.3f} on these 64 images) "
            f"is close to the networks' late error, exploration or not ({_span(pct, 1)} % of "
            f"the last 1,000 rounds, the greedy network's {_last('greedy') / 10:.1f} %)")


def _mref_bbb() -> str:
    assert _ranking(MREF)["agent"].iloc[-1] == "bbb"
    return (f"**BBB is last** ({_mean(MREF, 'bbb', 0)}), and its late regret is twice the "
            f"networks' ({_last('bbb'):.0f} against {_span([_last(a) for a in NETWORKS])}")


@lru_cache
def _nu_screen() -> pd.DataFrame:
    t = pd.read_csv(REPO / NU_SCREEN / "sweep_summary.csv")
    return t.assign(se=t["cumulative_regret_std"] / t["seeds"] ** 0.5).set_index("nu")


def _nu_walls() -> list[str]:
    return [f"The screen took {_sweep_wall(NU_SCREEN):,.0f} s",
            f"the final run {_wall(NU_FINAL)} s (one worker"]


def _nu_screen_text() -> list[str]:
    t = _nu_screen().sort_values(["cumulative_regret_mean", "nu"])
    top = t["cumulative_regret_mean"]
    assert top.idxmax() == t.index.max()  # the largest nu is the highest
    return [f"Chosen by the rule: nu = {_e(t.index[0])}. The screen's standard errors "
            f"({t['se'].min():.0f} to {t['se'].max():.0f})",
            f"At nu = {_e(t.index.max())}", f"the screen's highest ({top.max():.0f}, beside "
            f"nu = {_e(t.index.min())}'s {top[t.index.min()]:.0f})"]


def _nu_final() -> list[str]:
    _, now = _paired((MREF, "greedy"), (NU_FINAL, "neuralucb"), 0)
    d, before = _paired((MREF, "neuralucb"), (MREF, "greedy"), 0)
    assert d > 0
    f = _exploration(NU_FINAL)
    r = f[f["step"] == _steps(NU_FINAL)].iloc[0]
    return [f"NeuralUCB makes {_mean(NU_FINAL, 'neuralucb')} wrong answers against the "
            f"greedy network's {_mean(MREF, 'greedy')}; paired over the seeds the difference "
            f"is {now}, nothing. At nu = 1e-5 it was {before} above.",
            f"({r['spread_other']:.3f} against {r['gap']:.2f} for the other arms"]


GRID_SWEEPS = ("lambda-0.1", "lambda-0.001", "lambda-0.00001", "greedy", "linucb",
               "gamma-neuralucb-lambda-0.00001", "gamma-neuralts-lambda-0.1", "linucb-10",
               "eps1")


def _grid_walls() -> str:
    s = [_sweep_wall(f"{GRID}/screen/{w}") for w in GRID_SWEEPS]
    f = [_config(r)["wall_seconds"] for r in GRID_FINAL]
    total = (sum(s) + max(f[:2]) + f[2]) / 60  # the two final runs side by side
    return (f"stage 1, {s[0]:.0f} + {s[1]:.0f} + {s[2]:.0f} s for the three lambda sweeps, "
            f"{s[3]:.0f} s for the greedy network's, {s[4]:.0f} s for LinUCB's; stage 2, "
            f"{s[5]:.0f} s (NeuralUCB), {s[6]:.0f} s (NeuralTS), {s[7]:.0f} s (LinUCB) and "
            f"{s[8]:.0f} s (1 % greedy); the final runs {f[0]:.0f} s (NeuralUCB) and "
            f"{f[1]:.0f} s (NeuralTS) side by side, then {f[2]:.0f} s (the greedy network, "
            f"1 % greedy, LinUCB and BBB, two workers). About {total:.0f} minutes in all.")


@lru_cache
def _grid_screen() -> pd.DataFrame:
    return _screen(REPO, f"{GRID}/screen")


def _chosen(agent: str) -> pd.Series:
    return _grid_screen()[_grid_screen()["agent"] == agent].iloc[0]


def _grid_chosen() -> str:
    u, t, g, lin = (_chosen(a) for a in ("neuralucb", "neuralts", "greedy", "linucb"))
    scales = {re.sub(r"e-0*", "e-", f"{math.sqrt(c['lambda'] * c['value']):.0e}")
              for c in (u, t)}
    assert len(scales) == 1, scales
    return (f"Chosen by the rule: NeuralUCB lambda = {_e(u['lambda'])}, nu = {_e(u['value'])}; "
            f"NeuralTS lambda = {_e(t['lambda'])}, nu = {_e(t['value'])}; the greedy network "
            f"weight decay {_e(g['value'])}; LinUCB alpha = {_e(lin['value'])}. Both exploring "
            f"agents' choices are the same bonus scale, `sqrt(lambda nu)` = {scales.pop()}.")


def _grid_noise() -> str:
    _, du = _paired((GRID_FINAL[2], "greedy"), (GRID_FINAL[0], "neuralucb"), 1)
    _, dt = _paired((GRID_FINAL[2], "greedy"), (GRID_FINAL[1], "neuralts"), 1)
    late = [f"{_late(r, a):.1f}" for r, a in zip(GRID_FINAL, ("neuralucb", "neuralts",
                                                            "greedy"))]
    return (f"({_chosen('greedy')['mean']:.1f} against {_chosen('neuralucb')['mean']:.1f} and "
            f"{_chosen('neuralts')['mean']:.1f}) and on seeds 0-4 "
            f"({_mean(GRID_FINAL, 'greedy')} against {_mean(GRID_FINAL, 'neuralucb')} and "
            f"{_mean(GRID_FINAL, 'neuralts')}; paired over the seeds, the greedy network is "
            f"{du} above NeuralUCB and {dt} above NeuralTS, from the runs' `metrics.csv`). "
            f"After round 2,000 all three are almost never wrong ({late[0]}, {late[1]} and "
            f"{late[2]} wrong answers in {_steps(GRID_FINAL[0]) - SPLIT:,} rounds).")


def _grid_gamma() -> str:
    """The screen at the paper's gammas, nu = gamma^2 / lambda at each agent's lambda."""
    f = _grid_screen()

    def at(agent: str, gamma: float) -> str:
        lam = _chosen(agent)["lambda"]
        hit = f[(f["agent"] == agent) & (f["lambda"] == lam)
                & ((f["value"] / (gamma ** 2 / lam) - 1).abs() < 1e-9)]
        assert len(hit) == 1, (agent, gamma)
        return f"{hit['mean'].iloc[0]:.1f}"
    return (f"NeuralUCB {at('neuralucb', 0.01)} at gamma 0.01, {at('neuralucb', 0.1)} at 0.1 "
            f"and {at('neuralucb', 1)} at 1; NeuralTS "
            f"{', '.join(at('neuralts', g) for g in (0.01, 0.1, 1))} and "
            f"{at('neuralts', 10)} at 0.01 to 10")


def _grid_linucb() -> str:
    nets = [float(_mean(GRID_FINAL, a)) for a in ("neuralucb", "neuralts", "greedy")]
    return (f"**LinUCB is far behind the networks** ({_mean(GRID_FINAL, 'linucb')} against "
            f"{_span(nets, 1)})")


def _grid_reference() -> str:
    return (f"NeuralUCB's reference fit at nu = lambda = 1e-5 made "
            f"{_mean(REF_5, 'neuralucb')} wrong answers on the same seeds")


def _grid_eps() -> str:
    return (f"**1 % greedy pays for its random rounds** ({_mean(GRID_FINAL, 'eps1')}): about "
            f"{EPSILON['eps1'] * _steps(GRID_FINAL[2]):.0f} random choices, half of them "
            f"wrong. **BBB** ({_mean(GRID_FINAL, 'bbb')})")


# (a page, a callable giving one snippet or a list of them, built from the files)
QUOTES: list[tuple[str, Callable[[], str | list[str]]]] = [
    (WHEEL, _wheel_std),
    (WHEEL, _wheel_greedy),
    (MNIST_BANDIT, _mnist_bandit_walls),
    (MNIST_BANDIT, _mnist_bandit_uniform),
    (INDEX, _index_mnist),
    (INDEX, _thousandth_from),
    (INDEX, _index_nu),
    (MUSH_REF, _ref_walls),
    (MUSH_REF, _ref_pairs),
    (MUSH_REF, _ref_late),
    (MUSH_REF, _ref_nu_1),
    (MUSH_REF, _reference_minutes),
    (MUSH_REF, _ref_grid),
    (MNIST_REF, _mref_walls),
    (MNIST_REF, lambda: f"{_beats_linucb()} over the same seeds"),
    (MNIST_REF, lambda: [f"5 x {_weights():,} weights", f"explore {_weights():,} weights"]),
    (MNIST_REF, _mref_rerun),
    (MNIST_REF, _mref_first),
    (MNIST_REF, _mref_last),
    (MNIST_REF, _mref_order),
    (MNIST_REF, _mref_same),
    (MNIST_REF, lambda: f"at nu = 0.1, chosen on other seeds, NeuralUCB makes "
                        f"{_mean(NU_FINAL, 'neuralucb')}, level with the greedy network"),
    (MNIST_REF, _thousandth_from),
    (MNIST_REF, _mref_draws),
    (MNIST_REF, _mref_bbb),
    (MNIST_NU, _thousandth_from),
    (MNIST_NU, _nu_walls),
    (MNIST_NU, _nu_screen_text),
    (MNIST_NU, _nu_final),
    (MUSH_GRID, _reference_minutes),
    (MUSH_GRID, _grid_walls),
    (MUSH_GRID, _grid_chosen),
    (MUSH_GRID, _grid_noise),
    (MUSH_GRID, _grid_gamma),
    (MUSH_GRID, _grid_linucb),
    (MUSH_GRID, _grid_reference),
    (MUSH_GRID, _grid_eps),
]

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES)


# Numbers of a page's prose that are not results: years, sections and arXiv numbers of the
# papers cited and what the page says the papers report, the torch version, the runs'
# settings (steps, rounds, deltas, windows, widths, nu, lambda, alpha, learning rates,
# seeds) and the data's sizes. An entry with words is a setting in its context (the
# number there only); a bare number is a setting wherever the page writes it.
PAPER_GAMMAS = "{0.01, 0.1, 1, 10}"
SETTINGS = {
    WHEEL: {"2018", "0.01", "1.2", "1.0", "2000", "4096", "2 x 100", "2.13", "delta 0.5",
            "| 0.7 | 0.9 | 0.95 | 0.99 |", "every delta up to 0.95", "below 0.9",
            "at 0.99 LinFullPost", "at 0.95, the bootstrap at 0.99", "At delta 0.99"},
    MNIST_BANDIT: {"4000", "60,000", "pixels / 126", "4096", "2 x 100", "200", "2.13",
                   "3801-4000", "ran 10,000-15,000 rounds"},
    INDEX: {"2020", "2021", "2,000", "100-104", "nu = 0.1",
            "lambda = 0.001", "arXiv 1911.04462v3", "Section 7.3", "(Section 7.2)",
            "Sections 7.1 and 7.2", "T = 15,000", f"gamma in {PAPER_GAMMAS}",
            "(100 full-batch steps"},
    MUSH_REF: {"2020", "8,124", "100", "0.01", "0.001", "1,000", "2,000", "2,001", "2.13",
               "(per 500 steps)"},
    MNIST_REF: {"10,000", "60,000", "100", "2,000", "1,000", "1,001", "2,001", "5,000",
                "5,001", "9,001", "2.13", "(T = 15,000, 10 runs)"},
    MUSH_GRID: {"2020", "Section 7.1, which Section 7.2", "8,124", "100", "100-104", "2,000",
                "2.13", "0.1", "0.01", "0.001", "{0.001, 0.01, 0.1, 0.2}"},
    MNIST_NU: {"100", "100-104", "2,000", "10,000", "1,000", "2.13", "nu = 0.1"},
}


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page``'s prose that no check builds and no setting declares."""
    text = (REPO / page).read_text(encoding="utf-8")
    lines = text.splitlines()
    for p, header, _ in TABLES:
        if p == page:  # a checked table's rows are covered whole
            for k, _ in rows_of(text, header):
                lines[k] = ""
    return uncovered(flat(prose("\n".join(lines))), snippets(page, QUOTES), SETTINGS[page])


test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked)
test_every_declared_setting_is_on_its_page = page_numbers.settings_test(
    SETTINGS, pages=PAGES)


def test_the_pages_are_the_ones_of_their_folders():
    """Every README.md under results/neural-bandits is one of the pages checked here."""
    found = {str(p.relative_to(REPO)) for p in Path(REPO / NB).rglob("README.md")}
    assert found <= set(PAGES), sorted(found - set(PAGES))
