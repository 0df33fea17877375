"""The numbers of the hand-written pages of the Mushroom runs at the paper's horizon (the
`long` preset, its complexity cost over every interaction seen, the exact `paper` preset on
a GPU, the learner with a memory and its decay, the old defaults' diagnosis), checked
against the shipped files they come from, as tests/test_quoted_numbers.py checks the front
pages: a rerun that changes a file without the page fails here.

A hand-written table is checked row by row (:data:`TABLES`): the numbers of each row, in
order, must be those the files give the row's agent, seed or setting (its first cell). The
prose is checked by :data:`QUOTES` (snippets built from the files), and every other number
of a page must be a setting or a citation declared in :data:`SETTINGS`. A share counted in
``phases.csv`` is rounded from its exact fraction, half to even."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from functools import cache

import page_numbers
import pandas as pd
from page_numbers import REPO, cell_numbers, flat, prose, row_cells, rows_of, snippets, uncovered
from test_quoted_numbers import (
    ALONE,
    BESIDE_GREEDY,
    DECAY_1,
    PRESET,
    _at_50k,
    _late,
    _times_floor,
)
from test_quoted_numbers import QUOTES as FRONT

from bandits.records.regret import ranking
from bandits.tools.memory_tables import EPSILON, RANDOM_ACTION_COST, at_step

R = "results/mushroom"
PAPER, KL_SEEN, H100 = f"{R}/paper-horizon", f"{R}/paper-horizon-kl-seen", f"{R}/paper-preset-h100"
H200 = f"{H100}/h200-rerun"
MEMORY_20K, MEMORY_16K = f"{R}/memory-20k", f"{R}/memory-20k/memory-16k"
SCREEN_20K = f"{R}/screens/20k/screen20k.csv"
OLD = f"{R}/diagnosis-old-defaults"
OLD_LAST = 1000  # its diagnosis' window (`--last 1000`): the late steps its page reads
AGENTS = ("bbb", "greedy", "eps1", "eps5")
WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven",
         8: "eight", 9: "nine", 10: "ten"}


def _page(run: str) -> str:
    return f"{run}/README.md"


PAGES = tuple(_page(r) for r in (PAPER, KL_SEEN, H100, DECAY_1, PRESET, MEMORY_20K, ALONE,
                                 BESIDE_GREEDY, OLD))


# ---------------------------------------------------------------- the shipped files


@cache
def _config(run: str) -> dict:
    return json.loads((REPO / run / "config.json").read_text())


@cache
def _csv(path: str) -> pd.DataFrame:
    return pd.read_csv(REPO / path)


def _torch_cpu(run: str) -> str:
    version = _config(run)["versions"]["torch"]
    assert version.endswith("+cpu"), version
    return f"torch {version.removesuffix('+cpu')} CPU build"


def _worker(run: str, agent: str) -> str:
    """The seconds of the worker that ran ``agent``: the wall time of its agents (runs made
    when agents shared a population split its time evenly over them)."""
    c = _config(run)
    wall = c["wall_seconds_per_agent"]
    part = next((p["agents"] for p in c.get("parts", []) if agent in p["agents"]), [agent])
    return f"{sum(wall[a] for a in part):.0f}"


def _thinned(run: str) -> int:
    """The rows per run of a shipped ``metrics.csv`` (thinned from the run's own)."""
    sizes = set(_csv(f"{run}/metrics.csv").groupby(["agent", "seed"]).size())
    assert len(sizes) == 1, sizes
    return sizes.pop()


def _final(run: str) -> pd.DataFrame:
    """Per agent and seed: the final cumulative regret and the late regret per step (the
    last 10,000 steps), from ``phases.csv``."""
    end = int(_csv(f"{run}/phases.csv")["end"].max())
    return at_step(REPO / run, end, 10_000)


def _seeds(t: pd.DataFrame, agent: str, column: str = "regret") -> pd.Series:
    return t[t["agent"] == agent].set_index("seed")[column]


def _se(x: pd.Series) -> float:
    return x.std(ddof=1) / math.sqrt(len(x))


def _pm(x: pd.Series, digits: int) -> str:
    return f"{x.mean():.{digits}f} +- {_se(x):.{digits}f}"


def _span(values, digits: int, last: int | None = None) -> str:
    values = list(values)
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}" if last is None else \
        f"{min(values):.{digits}f}-{max(values):.{last}f}"


def _exact(fraction: Fraction, digits: int) -> str:
    """A share in per cent, rounded from its exact value half to even."""
    value = Decimal(fraction.numerator * 100) / Decimal(fraction.denominator)
    return str(value.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN))


def _shares(run: str, agent: str, last: int) -> dict[str, list[Fraction]]:
    """Over the last ``last`` steps of ``phases.csv``, per phase (summed over the seeds)
    and in all: the exact share of steps with a poisonous mushroom eaten (``ate``) and an
    edible one left (``left``)."""
    p = _csv(f"{run}/phases.csv")
    p = p[(p["agent"] == agent) & (p["start"] > p["end"].max() - last)]
    out: dict[str, list[Fraction]] = {"ate": [], "left": []}
    for _, g in p.groupby("start"):
        steps = int((g["end"] - g["start"] + 1).sum())
        out["ate"].append(Fraction(int(g["a1_best0"].sum()), steps))
        out["left"].append(Fraction(int(g["a0_best1"].sum()), steps))
    steps = int((p["end"] - p["start"] + 1).sum())
    out["ate_all"] = [Fraction(int(p["a1_best0"].sum()), steps)]
    out["left_all"] = [Fraction(int(p["a0_best1"].sum()), steps)]
    return out


def _probes(run: str, agent: str, poisonous: bool) -> pd.DataFrame:
    """The probe rows of the wrong action: eating a poisonous mushroom, or leaving an
    edible one."""
    p = _csv(f"{run}/probes.csv")
    action, best = (1, 0) if poisonous else (0, 1)
    return p[(p["agent"] == agent) & (p["action"] == action) & (p["best_action"] == best)]


def _ranked(run: str) -> pd.DataFrame:
    """The agents ranked by their final regret (mean, s.e., min, max over the seeds), as
    ``bandits.records.regret.ranking`` ranks them from ``metrics.csv``."""
    return ranking(_csv(f"{run}/metrics.csv")).set_index("agent")


def _median(run: str, agent: str) -> float:
    m = _csv(f"{run}/metrics.csv")
    last = m[(m["step"] == m["step"].max()) & (m["agent"] == agent)]
    return float(last["cumulative_regret"].median())


# ---------------------------------------------------------------- the hand-written tables

@dataclass(frozen=True)
class HandTable:
    """Every hand-written table of ``page`` whose first line starts with ``header``: the
    numbers of each row's ``columns``, in order, must be those ``rows`` builds from the
    files for the row's first cell, and every row ``rows`` builds must be on the page."""

    page: str
    header: str
    rows: Callable[[], dict[str, list[str]]]
    columns: tuple[int, ...] | None = None  # the checked cells; None: all but the first


def _rows_of(text: str, header: str) -> list[tuple[int, str]]:
    """The data rows of every table whose first line starts with ``header``."""
    return rows_of(text, header, prefix=True)


def _checked(spec: HandTable, cells: list[str]) -> list[int]:
    return list(spec.columns or range(1, len(cells)))


def _table_errors(spec: HandTable, text: str) -> list[str]:
    want = spec.rows()
    rows = _rows_of(text, spec.header)
    errors = [] if rows else [f"no table headed {spec.header!r}"]
    seen = set()
    for _, line in rows:
        cells = row_cells(line)
        seen.add(cells[0])
        got = [n for c in _checked(spec, cells) for n in cell_numbers(cells[c])]
        if want.get(cells[0]) != got:
            errors.append(f"{line.strip()}: the files give {want.get(cells[0])}")
    errors += [f"no row {key!r}" for key in want if key not in seen]
    return errors


def _blank_checked_cells(spec: HandTable, text: str) -> str:
    lines = text.splitlines()
    for k, line in _rows_of(text, spec.header):
        cells = row_cells(line)
        checked = set(_checked(spec, cells))
        lines[k] = "| " + " | ".join("" if i in checked else c
                                     for i, c in enumerate(cells)) + " |"
    return "\n".join(lines)


LABELS = {"bbb": "BBB (mean of 2 samples)", "greedy": "greedy", "eps1": "1 % greedy",
          "eps5": "5 % greedy"}


def _paper_final_rows() -> dict[str, list[str]]:
    """paper-horizon's final regret (mean +- s.e., median, min, max) and late regret (mean
    +- s.e., median) per agent."""
    ranked, late = _ranked(PAPER), _final(PAPER)
    out = {}
    for agent in AGENTS:
        r, x = ranked.loc[agent], _seeds(late, agent, "late")
        out[LABELS[agent]] = [f"{r['mean']:.0f}", f"{r['s.e.']:.0f}",
                              f"{_median(PAPER, agent):.0f}", f"{r['min']:.0f}",
                              f"{r['max']:.0f}", f"{x.mean():.3f}", f"{_se(x):.3f}",
                              f"{x.median():.3f}"]
    return out


def _paper_seed_rows() -> dict[str, list[str]]:
    """paper-horizon's final cumulative regret per seed, in the table's column order."""
    t = _csv(f"{PAPER}/diagnosis_seeds.csv").pivot(index="seed", columns="agent",
                                                     values="cumulative_regret")
    return {str(seed): [str(r[a]) for a in ("bbb", "eps1", "eps5", "greedy")]
            for seed, r in t.iterrows()}


def _kl_seen_rows() -> dict[str, list[str]]:
    def row(run: str, agent: str) -> list[str]:
        r, x = _ranked(run).loc[agent], _seeds(_final(run), agent, "late")
        return [f"{r['mean']:.0f}", f"{r['s.e.']:.0f}", f"{_median(run, agent):.0f}",
                f"{r['min']:.0f}", f"{r['max']:.0f}", f"{x.mean():.3f}", f"{_se(x):.3f}"]

    return {"the buffer (default; ../paper-horizon)": row(PAPER, "bbb"),
            "every interaction seen": row(KL_SEEN, "bbb"),
            "(greedy, ../paper-horizon)": row(PAPER, "greedy")}


def _gpu_step() -> int:
    """The last step every agent and seed of the GPU run reached in whole phases."""
    p = _csv(f"{H100}/phases.csv")
    whole = p[p["end"] - p["start"] + 1 == 2000]
    return int(whole.groupby(["agent", "seed"])["end"].max().min())


def _gpu_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The GPU run and the `long` preset's run (its seeds of the GPU run) at that step."""
    end = _gpu_step()
    gpu, cpu = at_step(REPO / H100, end, 10_000), at_step(REPO / PAPER, end, 10_000)
    return gpu, cpu[cpu["seed"].isin(gpu["seed"])]


def _gpu_rows() -> dict[str, list[str]]:
    gpu, cpu = _gpu_tables()
    out = {}
    for agent in AGENTS:
        g, c = _seeds(gpu, agent), _seeds(cpu, agent)
        gl, cl = _seeds(gpu, agent, "late"), _seeds(cpu, agent, "late")
        out[LABELS[agent]] = [*_pm(g, 0).split(" +- "), f"{g.median():.0f}",
                              *_pm(c, 0).split(" +- "), f"{c.median():.0f}",
                              *_pm(gl, 3).split(" +- "), *_pm(cl, 3).split(" +- ")]
    return out


def _memory_settings_rows() -> dict[str, list[str]]:
    """The settings of memory-20k's plan, as the runs' ``config.json`` record them."""
    def row(run: str) -> list[str]:
        c = _config(run)
        return [f"{c['buffer_size']:,}", f"{c['steps']:,}"]

    return {"memory-16k": row(MEMORY_16K), "memory-50k": row(DECAY_1),
            "the paper's set-up": row(PAPER)}


TABLES = [
    HandTable(_page(PAPER), "| agent | final regret, mean +- s.e. |", _paper_final_rows),
    HandTable(_page(PAPER), "| seed | BBB (mean of 2 samples) | 1 % greedy | 5 % greedy | "
                            "greedy |", _paper_seed_rows),
    HandTable(_page(KL_SEEN), "| BBB, complexity cost over |", _kl_seen_rows),
    HandTable(_page(H100), "| agent | cumulative regret at", _gpu_rows),
    HandTable(_page(MEMORY_20K), "| setting | buffer | steps | command |",
              _memory_settings_rows, columns=(1, 2)),
]


test_every_row_of_a_hand_written_table_is_its_files = page_numbers.table_test(
    TABLES, _table_errors, "are not their files'", ids=lambda s: f"{s.page}:{s.header[:30]}")


def test_a_changed_number_fails_its_row():
    spec = TABLES[1]
    text = (REPO / spec.page).read_text(encoding="utf-8")
    _, line = _rows_of(text, spec.header)[0]
    cells = row_cells(line)
    moved = line.replace(f"| {cells[1]} |", f"| {int(cells[1]) + 5} |", 1)
    assert _table_errors(spec, text.replace(line, moved)), "a changed cell went unnoticed"
    assert _table_errors(spec, text.replace(line + "\n", "")), "a dropped row went unnoticed"


# ---------------------------------------------------------------- paper-horizon


def _paper_set_up() -> str:
    c = _config(PAPER)
    h = c["hidden"]
    assert len(set(h)) == 1
    return (f"agents {', '.join(c['agent'])}; {c['steps']:,} steps; {len(h)} x {h[0]} ReLU; "
            f"buffer {c['buffer_size']}; minibatch {c['batch_size']}; "
            f"**{c['updates_per_step']}** updates per step (the paper: 64); **{c['seeds']}** "
            f"seeds (0-{c['seeds'] - 1};")


def _paper_machine() -> str:
    return (f"{_torch_cpu(PAPER)}, two worker processes (BBB; the three epsilon-greedy "
            f"agents as one population)")


def _paper_kernels() -> str:
    """The kernels the run records: the libraries' own, on a processor with AVX-512."""
    k = _config(PAPER)["versions"]["kernels"]
    assert k["pinned"] is False and k["aten"] == "AVX512", k
    return ("each, the libraries' own kernels (`BANDITS_NATIVE_KERNELS=1`; under the "
            "[pinned kernels]")


def _paper_workers() -> str:
    return (f"(BBB's worker {_worker(PAPER, 'bbb')} s, the epsilon-greedy worker "
            f"{_worker(PAPER, 'greedy')} s;")


def _metrics_thinned(run: str, about: bool = False) -> str:
    n = _thinned(run)
    size = f"about {round(n, -2)}" if about else f"{n}"
    return (f"`metrics.csv` thinned to {size} steps per run (the run writes "
            f"{_config(run)['log_points']};")


def _metrics_written(run: str) -> str:
    """A shipped ``metrics.csv`` as its run wrote it: its steps per run and the flag."""
    n, points = _thinned(run), _config(run)["log_points"]
    assert len(_csv(f"{run}/metrics.csv")) == n * 40  # 4 agents x 10 seeds, nothing cut
    return (f"`metrics.csv` as the run wrote it: {n} steps per run (`--log-points "
            f"{points}`:")


def _floors() -> dict[str, float]:
    return {a: EPSILON[a] * RANDOM_ACTION_COST for a in EPSILON}


def _exploration_cost() -> str:
    f = _floors()
    return (f"so a random action costs {RANDOM_ACTION_COST:.2f} on average): 1 % greedy "
            f"{f['eps1']:.3f} per step, 5 % greedy {f['eps5']:.3f}.")


def _paper_met() -> str:
    r = _ranked(PAPER)
    assert r.index[0] == "bbb"  # "the lowest *mean* final regret"
    seeds = _csv(f"{PAPER}/diagnosis_seeds.csv").pivot(index="seed", columns="agent",
                                                        values="cumulative_regret")
    assert (seeds["bbb"] < seeds["eps5"]).all()
    lost = seeds.index[seeds["bbb"] >= seeds["eps1"]].tolist()
    assert len(lost) == 1, lost
    cells = {a: f"{r.loc[a, 'mean']:.0f} +- {r.loc[a, 's.e.']:.0f}" for a in AGENTS}
    return (f"lowest *mean* final regret of the four ({cells['bbb']}, against greedy "
            f"{cells['greedy']}, 1 % greedy {cells['eps1']}, 5 % greedy {cells['eps5']}), "
            f"and it beats 5 % greedy on every seed and 1 % greedy on every seed but one "
            f"(seed {lost[0]}).")


def _paper_floors() -> str:
    t, f = _final(PAPER), _floors()
    late = {a: _seeds(t, a, "late").mean() for a in EPSILON}
    assert all(late[a] > f[a] for a in EPSILON)
    return (f"({late['eps1']:.2f} and {late['eps5']:.2f} per step at the end, above their "
            f"floors of {f['eps1']:.3f} and {f['eps5']:.3f})")


def _paper_not_met() -> str:
    t = _final(PAPER)
    late = {a: _seeds(t, a, "late").mean() for a in ("bbb", "greedy")}
    median = {a: _median(PAPER, a) for a in ("bbb", "greedy")}
    assert median["greedy"] < median["bbb"] and late["greedy"] < late["bbb"]
    return (f"greedy has the lower *median* ({median['greedy']:.0f} against "
            f"{median['bbb']:.0f}) and the lower regret per step at the end "
            f"({late['greedy']:.3f} against {late['bbb']:.3f})")


def _starved() -> str:
    """The greedy seed that stopped eating: its longest stretch of phases without one eat,
    what it paid per step there and in all, and what the other seeds end at."""
    p, (start, end, seed) = page_numbers.starved(PAPER)
    own = p[p["seed"] == seed]
    stretch = own[(own["start"] >= start) & (own["end"] <= end)]["regret"].sum()
    finals = p.groupby("seed")["regret"].sum()
    others = finals.drop(seed)
    assert finals[seed] == finals.max()
    return (f"one seed ({seed}) stopped eating after an early poisonous mushroom and paid "
            f"{finals[seed]:,}, about {stretch / (end - start + 1):.1f} per step, until it "
            f"started eating again after step {end:,} (its phases from {start:,} to {end:,} "
            f"have no eats); its other {WORDS[len(others)]} seeds end at "
            f"{others.min()}-{others.max()}.")


def _paper_bar() -> str:
    late = _seeds(_final(PAPER), "bbb", "late").mean()
    floor = _floors()["eps1"]
    assert late > 0.04 and late > floor
    return (f"BBB's regret per step at the end, {late:.3f}, is above the 0.04 aimed for and "
            f"above 1 % greedy's exploration floor ({floor:.3f})")


def _paper_mistakes() -> str:
    b, g = (_shares(PAPER, a, 10_000) for a in ("bbb", "greedy"))
    assert b["left_all"][0] < b["ate_all"][0] / 5  # "almost all poisonous mushrooms eaten"
    return (f"({_exact(b['ate_all'][0], 2)} % of steps over the last 10,000, against greedy "
            f"{_exact(g['ate_all'][0], 2)} %); it leaves almost no edible mushroom "
            f"({_exact(b['left_all'][0], 2)} %, greedy {_exact(g['left_all'][0], 1)} %).")


def _paper_spread() -> str:
    poisonous = _probes(PAPER, "bbb", True).groupby("step")["predicted_std"].mean()
    edible = _probes(PAPER, "bbb", False).groupby("step")["predicted_std"].mean()
    late = poisonous[poisonous.index >= 20_000].mean()
    return (f"for eating a poisonous probe mushroom from {poisonous[3000]:.1f} at step 3000 to "
            f"{late:.1f} at 20,000-50,000, for leaving an edible one from {edible[3000]:.2f} "
            f"to {_span(edible[edible.index >= 20_000], 1)}.")


def _paper_pessimistic() -> str:
    p = _probes(PAPER, "bbb", True)
    p = p[p["step"] >= 10_000]
    mean = p.groupby("step")["predicted_mean"].mean()
    share = 100 * p.groupby("step")["chosen_share"].mean()
    truth = p["expected_reward"].unique()
    assert len(truth) == 1
    return (f"({mean.max():.0f} to {mean.min():.0f} from step 10,000 on; truth {truth[0]}), "
            f"yet a sample eats {_span(share, 1, 0)} % of them")


def _kl_seen_difference() -> pd.Series:
    seen, buffer = (_seeds(_final(r), "bbb") for r in (KL_SEEN, PAPER))
    return (seen - buffer).dropna()


def _kl_seen_summary() -> str:
    r, d = _ranked(KL_SEEN).loc["bbb"], _kl_seen_difference()
    late = _seeds(_final(KL_SEEN), "bbb", "late").mean()
    paper = _final(PAPER)
    assert abs(d.mean()) < _se(d)  # "by less than one standard error"
    assert _median(PAPER, "greedy") < _median(KL_SEEN, "bbb")
    assert _seeds(paper, "greedy", "late").mean() < late  # greedy's "stay lower"
    return (f"lowers BBB's final regret to {r['mean']:.0f} +- {r['s.e.']:.0f} (median "
            f"{_median(KL_SEEN, 'bbb'):.0f}) and its late regret to {late:.3f} per step, but by "
            f"less than one standard error of the paired difference")


def _screen_20k() -> str:
    t = _csv(SCREEN_20K).set_index("point")
    kept, default = t.loc["buffer-50000"], t.loc["default"]
    spread = [kept[f"spread_eat_poisonous_step_{s}"] for s in (3000, 20000)]
    late = [r["regret_per_step_10001_20000"] for r in (kept, default)]
    return (f"the spread no longer grows ({_span(spread, 1)}), yet the late regret hardly "
            f"moves ({late[0]:.3f} against {late[1]:.3f} per step)")


# ---------------------------------------------------------------- paper-horizon-kl-seen


def _kl_seen_per_seed() -> str:
    d = _kl_seen_difference()
    return (f"Per seed, seen minus buffer: {', '.join(f'{x:+.0f}' for x in d)} (mean "
            f"{d.mean():.0f}, standard error {_se(d):.0f}).")


def _kl_seen_bites() -> str:
    seen, buffer = (_shares(r, "bbb", 10_000)["ate_all"][0] for r in (KL_SEEN, PAPER))
    return (f"Late on it eats a poisonous mushroom on {_exact(seen, 2)} % of steps (the "
            f"default: {_exact(buffer, 2)} %).")


def _kl_seen_reading() -> str:
    d, paper = _kl_seen_difference(), _final(PAPER)
    assert d.mean() < 0 and abs(d.mean()) < _se(d)
    greedy = _seeds(paper, "greedy", "late").mean()
    assert greedy < _seeds(_final(KL_SEEN), "bbb", "late").mean()
    assert _median(PAPER, "greedy") < _median(KL_SEEN, "bbb")
    return (f"greedy's median ({_median(PAPER, 'greedy'):.0f}) and late regret "
            f"({greedy:.3f}) stay lower")


# ---------------------------------------------------------------- paper-preset-h100


def _gpu_title() -> str:
    c = _config(H100)
    return f"on a GPU: {c['steps_completed']:,} of {c['steps']:,} steps"


def _gpu_machine() -> str:
    c = _config(H100)
    assert c["updates_per_step"] == 64 and c["batch_size"] == 64
    return f"one NVIDIA H100 80GB HBM3, torch {c['versions']['torch']}, two"


def _gpu_stop() -> str:
    c, s = _config(H100), _csv(f"{H100}/summary.csv").set_index("agent")
    assert c["interrupted"]
    return (f"ran out at step {c['steps_completed']:,} (the run was stopped with Ctrl-C "
            f"semantics, so its checkpoint was consistent; the BBB worker had reached "
            f"{s.loc['bbb', 'steps']:,}).")


def _gpu_wall() -> str:
    from bandits.tools.bench import PAPER_UPDATES
    from bandits.tools.bench_commands import PAPER_STEPS

    c = _config(H100)
    rate = c["steps_completed"] / c["wall_seconds"]
    fused = _csv("results/bench/cuda-h100/bench.csv").set_index("variant").loc[
        "fused (all agents)", "seconds_per_update"]
    training = PAPER_STEPS * PAPER_UPDATES * fused / 60  # as bandits.bench projects
    return (f"Wall time **{c['wall_seconds']:.0f} s** for {c['steps_completed']:,} steps in "
            f"two stretches: about {rate:.0f} steps per second, set by the slower worker (the "
            f"epsilon-greedy one's), so the whole {c['steps']:,} steps take about "
            f"**{c['steps'] / rate / 60:.0f} minutes on one H100** (`python -m bandits.bench "
            f"--device cuda` times the training alone at {training:.0f} min:")


def _gpu_heading() -> str:
    return (f"## At step {_gpu_step():,}, beside the `long` preset "
            f"({_config(PAPER)['updates_per_step']} updates per step) on the same seeds")


def _gpu_window() -> str:
    gpu, _ = _gpu_tables()
    end, n = _gpu_step(), gpu["seed"].nunique()
    return (f"(seeds 0-{n - 1} of its {_config(PAPER)['seeds']}). Late regret is the expected "
            f"regret per step over steps {end - 10_000 + 1:,}-{end:,}; mean +- standard error "
            f"over the {n} seeds.")


def _gpu_header() -> str:
    return (f"| agent | cumulative regret at {_gpu_step():,}, "
            f"{_config(H100)['updates_per_step']} updates (H100) |")


def _gpu_reading() -> str:
    gpu, cpu = _gpu_tables()
    late = {k: t.groupby("agent")["late"].mean() for k, t in (("gpu", gpu), ("cpu", cpu))}
    assert (late["gpu"] > late["cpu"]).all()  # "every agent pays **more** late regret"
    mean, median = gpu.groupby("agent")["regret"].mean(), gpu.groupby("agent")["regret"].median()
    assert mean["bbb"] < mean["eps1"] < mean["eps5"] and median.idxmin() == "greedy"
    greedy = _seeds(gpu, "greedy")
    b, e = _seeds(gpu, "bbb"), _seeds(gpu, "eps1")
    assert e.mean() - b.mean() < _se(b) + _se(e)  # "the standard errors overlap"
    return (f"(BBB {late['gpu']['bbb']:.3f} against {late['cpu']['bbb']:.3f} per step), as the "
            f"learner screens predicted (more fitting memorises the noisy +5 of poisonous "
            f"mushrooms harder). BBB's mean is below 1 % greedy's ({mean['bbb']:.0f} against "
            f"{mean['eps1']:.0f}) and 5 % greedy's, and greedy has the lowest median (one "
            f"greedy seed, seed {greedy.idxmax()}, stopped eating for long: "
            f"{greedy.max():,}).")


def _h200_run() -> str:
    c, s = _config(H200), _csv(f"{H200}/summary.csv").set_index("agent")
    assert c["interrupted"] and c["updates_per_step"] == _config(H100)["updates_per_step"]
    rate = s.loc["bbb", "steps"] / c["wall_seconds_per_agent"]["bbb"]
    return (f"on one NVIDIA H200 (torch {c['versions']['torch']}), stopped at step "
            f"{c['steps_completed']:,} (BBB {s.loc['bbb', 'steps']:,}) when the GPU time "
            f"available ran out: two stretches (the second after a resume on a freshly started "
            f"machine), wall time **{c['wall_seconds']:.0f} s**, BBB's worker at about "
            f"{rate:.0f} steps per second.")


def _per_2000_steps(run: str, last: int) -> pd.DataFrame:
    p = _csv(f"{run}/phases.csv")
    p = p[p["end"] <= last].assign(block=lambda t: (t["start"] - 1) // 2000)
    return p.groupby(["agent", "seed", "block"])[["regret", "expected_regret"]].sum()


def _h200_same() -> str:
    """The H200 run's per-2000-step counts up to the last such step both runs reached."""
    done = min(_config(r)["steps_completed"] for r in (H100, H200))
    last = done // 2000 * 2000
    a, b = (_per_2000_steps(r, last) for r in (H100, H200))
    pd.testing.assert_frame_equal(a, b)  # "equals this H100 run's"
    h100 = _config(H100)["steps_completed"]
    assert _csv(f"{H200}/phases.csv")["end"].max() <= _csv(f"{H100}/phases.csv")["end"].max()
    return (f"up to step {last:,} ({len(a)} counts) equals this H100 run's: the two chips, "
            f"the captured graphs and the resume at a different step give one trajectory. "
            f"`tests/test_results.py` checks this against the two shipped `phases.csv`. The "
            f"run adds no steps beyond the H100 run's {h100:,};")


# ---------------------------------------------------------------- memory-horizon


def _memorised(run: str, history: str) -> float:
    m = _csv(f"{run}/memorisation.csv")
    row = m[(m["agent"] == "bbb") & ~m["edible"] & (m["history"] == history)]
    assert len(row) == 1, history
    return 100 * float(row["mistake_rate"].iloc[0])


def _memory_half() -> str:
    r = _ranked(PAPER).loc["bbb"]
    ratio = _ranked(DECAY_1).loc["bbb", "mean"] / r["mean"]
    assert 0.4 < ratio < 0.6, ratio  # "about half"
    assert _config(PAPER)["act_samples"] == 2
    return (f"about half its regret under the paper's set-up on the same seeds "
            f"({r['mean']:.0f} +- {r['s.e.']:.0f}, median {_median(PAPER, 'bbb'):.0f}, acting "
            f"on two samples).")


def _memory_late() -> str:
    late = _seeds(_final(DECAY_1), "bbb", "late")
    assert late.mean() > 0.04
    at_20k = at_step(REPO / DECAY_1, 20_000, 6_000)
    return (f"Its late regret is **not** at most 0.04 per step: {_pm(late, 3)}. It still eats "
            f"poisonous mushrooms whose last eating paid +5 "
            f"({_memorised(DECAY_1, 'last paid 5'):.1f} % of those shown, `memorisation.csv`) "
            f"and {_memorised(DECAY_1, 'never eaten'):.1f} % of those it never ate; the "
            f"20,000-step runs put it at {_seeds(at_20k, 'bbb', 'late').mean():.3f} over steps "
            f"14,001-20,000")


def _memory_open_loop() -> str:
    return (f"learner eats {_at_50k('greedy-wd-1-50k', 'greedy')}-{_at_50k('bbb-md-1-50k')} % "
            f"of the never-eaten poisonous mushrooms where ridge regression on the same "
            f"outcomes eats {_at_50k('ridge', 'greedy')} %")


def _memory_floors() -> str:
    x1, x5 = (_times_floor(DECAY_1, a) for a in ("eps1", "eps5"))
    assert x5 <= 1.5 < x1
    return (f"5 % greedy pays {x5:.1f} times its exploration floor late (within 1.5); 1 % "
            f"greedy pays {x1:.1f} times (not within 1.5)")


def _memory_greedy() -> str:
    t = _final(DECAY_1)
    greedy = _seeds(t, "greedy")
    medians = t.groupby("agent")["regret"].median().sort_values()
    assert medians.index[1] == "greedy"  # "second"
    return (f"Greedy has one seed that stopped eating ({greedy.max():,} regret, "
            f"`diagnosis_seeds.csv`), which sets its mean; its median ({greedy.median():.0f}) "
            f"is second.")


# ---------------------------------------------------------------- memory-decay-0.3


def _preset_bars() -> str:
    t = _final(PRESET).groupby("agent")["regret"]
    assert all(t.agg(f).idxmin() == "bbb" for f in ("mean", "median"))
    assert _late(PRESET, "bbb") <= 0.04
    assert all(_times_floor(PRESET, a) <= 1.5 for a in EPSILON)
    return "**Against the bars set for the learner with a memory**, all met"


def _preset_spread() -> str:
    s = _csv(f"{PRESET}/summary.csv").set_index("agent")
    se = {a: s.loc[a, "cumulative_regret_std"] / math.sqrt(s.loc[a, "seeds"])
          for a in EPSILON}
    for agent, other in (("eps1", ALONE), ("eps5", BESIDE_GREEDY)):
        there = _csv(f"{other}/summary.csv").set_index("agent")
        gap = abs(s.loc[agent, "cumulative_regret_mean"]
                  - there.loc[agent, "cumulative_regret_mean"])
        assert gap < se[agent] / 2  # "far inside the seeds' spread"
    return f"(s.e. {se['eps1']:.0f} and {se['eps5']:.0f})"


# ---------------------------------------------------------------- memory-20k


def _memory_20k_verdict() -> str:
    a, b = (_seeds(at_step(REPO / r, 20_000, 6_000), "bbb") for r in (MEMORY_16K, DECAY_1))
    d = a - b
    z = d.mean() / _se(d)
    assert d.mean() > 0 and z > 10, z  # "lower with 50,000 ... by more than ten"
    return ("BBB's mean is lower with 50,000 items than with 16,384, by more than ten paired "
            "standard errors, so rule 1 decides")


def _memory_20k_greedy() -> str:
    tables = {r: at_step(REPO / r, 20_000, 6_000) for r in (PAPER, MEMORY_16K, DECAY_1)}
    means = {r: t.groupby("agent")["regret"].mean() for r, t in tables.items()}
    for run in (MEMORY_16K, DECAY_1):  # every agent's regret cut but greedy's mean
        cut = means[run] < means[PAPER]
        assert not cut["greedy"] and cut.drop("greedy").all(), cut
    paper, memory = (_seeds(tables[r], "greedy").median() for r in (PAPER, DECAY_1))
    return f"(its median falls from {paper:.0f} to {memory:.0f})"


# ---------------------------------------------------------------- decay-0.3-50k


def _paired(step: int, late: int, column: str) -> pd.Series:
    """BBB's decay 0.3 minus decay 1 on the same seeds."""
    a, b = (_seeds(at_step(REPO / r, step, late), "bbb", column) for r in (ALONE, DECAY_1))
    return (a - b).dropna()


def _pilot_20k() -> str:
    tables = {r: at_step(REPO / r, 20_000, 6_000) for r in (ALONE, DECAY_1)}
    late = {r: t.groupby("agent")["late"].mean() for r, t in tables.items()}
    regret = {r: t.groupby("agent")["regret"].mean() for r, t in tables.items()}
    assert late[ALONE]["eps1"] < late[DECAY_1]["eps1"]  # "also lower"
    assert all(regret[ALONE][a] > regret[DECAY_1][a] for a in ("bbb", "eps1"))  # "pay more"
    d = _paired(20_000, 6_000, "late")
    z = -d.mean() / _se(d)
    return (f"BBB with decay 0.3 pays {late[ALONE]['bbb']:.3f} per step, below decay 1's "
            f"{late[DECAY_1]['bbb']:.3f}, by {WORDS[round(z)]} paired standard errors")


def _pilot_plan() -> str:
    return f"over steps 40,001-50,000 ({_late(DECAY_1, 'bbb'):.3f} there)"


def _pilot_verdict() -> str:
    late, regret = _paired(50_000, 10_000, "late"), _paired(50_000, 10_000, "regret")
    z = -late.mean() / _se(late)
    assert z > 2 and regret.mean() < 2 * _se(regret)  # the plan's rule
    assert regret.mean() < 0 and -regret.mean() < 2 * _se(regret)
    return (f"BBB with decay 0.3 pays {_late(ALONE, 'bbb'):.3f} per step against decay 1's "
            f"{_late(DECAY_1, 'bbb'):.3f}, lower by {z:.1f} paired standard errors, and its "
            f"final regret is not higher (lower by {-regret.mean():.0f} +- {_se(regret):.0f}, "
            f"within two standard errors)")


def _pilot_bars() -> str:
    bbb, eps1 = _late(ALONE, "bbb"), _late(ALONE, "eps1")
    times = _times_floor(ALONE, "eps1")
    assert bbb < 0.04 and times <= 1.5
    return (f"BBB's late regret, {bbb:.3f}, is below 0.04, and 1 % greedy's, {eps1:.3f}, is "
            f"{times:.2f} times its exploration's own cost ({_floors()['eps1']:.3f}, as in")


def _four_agents() -> str:
    t = pd.concat([_final(ALONE), _final(BESIDE_GREEDY)], ignore_index=True)
    g = t.groupby("agent")["regret"]
    mean, median = g.mean(), g.median()
    assert mean.idxmin() == "bbb" and median.idxmin() == "bbb"
    return (f"It has ({mean['bbb']:.0f}, median {median['bbb']:.0f}; greedy "
            f"{mean['greedy']:.0f}, median {median['greedy']:.0f}): decay 0.3 wins")


# ---------------------------------------------------------------- decay-0.3-50k-greedy


def _greedy_verdict() -> str:
    t = pd.concat([_final(ALONE), _final(BESIDE_GREEDY)], ignore_index=True)
    g = t.groupby("agent")
    assert all(g["regret"].agg(f).idxmin() == "bbb" for f in ("mean", "median"))
    assert g["late"].mean()["bbb"] <= 0.04
    assert all(_times_floor(r, a) <= 1.5 for r, a in ((ALONE, "eps1"), (BESIDE_GREEDY, "eps5")))
    return ("BBB has the lowest mean and the lowest median final regret of the four, so decay "
            "0.3 wins. Every bar set for the learner with a memory is met at decay 0.3")


# ---------------------------------------------------------------- diagnosis-old-defaults


def _old_late() -> str:
    phases = _csv(f"{OLD}/phases.csv")  # a run of an earlier version: no config.json
    end, last = int(phases["end"].max()), OLD_LAST
    t = at_step(phases, end, last)
    b, g = (_seeds(t, a, "late") for a in ("bbb", "greedy"))
    return (f"Regret per step over steps {end - last + 1}-{end}: BBB {_pm(b, 2)}, greedy "
            f"{_pm(g, 2)} (mean +- s.e. over the {t['seed'].nunique()} seeds).")


def _old_mistakes() -> str:
    p = _csv(f"{OLD}/phases.csv")
    phase = int((p["end"] - p["start"] + 1).mode().iloc[0])
    b, g = (_shares(OLD, a, OLD_LAST) for a in ("bbb", "greedy"))
    assert b["left_all"][0] < g["left_all"][0]  # "BBB leaves fewer edible ones"

    def span(shares: list[Fraction]) -> str:
        return f"{_exact(min(shares), 1)}-{_exact(max(shares), 1)}"

    return (f"(per {phase}-step phase, BBB {span(b['ate'])} % of steps, greedy "
            f"{span(g['ate'])} %)")


def _old_spread() -> str:
    poisonous = _probes(OLD, "bbb", True).groupby("step")["predicted_std"].mean()
    edible = _probes(OLD, "bbb", False).groupby("step")["predicted_std"].mean()
    late = poisonous[poisonous.index >= poisonous.index.max() - OLD_LAST].mean()
    return (f"grows to about {late:.1f} and stays there (few data: the agent rarely eats "
            f"them), while its spread for the wrong action on edible mushrooms shrinks to "
            f"{edible[edible.index.max()]:.2f}.")


def _old_probes() -> str:
    def late(agent: str, column: str) -> pd.Series:
        p = _probes(OLD, agent, True)
        p = p[p["step"] >= p["step"].max() - OLD_LAST]
        return p.groupby("step")[column].mean()

    truth = _probes(OLD, "bbb", True)["expected_reward"].unique()
    assert len(truth) == 1
    b, g = (100 * late(a, "chosen_share") for a in ("bbb", "greedy"))
    return (f"({_span(b, 0)} %) is close to greedy's ({_span(g, 0)} %), and `probes.csv` says "
            f"why: the mean predicted reward of eating a poisonous mushroom is "
            f"{late('bbb', 'predicted_mean').mean():.0f} (truth {truth[0]}) on average")


# ---------------------------------------------------------------- the checks

QUOTES = [  # (a page, a callable giving a snippet of its prose, built from the files)
    *((_page(PAPER), q) for q in (
        _paper_set_up, _paper_machine, _paper_kernels, _paper_workers,
        lambda: _metrics_written(PAPER),
        _exploration_cost, _paper_met, _paper_floors, _paper_not_met, _starved, _paper_bar,
        _paper_mistakes, _paper_spread, _paper_pessimistic, _kl_seen_summary, _screen_20k)),
    *((_page(KL_SEEN), q) for q in (
        lambda: f"Machine: 2-core x86-64 CPU, {_torch_cpu(KL_SEEN)},", _kl_seen_per_seed,
        _kl_seen_bites, _kl_seen_reading)),
    *((_page(H100), q) for q in (
        _gpu_title, _gpu_machine, _gpu_stop, _gpu_wall, _gpu_heading, _gpu_window,
        _gpu_header, _gpu_reading, _h200_run, _h200_same)),
    *((_page(DECAY_1), q) for q in (
        lambda: f"(AMD EPYC), {_torch_cpu(DECAY_1)},",
        lambda: (f"(BBB's worker {_worker(DECAY_1, 'bbb')} s, the epsilon-greedy worker "
                 f"{_worker(DECAY_1, 'greedy')} s; `config.json`)"),
        lambda: _metrics_thinned(DECAY_1, about=True), _memory_half, _memory_late,
        _memory_open_loop, _memory_floors, _memory_greedy)),
    *((_page(PRESET), q) for q in (
        lambda: f"(AMD EPYC), {_torch_cpu(PRESET)},",
        lambda: (f"(BBB's worker {_worker(PRESET, 'bbb')} s, the epsilon-greedy worker "
                 f"{_worker(PRESET, 'greedy')} s; `config.json`)"),
        lambda: _metrics_thinned(PRESET), _preset_bars, _preset_spread)),
    *((_page(MEMORY_20K), q) for q in (
        lambda: f"(AMD EPYC), {_torch_cpu(MEMORY_16K)},",
        lambda: f"(AMD EPYC), {_torch_cpu(DECAY_1)},", _memory_20k_verdict,
        _memory_20k_greedy)),
    *((_page(ALONE), q) for q in (
        lambda: f"(AMD EPYC), {_torch_cpu(ALONE)},",
        lambda: f"BBB's worker {_worker(ALONE, 'bbb')} s)", _pilot_20k, _pilot_plan,
        _pilot_verdict, _pilot_bars, _four_agents)),
    *((_page(BESIDE_GREEDY), q) for q in (
        lambda: f"(AMD EPYC), {_torch_cpu(BESIDE_GREEDY)},", _greedy_verdict)),
    *((_page(OLD), q) for q in (_old_late, _old_mistakes, _old_spread, _old_probes)),
]


def _id(x) -> str:
    return x.removesuffix("/README.md").split("/")[-1] if isinstance(x, str) else x.__name__


test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES, ids=_id)


# Numbers of a page that are not results: the year and section of the paper cited, the
# facts of the data set (its edible and poisonous mushrooms), versions where no file of the
# run records them, and the settings of the runs (steps and windows of steps, buffer sizes,
# widths, noise and sigmas, decay, the probe step, phase lengths) and the bars set before
# the runs (at most 0.04 per step late, within 1.5 times the exploration floors). An entry
# with words is a setting in its context (the number there only); a bare number is a
# setting wherever the page writes it.
SETTINGS = {
    _page(PAPER): {"Blundell et al. 2015, section 5.3", "(sigma 1), likelihood noise 0.1",
                   "initial posterior sigma 0.02", "(4208 edible and 3916\npoisonous",
                   "10,000", "40,001", "50,000", "(step 4096)", "the last 4096", "4096, was",
                   "20,000", "(a buffer of 50,000)", "with AVX-512)"},
    _page(KL_SEEN): {"10,000", "4096"},
    _page(H100): {"Blundell et al. 2015, section 5.3", "2 x 100 ReLU; buffer 4096",
                  "noise 0.1", "per 2000 steps", "in every 2000 steps",
                  "the whole 50,000 steps"},
    _page(DECAY_1): {"20,000", "50,000", "40,001", "14,001", "memory-grid-50k-300",
                     "the 0.04 asks"},
    _page(PRESET): {"0.3", "50,000", "40,001", "2 x 100", "0.04", "1.5"},
    _page(MEMORY_20K): {"20,000", "50,000", "16,384", "4,096", "14,001"},
    _page(ALONE): {"0.3", "20,000", "50,000", "14,001", "40,001", "0.04", "1.5"},
    _page(BESIDE_GREEDY): {"0.3", "50,000", "10,000", "0.04", "1.5"},
    _page(OLD): {"noise\n0.1", "initial sigma 0.02", "torch 2.13.0 CPU build",
                 "4 seeds, 3000 steps"},
}


def _prose(text: str) -> str:
    """A page's prose: no generated tables, no code blocks (fenced, or indented by four
    spaces), with its lines joined."""
    return flat(prose(text, lists=False))


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page`` that no check builds and no setting declares (a setting's
    line breaks read as spaces)."""
    text = (REPO / page).read_text(encoding="utf-8")
    for spec in TABLES:
        if spec.page == page:
            text = _blank_checked_cells(spec, text)
    settings = {flat(s) for s in SETTINGS[page]}
    return uncovered(_prose(text), snippets(page, FRONT, QUOTES), settings)


test_every_number_of_the_pages_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked)
test_every_declared_setting_is_on_its_page = page_numbers.settings_test(
    SETTINGS, _prose, PAGES)
