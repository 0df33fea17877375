"""The numbers of the Mushroom results pages (results/mushroom/README.md and
results/mushroom/tuning.md) in their prose and their hand-written tables, outside the
generated tables, checked against the shipped files they come from, as
tests/test_quoted_numbers.py checks the front pages: each run's ``config.json``,
``summary.csv``, ``metrics.csv`` and ``phases.csv``, the sweep of nu, the benchmark's
projection, and the presets and defaults of the code. A rerun that changes a file without
the page fails here, and a number a page adds without a check or a declared setting fails
the last tests.

A hand-written table copied from a run is checked whole (:data:`TABLES`): every row must
be the row the run's files give for its agent, as the page writes it. The tuning runs'
table of results/mushroom/tuning.md records runs whose raw outputs were not kept; its
regret cells are declared as such (:data:`RECORDS`) and checked only for that
declaration."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import page_numbers
import pandas as pd
from page_numbers import REPO, flat, prose, row_cells, snippets, tables, uncovered
from test_quoted_numbers import QUOTES as FRONT

PAGE, TUNING = "results/mushroom/README.md", "results/mushroom/tuning.md"
PAGES = (PAGE, TUNING)

QUICK = "results/mushroom/quick"
QUICK_10K = "results/mushroom/quick-10k"
SHOWDOWN = "results/mushroom/showdown"
SHOWDOWN_10K = "results/mushroom/showdown-10k"
NU_SWEEP = "results/mushroom/sweeps/neural-nu/sweep_summary.csv"
BENCH = "results/bench/bench.json"

LATE = 2000  # the window of the 10,000-step table's late regret (steps 8001-10,000)

# how the page names each agent in its tables' rows, and in their "next" cells
NAMES = {"bbb": "BBB", "bbb-lrt": "BBB-LRT", "linfullpost": "LinFullPost",
         "neurallinear": "NeuralLinear", "dropout": "Dropout TS", "bootstrap": "Bootstrapped NN",
         "neuralucb": "NeuralUCB", "neuralts": "NeuralTS", "linucb": "LinUCB",
         "greedy": "greedy", "eps1": "1 % greedy", "eps5": "5 % greedy", "uniform": "uniform"}
ROW_NAMES = {**NAMES, "bbb-lrt": "BBB, local reparameterisation"}
EPSILON_GREEDY = ("eps1", "greedy", "eps5")  # in the order the prose lists them
NOT_LEARNERS = ("uniform",)


# ---------------------------------------------------------------- the shipped files


@lru_cache
def _config(run: str) -> dict:
    return json.loads((REPO / run / "config.json").read_text())


def _summary(run: str) -> pd.DataFrame:
    return pd.read_csv(REPO / run / "summary.csv").set_index("agent")


def _final(run: str, agent: str) -> str:
    return f"{_summary(run).loc[agent, 'cumulative_regret_mean']:.0f}"


@lru_cache
def _ranking(run: str) -> pd.DataFrame:
    """The run's agents ranked as the run printed them (``bandits.records.regret``)."""
    from bandits.records.regret import ranking

    return ranking(pd.read_csv(REPO / run / "metrics.csv")).set_index("agent")


def _order(run: str) -> list[str]:
    return list(_ranking(run).index)


def _separated(run: str, agent: str) -> bool:
    return not _ranking(run).loc[agent, "next"].startswith("not separated")


def _per_seed(run: str) -> pd.DataFrame:
    """Each agent's final cumulative regret per seed (agents by seeds), from ``phases.csv``."""
    p = pd.read_csv(REPO / run / "phases.csv")
    return p.groupby(["agent", "seed"])["regret"].sum().unstack()


def _stopped(run: str, agent: str) -> tuple[int, int]:
    """The one seed of ``agent`` that stopped eating (no mushroom eaten in its last phase),
    and its final regret: the agent's worst seed."""
    p = pd.read_csv(REPO / run / "phases.csv")
    last = p[(p["agent"] == agent) & (p["end"] == p["end"].max())]
    stopped = last[last["a1_best0"] + last["a1_best1"] == 0]["seed"].tolist()
    assert len(stopped) == 1, (run, agent, stopped)
    finals = _per_seed(run).loc[agent]
    assert finals.idxmax() == stopped[0], (run, agent)
    return stopped[0], int(finals.max())


@lru_cache
def _late(run: str) -> pd.DataFrame:
    """Each agent's expected regret per step over the run's last :data:`LATE` steps: mean
    and standard error over the seeds (``bandits.tools.memory_tables.at_step``)."""
    from bandits.tools.memory_tables import at_step

    t = at_step(REPO / run, _config(run)["steps"], LATE)
    rows = {}
    for agent, g in t.groupby("agent"):
        late = g["late"]  # a Series' own mean, as the table's maker took it
        rows[agent] = {"mean": late.mean(), "se": late.std(ddof=1) / len(late) ** 0.5}
    return pd.DataFrame.from_dict(rows, orient="index")


def _span(values, digits: int = 0, sep: str = "-") -> str:
    values = list(values)
    return f"{min(values):.{digits}f}{sep}{max(values):.{digits}f}"


def _wall(run: str) -> str:
    hours, rest = divmod(round(_config(run)["wall_seconds"]), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours} h {minutes} min {seconds} s" if hours else f"{minutes} min {seconds} s"


def _torch(run: str) -> str:
    return f"torch {_config(run)['versions']['torch'].removesuffix('+cpu')} CPU build"


def _seeds(c: dict) -> str:
    """A run's seeds as the page writes them: ``(0, 1, 2)`` or ``(0-4)``."""
    first, n = c["seed"], c["seeds"]
    return (f"({', '.join(str(s) for s in range(first, first + n))})" if n <= 3
            else f"({first}-{first + n - 1})")


def _network(c: dict) -> str:
    hidden = c["hidden"]
    assert len(set(hidden)) == 1, hidden
    return f"{len(hidden)} x {hidden[0]}"


# ---------------------------------------------------------------- the hand-written tables


def _bold(text: str, best: bool) -> str:
    return f"**{text}**" if best else text


def _next(run: str, agent: str) -> str:
    """The "next" cell of an agent's row: the run's paired difference to the next agent,
    with the page's name of that agent."""
    text = _ranking(run).loc[agent, "next"]
    if not text:
        return ""
    m = re.fullmatch(r"(.*) (?:from|than) (\S+)(?: at \d+ seeds?)?", text)
    assert m, text
    lead, other = m.groups()
    return f"{lead} {'from' if lead.startswith('not') else 'than'} {NAMES[other]}"


def _quick_10k_rows() -> list[list[str]]:
    """The rows of the quick-10k table: mean, std, min and max over the seeds."""
    s = _summary(QUICK_10K)
    best = s["cumulative_regret_mean"].idxmin()
    names = {**ROW_NAMES, "bbb": "BBB (Thompson sampling)"}
    return [[names[a], _bold(f"{s.loc[a, 'cumulative_regret_mean']:.0f}", a == best),
             f"{s.loc[a, 'cumulative_regret_std']:.0f}", f"{s.loc[a, 'cumulative_regret_min']}",
             f"{s.loc[a, 'cumulative_regret_max']}"] for a in _order(QUICK_10K)]


def _showdown_10k_rows() -> list[list[str]]:
    """The rows of the 10,000-step table: the ranking, and the late regret per step."""
    r, late = _ranking(SHOWDOWN_10K), _late(SHOWDOWN_10K)
    best_mean, best_late = r["mean"].idxmin(), late["mean"].idxmin()
    def per_step(a: str) -> str:
        mean = _bold(f"{late.loc[a, 'mean']:.3f}", a == best_late)
        return f"{mean} +- {late.loc[a, 'se']:.3f}"

    return [[ROW_NAMES[a], _bold(f"{r.loc[a, 'mean']:.0f}", a == best_mean),
             f"{r.loc[a, 's.e.']:.0f}", f"{r.loc[a, 'min']}", f"{r.loc[a, 'max']}",
             _next(SHOWDOWN_10K, a), per_step(a)] for a in _order(SHOWDOWN_10K)]


@dataclass(frozen=True)
class HandTable:
    """A hand-written table of ``page`` headed by ``header``, whose rows, in order, must be
    those ``rows`` builds from the files (every cell as the page writes it)."""

    page: str
    header: Callable[[], str]
    rows: Callable[[], list[list[str]]]


TABLES = [
    HandTable(PAGE, lambda: "| agent | mean | std | min | max |", _quick_10k_rows),
    HandTable(PAGE, lambda: "| agent | mean | s.e. | min | max | next | regret per step, "
                            f"{_config(SHOWDOWN_10K)['steps'] - LATE + 1}-"
                            f"{_config(SHOWDOWN_10K)['steps']:,} |", _showdown_10k_rows),
]


def _rows_of(text: str, header: str) -> list[tuple[int, str]]:
    """The data rows (line index, line) of the one table of ``text`` headed by ``header``."""
    found = tables(text, header)
    assert len(found) == 1, f"{len(found)} tables headed {header!r}"
    return found[0]


def _table_errors(spec: HandTable, text: str) -> list[str]:
    doc = [row_cells(line) for _, line in _rows_of(text, spec.header())]
    want = spec.rows()
    errors = [f"{d} should be {w}" for d, w in zip(doc, want) if d != w]
    if len(doc) != len(want):
        errors.append(f"{len(doc)} rows, the files give {len(want)}")
    return errors


test_every_row_of_a_hand_written_table_is_its_runs_row = page_numbers.table_test(
    TABLES, _table_errors, "are not their run's", ids=lambda s: s.header()[:40])


def test_a_changed_number_fails_its_table():
    """The table check can fail: one number moved on the page breaks its row."""
    text = (REPO / PAGE).read_text(encoding="utf-8")
    for spec in TABLES:
        _, line = _rows_of(text, spec.header())[1]
        cells = row_cells(line)
        moved = cells[:2] + [str(int(cells[2]) + 1)] + cells[3:]
        assert _table_errors(spec, text.replace(line, "| " + " | ".join(moved) + " |"))


# The tuning runs' table (tuning.md): its regret cells record runs whose raw outputs were
# not kept, as the page says; no shipped file holds them, so they are declared here, by
# column, and the page must keep saying where they come from.
@dataclass(frozen=True)
class Records:
    page: str
    header: str
    columns: tuple[int, ...]
    says: str


RECORDS = [Records(TUNING, "| steps x updates/step | BBB settings changed | BBB regret | greedy "
                           "| 1% greedy | 5% greedy |", (2, 3, 4, 5),
                   "they come from real runs whose raw outputs were not kept")]


def test_the_unkept_records_are_declared_as_such():
    for r in RECORDS:
        text = (REPO / r.page).read_text(encoding="utf-8")
        assert _rows_of(text, r.header), r.header
        assert r.says in flat(text), f"{r.page} should say {r.says!r}"


# ---------------------------------------------------------------- the prose: README.md


def _defaults() -> list[str]:
    from bandits.simulator.parts import MEMORY, PAPER_LEARNER, PRESETS

    assert MEMORY["mean_decay"] == MEMORY["weight_decay"]  # "(AdamW's; BBB's on its ...)"
    assert PAPER_LEARNER["weight_decay"] == PAPER_LEARNER["mean_decay"] == 0  # "no decay"
    assert all(PRESETS[p]["buffer_size"] == MEMORY["buffer_size"] for p in ("quick", "memory"))
    return [f"decoupled weight decay {MEMORY['weight_decay']} (AdamW's; BBB's on its posterior "
            f"means) and a buffer of {MEMORY['buffer_size']:,} items",
            f"keep the paper's learner (a buffer of {PAPER_LEARNER['buffer_size']:,}, no decay)"]


def _quick() -> list[str]:
    c = _config(QUICK)
    assert c["buffer_size"] >= c["steps"]  # "keeps every interaction"
    assert c["mean_decay"] == c["weight_decay"] and c["act_samples"] == 1
    assert c["versions"]["kernels"]["pinned"]
    return [f"agents {', '.join(c['agent'])}; {c['seeds']} seeds {_seeds(c)}; {c['steps']} "
            f"steps; {c['updates_per_step']} updates of {c['batch_size']} per step; the learner "
            f"with a memory (decoupled weight decay {c['weight_decay']}, a buffer of "
            f"{c['buffer_size']:,}, which at {c['steps']} steps keeps every interaction); "
            f"{_network(c)} ReLU",
            f"{_torch(QUICK)}, the kernels pinned",
            f"Final cumulative regret after {c['steps']} steps"]


def _beside_the_paper() -> list[str]:
    from bandits.simulator.parts import PRESETS

    paper, quick = PRESETS["paper"], _config(QUICK)
    return [f"over {paper['steps']:,} steps with {paper['updates_per_step']} updates per step. "
            f"{quick['seeds']} seeds at a horizon {paper['steps'] // quick['steps']} times "
            "shorter"]


def _quick_10k() -> list[str]:
    from bandits.simulator.parts import PRESETS

    c, quick = _config(QUICK_10K), PRESETS["quick"]
    assert c["agent"] == quick["agent"] and c["updates_per_step"] == quick["updates_per_step"]
    assert c["weight_decay"] == 0 and not c.get("mean_decay") and c["act_samples"] == 1
    return [f"the paper's learner: {c['seeds']} seeds, {c['steps']:,} steps",
            f"training ({c['updates_per_step']} updates of {c['batch_size']} per step) with the "
            f"paper's learner (a buffer of {c['buffer_size']:,}, no decay; BBB: plain Thompson "
            f"sampling, one weight sample per step), {c['seeds']} seeds {_seeds(c)}, "
            f"{c['steps']:,} steps",
            f"{_torch(QUICK_10K)}, two worker processes of one torch thread, while other heavy "
            f"work shared the cores: {_wall(QUICK_10K)}"]


def _quick_10k_reading() -> list[str]:
    order, two = _order(QUICK_10K), _config(SHOWDOWN_10K)
    assert order[:2] == ["bbb", "eps1"] and not _separated(QUICK_10K, "bbb")
    c = _config(QUICK_10K)
    assert two["act_samples"] == 2 and all(two[k] == c[k] for k in ("seed", "seeds", "steps"))
    s, seeds = _summary(SHOWDOWN_10K), _per_seed(QUICK_10K)
    seed, worst = _stopped(QUICK_10K, "greedy")
    others = seeds.loc["greedy"].drop(seed)
    return [f"BBB with one sample has the lowest mean, and the seeds do not separate it from "
            f"{NAMES[order[1]]}",
            f"with two samples BBB ended at {s.loc['bbb', 'cumulative_regret_mean']:.0f} "
            f"({s.loc['bbb', 'cumulative_regret_std']:.0f}) in an earlier run of the same seeds",
            f"Greedy's seed {seed} stops eating after early losses ({worst:,}) and its other "
            f"seeds end at {_span(others)}, near BBB's {_span(seeds.loc['bbb'])}; 1 % greedy "
            f"ends at {_span(seeds.loc['eps1'])}",
            "epsilon-greedy rows differ from the earlier shipped ones ("
            + ", ".join(_final(SHOWDOWN_10K, a) for a in EPSILON_GREEDY) + ")"]


def _showdown() -> list[str]:
    c = _config(SHOWDOWN)
    assert c["weight_decay"] == 0 and not c.get("mean_decay")
    assert c["prior"] == "gaussian" and c["act_samples"] == 1 and not c["exact_design"]
    assert c["nu"] == c["ucb_lambda"] == c["ucb_alpha"] == 1
    return [f"The quick protocol ({c['steps']} steps, {c['updates_per_step']} updates of "
            f"{c['batch_size']} per step, buffer {c['buffer_size']}, {_network(c)} ReLU for every "
            f"network) with {c['seeds']} seeds {_seeds(c)}",
            f"{_torch(SHOWDOWN)}, two worker processes of one torch thread, while other heavy "
            f"work shared the cores; wall time **{_wall(SHOWDOWN)}**",
            f"(greedy to {_final(SHOWDOWN, 'greedy')}, NeuralUCB to "
            f"{_final(SHOWDOWN, 'neuralucb')})"]


def _nu_sweep() -> str:
    """The lowest final regret of NeuralUCB and NeuralTS over the sweep of nu, each below
    its default's (nu = 1)."""
    t = pd.read_csv(REPO / NU_SWEEP)
    best = {}
    for agent in ("neuralucb", "neuralts"):
        a = t[t["agent"] == agent].set_index("nu")["cumulative_regret_mean"]
        best[agent] = (a.idxmin(), a.min())
        assert a.min() < a.loc[1.0], agent  # "helps both"
    (u_nu, u), (t_nu, ts) = best["neuralucb"], best["neuralts"]
    return f"({u:.0f} at nu = {u_nu:g} and\n{ts:.0f} at nu = {t_nu:g})"


WORDS = {3: "Three", 4: "Four", 5: "Five", 6: "Six", 10: "Ten"}


def _showdown_reading() -> list[str]:
    order = _order(SHOWDOWN)
    learners = [a for a in order if a not in NOT_LEARNERS]
    assert order[:2] == ["bbb-lrt", "linfullpost"] and not _separated(SHOWDOWN, "bbb-lrt")
    assert order[2:4] == ["eps1", "bbb"] and not _separated(SHOWDOWN, "eps1")
    assert learners[-1] == "neuralts"  # "comes last of them"
    assert not any(_separated(SHOWDOWN, a) for a in learners[:-1])
    greedy, linucb = _stopped(SHOWDOWN, "greedy"), _stopped(SHOWDOWN, "linucb")
    return [f"BBB with the local reparameterisation trick ({_final(SHOWDOWN, 'bbb-lrt')}) and "
            "LinFullPost, the exact posterior of a linear model on the raw one-hot features "
            f"({_final(SHOWDOWN, 'linfullpost')}), have the lowest means",
            f"Plain BBB is fourth ({_final(SHOWDOWN, 'bbb')}), behind 1 % greedy "
            f"({_final(SHOWDOWN, 'eps1')}), and the seeds separate neither. Greedy's seed "
            f"{greedy[0]} stops eating ({greedy[1]}), and so does one LinUCB seed ({linucb[1]})",
            f"comes last of them ({_final(SHOWDOWN, 'neuralts')})",
            _nu_sweep(),
            f"{WORDS[_config(SHOWDOWN)['seeds']]} seeds separate no two neighbouring learners"]


def _showdown_10k() -> list[str]:
    c, quick = _config(SHOWDOWN_10K), _config(QUICK_10K)
    assert c["agent"] == _config(SHOWDOWN)["agent"] and c["act_samples"] == 2
    assert all(c[k] == quick[k] for k in ("steps", "seed", "seeds", "updates_per_step",
                                          "batch_size", "buffer_size"))
    return [f"Every agent at {c['steps']:,} steps",
            f"the quick preset's training, {c['seeds']} seeds {_seeds(c)}, {c['steps']:,} steps",
            f"{_torch(SHOWDOWN_10K)}, two worker processes of one torch thread",
            f"wall time **{_wall(SHOWDOWN_10K)}**",
            "Its epsilon-greedy rows ("
            + ", ".join(_final(SHOWDOWN_10K, a) for a in EPSILON_GREEDY)
            + ") differ from those of `quick-10k` on the same seeds ("
            + ", ".join(_final(QUICK_10K, a) for a in EPSILON_GREEDY) + ")",
            f"over steps {c['steps'] - LATE + 1}-{c['steps']:,} (from `phases.csv`, mean +- s.e. "
            "over seeds)",
            f"![cumulative regret of every agent, {c['steps']:,} steps, log axis]"]


def _showdown_10k_reading() -> list[str]:
    c, order, late = _config(SHOWDOWN_10K), _order(SHOWDOWN_10K), _late(SHOWDOWN_10K)["mean"]
    assert order[:3] == ["linfullpost", "bbb-lrt", "bbb"]
    assert not _separated(SHOWDOWN_10K, "linfullpost") and _separated(SHOWDOWN_10K, "bbb-lrt")
    lead = _ranking(SHOWDOWN_10K).loc["bbb-lrt", "next"].split(" lower")[0]
    uncertain = late[["bbb", "bbb-lrt", "neurallinear", "neuralucb", "neuralts", "linfullpost"]]
    eps, others = late[list(EPSILON_GREEDY)], late[["dropout", "bootstrap"]]
    assert uncertain.max() < min(eps.min(), others.min())  # "below every ..."
    mean = _summary(SHOWDOWN_10K)["cumulative_regret_mean"]
    assert (mean["neuralts"] < mean[["greedy", "eps5", "dropout", "bootstrap"]]).all()
    learners = late.drop(list(NOT_LEARNERS))
    assert learners.idxmax() == "linucb"  # "the highest late regret of the learners"
    _, linucb = _stopped(SHOWDOWN_10K, "linucb")
    seed, greedy = _stopped(SHOWDOWN_10K, "greedy")
    return [f"At {c['steps']:,} steps LinFullPost still has the lowest mean, but one of its "
            f"seeds ends at {_summary(SHOWDOWN_10K).loc['linfullpost', 'cumulative_regret_max']}"
            " and the seeds do not separate it from BBB with the local reparameterisation "
            f"trick, which the seeds do separate from BBB ({lead} lower)",
            f"pay {_span(uncertain, 2)} per step at the end, below every epsilon-greedy agent "
            f"({_span(eps, 2)}) and the dropout and bootstrap agents ({_span(others, 2)})",
            f"NeuralTS, last of the learners at {_config(SHOWDOWN)['steps']} steps, has "
            "overtaken greedy",
            f"one seed ({linucb:,}) stops eating after early losses, as greedy's seed {seed} "
            f"does\n({greedy:,})"]


def _paper_preset() -> list[str]:
    from bandits.simulator.parts import PRESETS

    p = PRESETS["paper"]
    minutes = json.loads((REPO / BENCH).read_text())["paper_protocol_minutes_projected"]
    return [f"Blundell's protocol: {p['steps']:,} steps, {p['updates_per_step']} updates of "
            f"{p['batch_size']} per step, {p['seeds']} seeds, agents {' '.join(p['agent'])}",
            f"(about {minutes / 60:.1f} hours of training with the fused step)"]


# ---------------------------------------------------------------- the prose: tuning.md


def _tuning_weights() -> list[str]:
    """The weights of the tuning runs' network (117 one-hot features, 2 x 100, 2 actions),
    and the defaults the runs chose (the agents' defaults now)."""
    import dataclasses

    from agents import AgentConfig
    from bandits.simulator.parts import PRESETS
    from envs.mushroom_data import FEATURE_NAMES

    sizes = [len(FEATURE_NAMES), 100, 100, 2]  # the page's "2-hidden-layer 100-unit"
    weights = sum((a + 1) * b for a, b in zip(sizes, sizes[1:]))
    d = {f.name: f.default for f in dataclasses.fields(AgentConfig)}
    assert tuple(d["hidden"]) == tuple(sizes[1:-1])
    return [f"~{round(weights, -3):,} weights",
            f"**noise {d['noise_sigma']:g}, init {d['init_sigma']:g} (the defaults)**",
            f"and {d['noise_sigma']:g} is our default",
            f"the paper uses {PRESETS['paper']['updates_per_step']}. The `quick` preset uses "
            f"{PRESETS['quick']['updates_per_step']}",
            f"The `paper` preset ({PRESETS['paper']['seeds']} seeds, "
            f"{PRESETS['paper']['steps']:,} steps, {PRESETS['paper']['updates_per_step']} "
            "updates)"]


# (a page, a callable giving the snippets its prose must hold, built from the files)
QUOTES = [
    *((PAGE, q) for q in (_defaults, _quick, _beside_the_paper, _quick_10k, _quick_10k_reading,
                          _showdown, _showdown_reading, _showdown_10k, _showdown_10k_reading,
                          _paper_preset)),
    (TUNING, _tuning_weights),
]

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES)


# Numbers of a page's prose that are not results: the year of the paper cited, versions,
# and the settings of the runs it names (steps, buffer sizes, decay, the settings the
# tuning runs tried). An entry with words is a setting in its context (the number there
# only); a bare number is a setting wherever the page writes it.
SETTINGS = {
    PAGE: {"(2015, Figure 6)", "the 10-seed runs at 20,000 and 50,000 steps",
           "The 10,000-step comparison", "[memory-decay-0.3]"},  # a run's folder
    TUNING: {"2-hidden-layer 100-unit", "buffer 4096", "torch 2.13 CPU build",
             # the steps, likelihood noises and initial sigmas the tuning runs tried
             "3000", "2000", "0.05", "0.01", "0.02", "0.2"},
}


def _blank_rows(text: str, header: str, columns: tuple[int, ...] | None = None) -> str:
    """``text`` with the cells ``columns`` (all when None) of a table's rows emptied."""
    lines = text.splitlines()
    if columns is None:  # the header too: the checks build it
        lines = ["" if line.strip() == header else line for line in lines]
    for k, line in _rows_of(text, header):
        cells = row_cells(line)
        keep = [("" if columns is None or i in columns else c) for i, c in enumerate(cells)]
        lines[k] = "| " + " | ".join(keep) + " |"
    return "\n".join(lines)


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page``'s prose that no check builds and no setting declares."""
    text = (REPO / page).read_text(encoding="utf-8")
    for spec in TABLES:
        if spec.page == page:
            text = _blank_rows(text, spec.header())
    for r in RECORDS:
        if r.page == page:
            text = _blank_rows(text, r.header, r.columns)
    return uncovered(flat(prose(text, lists=False)), snippets(page, FRONT, QUOTES),
                     SETTINGS[page])


test_every_number_of_the_mushroom_pages_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked)
test_every_declared_setting_is_on_its_page = page_numbers.settings_test(
    SETTINGS, flat, PAGES)
