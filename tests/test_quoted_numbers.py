"""Numbers the README and the docs quote in their prose, outside the generated tables
(bandits.doc_tables), checked against the shipped files they come from: a rerun that
changes a file without the prose fails here."""

from __future__ import annotations

import json
from pathlib import Path

import page_numbers
import pandas as pd
from page_numbers import REPO, snippets, starved, unquoted


def _wall(run: str) -> str:
    """A run's wall time as the prose writes it: ``55 min 29 s``."""
    seconds = json.loads((REPO / run / "config.json").read_text())["wall_seconds"]
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _pin_cost() -> tuple[str, str]:
    """What the pinned kernels cost (results/bench/kernels): pinned / native of the
    default command and of the fused step, as the pages write them."""
    t = pd.read_csv(REPO / "results/bench/kernels/kernels.csv").set_index("command")
    command, step = (f"{t.loc[c, 'pinned_over_native']:.2f}" for c in (
        "python -m bandits.run (the default command)", "fused training step (bandits.bench)"))
    return command, step


def _regret(path: str, agent: str, column: str = "cumulative_regret_mean",
            **where: float) -> str:
    t = pd.read_csv(REPO / path)
    t = t[t["agent"] == agent]
    for k, v in where.items():
        t = t[t[k] == v]
    assert len(t) == 1, (path, agent, where)
    return f"{t[column].iloc[0]:.0f}"


SWEEP = "results/mushroom/sweeps/neural-nu/sweep_summary.csv"
SHOWDOWN = "results/mushroom/showdown/summary.csv"

GRID = "results/mushroom/learner-screen/memory-grid"


REVISED = "results/mushroom/learner-screen/revised"
GRID_50K = "results/mushroom/learner-screen/memory-grid-50k"


def _screen(learner: str, column: str, size: int, scale: float = 100.0,
            folder: str = GRID) -> str:
    t = pd.read_csv(REPO / folder / "summary.csv")
    row = t[(t["learner"] == learner) & (t["buffer_size"] == size)]
    assert len(row) == 1, (learner, size)
    return f"{scale * row[column].iloc[0]:.1f}"


def _revised(learner: str, column: str) -> str:
    return _screen(learner, column, 4096, folder=REVISED)


def _at_50k(learner: str, acting: str = "thompson") -> str:
    return _screen(learner, f"{acting}_never_eaten", 50000, folder=GRID_50K)


GRID_300 = "results/mushroom/learner-screen/memory-grid-50k-300"


def _longer(learner: str, column: str) -> str:
    """The paired change of a share from 100 to 300 draws per item, over the buffers."""
    runs = [pd.read_csv(REPO / f / "runs.csv") for f in (GRID_50K, GRID_300)]
    short, long = (r[r["learner"] == learner].set_index("buffer")[column] for r in runs)
    d = 100 * (long - short)
    return f"{d.mean():+.2f} +- {d.std() / len(d) ** 0.5:.2f}"


DECAYS = "results/mushroom/learner-screen/memory-grid-50k-decays"


def _against_decay_1(learner: str, column: str) -> str:
    """The paired difference of a share from decay 1's at 50,000 items, over the buffers."""
    new = pd.read_csv(REPO / DECAYS / "runs.csv")
    ref = pd.read_csv(REPO / GRID_50K / "runs.csv")
    one = learner.replace("-0.3-", "-1-").replace("-3-", "-1-")
    a, b = (r[r["learner"] == n].set_index("buffer")[column]
            for r, n in ((new, learner), (ref, one)))
    d = 100 * (a - b)
    return f"{d.mean():+.2f} +- {d.std() / len(d) ** 0.5:.2f}"


NEW_BUFFERS = "results/mushroom/learner-screen/decay-0.3-50k-new-buffers"


def _decay_03_vs_1(net: str, acting: str) -> str:
    """Decay 0.3 minus decay 1 on the 12 new buffers, paired (points)."""
    runs = pd.read_csv(REPO / NEW_BUFFERS / "runs.csv")
    a, b = (runs[runs["learner"] == f"{net}-{d}-50k"].set_index("buffer")[
        f"{acting}_never_eaten"] for d in ("0.3", "1"))
    diff = 100 * (a - b)
    return f"{diff.mean():+.2f} +- {diff.std() / len(diff) ** 0.5:.2f}"


def _decay_03(learner: str, acting: str) -> str:
    return _screen(learner, f"{acting}_never_eaten", 50000, folder=DECAYS)


def _screen_wall(folder: str = GRID) -> str:
    seconds = json.loads((REPO / folder / "screen.json").read_text())["wall_seconds"]
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _starved_greedy_seed() -> str:
    """The paper-horizon greedy seed's longest stretch of phases without one eat."""
    _, (start, end, _) = starved("results/mushroom/paper-horizon")
    return f"ate nothing from step {start:,} to {end:,}"


MNIST_WIDE = "results/mnist/2x1200"


def _chosen_error(method: str) -> str:
    t = pd.read_csv(REPO / MNIST_WIDE / "table1.csv")
    row = t[t["chosen"] & (t["method"] == method)]
    assert len(row) == 1, method
    return f"{row['test_error_mean'].iloc[0]:.2f}"


def _tempered_pair() -> str:
    """The tempered 2 x 1200 pair of priors, seed by seed, from the report's tables.md."""
    import re

    text = (REPO / MNIST_WIDE / "tables.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines()
               if line.startswith("| 1200 | tempered-40/prior=mixture + "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    seeds, lower, mean, _, interval = cells[-6:-1]  # the last columns: as the header
    assert re.fullmatch(r"-?\d\.\d{3}", mean), mean
    ahead = "all" if lower == seeds else lower
    return (f"the scale mixture is ahead on {ahead} {seeds} seeds,\nby "
            f"{abs(float(mean)):.2f} points (95 % interval {interval})")


def _paper_error(method: str) -> str:
    from bandits.mnist.reports.tables import PAPER_TABLE1

    return f"{PAPER_TABLE1[(method, 1200)]:.2f}"


def _paper_gap() -> str:
    from bandits.mnist.reports.tables import PAPER_TABLE1

    gap = PAPER_TABLE1[("bbb-gaussian", 1200)] - PAPER_TABLE1[("bbb-mixture", 1200)]
    return f"not the paper's {gap:.2f}"


def _pruning_costs() -> str:
    """What removing 95 and 98 % of the weights costs, ours and the paper's (points)."""
    from bandits.mnist.reports.tables import PAPER_TABLE2
    from bandits.tools.mnist_tables import table2

    ours = next(line for line in table2(REPO).splitlines() if line.startswith("| ours |"))
    errors = [float(c.replace("*", "").split()[0]) for c in ours.strip("|").split("|")[1:]]
    paper = [v for _, v in PAPER_TABLE2.values()]
    return (f"removing 95 % of the weights costs {errors[3] - errors[0]:.2f} points and 98 % "
            f"{errors[4] - errors[0]:.2f}\n(the paper: {paper[3] - paper[0]:.2f} and "
            f"{paper[4] - paper[0]:.2f})")


def _late(run: str, agent: str) -> float:
    """An agent's expected regret per step over steps 40,001-50,000, mean over seeds."""
    from bandits.tools.memory_tables import at_step

    t = at_step(REPO / run, 50_000, 10_000)
    return float(t[t["agent"] == agent]["late"].mean())


def _times_floor(run: str, agent: str) -> float:
    """An epsilon-greedy agent's late regret as a multiple of its exploration's own cost."""
    from bandits.tools.memory_tables import EPSILON, RANDOM_ACTION_COST

    return _late(run, agent) / (EPSILON[agent] * RANDOM_ACTION_COST)


PRESET = "results/mushroom/memory-decay-0.3"
DECAY_1 = "results/mushroom/memory-horizon"


def _final(run: str, agent: str) -> str:
    """An agent's mean final cumulative regret as ``summary.csv`` holds it."""
    t = pd.read_csv(REPO / run / "summary.csv").set_index("agent")
    return f"{t.loc[agent, 'cumulative_regret_mean']:.1f}".removesuffix(".0")


ALONE = "results/mushroom/memory-20k/decay-0.3-50k"
BESIDE_GREEDY = "results/mushroom/memory-20k/decay-0.3-50k-greedy"


def _memorised(kind: str) -> str:
    t = pd.read_csv(REPO / PRESET / "memorisation.csv")
    row = t[(t["agent"] == "bbb") & (~t["edible"]) & (t["history"] == kind)]
    assert len(row) == 1, kind
    return f"{100 * row['mistake_rate'].iloc[0]:.{2 if kind == 'never eaten' else 1}f}"


SAME_BYTES_QUOTES = [  # the four-agent run against the two that chose decay 0.3
    (f"{PRESET}/README.md", lambda: f"1 % greedy ends at {_final(PRESET, 'eps1')} here and at "
                                    f"{_final(ALONE, 'eps1')} in"),
    (f"{PRESET}/README.md", lambda: f"5 % greedy at {_final(PRESET, 'eps5')} here and at "
                                    f"{_final(BESIDE_GREEDY, 'eps5')} in"),
    (f"{PRESET}/README.md", lambda: f"never eaten, {_memorised('never eaten')} % of those shown, "
                                    f"and of those whose last eating paid +5, "
                                    f"{_memorised('last paid 5')} %"),
    ("docs/simulator.md", lambda: f"1 % greedy ends at {_final(PRESET, 'eps1')} in"),
    ("docs/simulator.md", lambda: f"and at {_final(ALONE, 'eps1')}\nalone"),
]


HELDOUT = "results/mushroom/heldout/analysis"


def _heldout_greedy() -> str:
    """The held-out primary test, BBB - greedy: its p, wins, mean +- s.e. and the normal
    95 % interval of the mean, from the analysis's files."""
    t = pd.read_csv(REPO / HELDOUT / "paired.csv").set_index(["measure", "other"])
    r = t.loc[("final", "greedy")]
    low, high = (r["mean_diff"] + k * 1.96 * r["se"] for k in (-1, 1))
    return (f"(one-sided sign-flip p = {r['p_one_sided']:.3f}; lower on {r['wins']} of "
            f"{r['seeds']} seeds), **but the margin is greedy's\nfailures**: the mean "
            f"difference ({r['mean_diff']:.0f} +- {r['se']:.0f}) has a normal 95 % interval "
            f"({low:.0f} to\n{high:.0f}) that includes zero")


def _paper_setup_greedy() -> str:
    """The Figure 6 table's paired BBB - greedy final-regret cell (the paper's set-up)."""
    from bandits.tools.doc_tables import figure6

    row = next(line for line in figure6(REPO).splitlines()
               if line.startswith("| BBB - agent, final regret"))
    cells = [c.strip() for c in row.strip("|").split("|")]  # the label, BBB, greedy, ...
    return "BBB - greedy\n" + cells[2]


def _paper_preset_reached() -> str:
    """The step the exact paper preset's slowest agent reached (its summary.csv)."""
    steps = pd.read_csv(REPO / "results/mushroom/paper-preset-h100/summary.csv")["steps"]
    return f"reached step {steps.min():,} of 50,000"


QUICK_CHECK = 'python -m pytest -n 2 -m "not slow"'


def _readme_times() -> list[str]:
    """The README's timings as results/fresh-machine/times.json records them."""
    t = json.loads((REPO / "results/fresh-machine/times.json").read_text())
    took = {c["command"]: c["seconds"] for c in t["commands"]}
    install = took["python3 -m venv .venv && . .venv/bin/activate && pip install -c "
                   "constraints.txt -e ."]
    return [f"(a {t['machine']['cores']}-core {t['machine']['cpu']})",
            f"the install\ntook {install} s and the job {took['python -m bandits.run']} s",
            f"It took {took[QUICK_CHECK]} s on the same two idle"]


README_QUOTES = [
    *(lambda i=i: _readme_times()[i] for i in range(3)),
    _paper_setup_greedy,
    _paper_preset_reached,
    _heldout_greedy,
    _starved_greedy_seed,
    lambda: f"far stronger than the paper's ({_chosen_error('bbb-gaussian')} %\nagainst "
            f"{_paper_error('bbb-gaussian')} % at 2 x 1200)",
    _tempered_pair,
    _paper_gap,
    _pruning_costs,
    lambda: f"at about {float(_pin_cost()[0]):.1f} times the time",  # exact mode's cost
]


QUOTES = [  # (the file quoting, the text it must hold, built from the shipped files)
    *(("README.md", text) for text in README_QUOTES),
    *SAME_BYTES_QUOTES,
    *((doc, lambda: f"{_wall('results/mushroom/paper-horizon')}")
      for doc in ("README.md", "docs/index.md", "docs/bandit-results.md", "docs/speed.md",
                  "results/mushroom/paper-horizon/README.md")),
    *((doc, lambda: f"{_wall('results/mushroom/quick')}")
      for doc in ("results/mushroom/README.md", "docs/bandit-results.md", "docs/speed.md")),
    *(("results/mushroom/sweeps/neural-nu/README.md", text) for text in (
        lambda: f"({_regret(SWEEP, 'neuralucb', nu=1.0)} and {_regret(SWEEP, 'neuralts', nu=1.0)})",
        lambda: f"gives {_regret(SHOWDOWN, 'neuralucb')} and {_regret(SHOWDOWN, 'neuralts')}",
        lambda: f"BBB's {_regret(SHOWDOWN, 'bbb')}")),
    *(("docs/agents-compared.md", text) for text in (
        lambda: f"NeuralUCB {_regret(SWEEP, 'neuralucb', nu=0.1)} at nu = 0.1",
        lambda: f"NeuralTS\n{_regret(SWEEP, 'neuralts', nu=0.01)} at nu = 0.01",
        lambda: f"against {_regret(SWEEP, 'neuralucb', nu=1.0)} and "
                f"{_regret(SWEEP, 'neuralts', nu=1.0)} at nu = 1",
        lambda: f"{_regret(SHOWDOWN, 'neuralucb')} and {_regret(SHOWDOWN, 'neuralts')})")),
    *((f"{GRID}/README.md", text) for text in (
        _screen_wall,
        lambda: f"eats {_screen('ridge', 'greedy_never_eaten', 16384)} % of the never-eaten",
        lambda: f"eats\n  {_screen('bbb-md-1-16k', 'thompson_never_eaten', 16384)} % ("
                f"{_screen('bbb-md-1-16k', 'vs_ridge', 16384)} +- "
                f"{_screen('bbb-md-1-16k', 'vs_ridge_se', 16384)} points above ridge",
        lambda: f"leaves {_screen('oracle', 'greedy_edible_uneaten', 4096)} % of the edible",
        lambda: "greedy: decay 1 at 16,384 ("
                f"{_screen('greedy-wd-1-16k', 'greedy_never_eaten', 16384)} %)",
    )),
    *((f"{REVISED}/README.md", text) for text in (
        lambda: "**" + _screen_wall(REVISED).replace(" min ", " min\n") + "**",
        lambda: f"ridge regression on the outcomes {_revised('ridge', 'greedy_never_eaten')} +- "
                f"{_revised('ridge', 'greedy_never_eaten_se')} %",
        lambda: f"decay 1 eats {_revised('greedy-wd-1', 'greedy_never_eaten')} %",
        lambda: f"leaves {_revised('greedy-wd-1', 'greedy_edible_uneaten')} % of the edible "
                "ones uneaten",
    )),
    ("docs/bandit-results.md",
     lambda: f"where ridge eats {_revised('ridge', 'greedy_never_eaten')} %"),
    ("docs/experiments.md",
     lambda: f"ridge regression eats {_revised('ridge', 'greedy_never_eaten')} %"),
    *((doc, lambda: f"{_at_50k('greedy-wd-1-50k', 'greedy')}-{_at_50k('bbb-md-1-50k')} %")
      for doc in ("docs/bandit-results.md", f"{GRID_50K}/README.md")),
    ("docs/experiments.md",
     lambda: f"greedy {_at_50k('greedy-wd-1-50k', 'greedy')} %, BBB {_at_50k('bbb-md-1-50k')} %, "
             f"ridge {_at_50k('ridge', 'greedy')} %"),
    (f"{GRID_50K}/README.md", lambda: f"**{_screen_wall(GRID_50K)}**"),
    (f"{GRID_300}/README.md", lambda: f"**{_screen_wall(GRID_300)}**"),
    (f"{GRID_300}/README.md", lambda: _longer("greedy-wd-1-50k", "greedy_never_eaten")),
    (f"{GRID_300}/README.md", lambda: _longer("bbb-md-1-50k", "thompson_never_eaten")),
    (f"{DECAYS}/README.md", lambda: f"**{_screen_wall(DECAYS)}**"),
    *((f"{DECAYS}/README.md", lambda learner=learner, column=column:
       f"| {_against_decay_1(learner, column)} |")
      for learner, column in (("greedy-wd-0.3-50k", "greedy_never_eaten"),
                              ("greedy-wd-3-50k", "greedy_never_eaten"),
                              ("bbb-md-0.3-50k", "thompson_never_eaten"),
                              ("bbb-md-3-50k", "thompson_never_eaten"))),
    (f"{NEW_BUFFERS}/README.md", lambda: f"**{_screen_wall(NEW_BUFFERS)}**"),
    (f"{NEW_BUFFERS}/README.md", lambda: f"BBB **{_decay_03_vs_1('bbb-md', 'thompson')}** points"),
    (f"{NEW_BUFFERS}/README.md", lambda: f"{_decay_03_vs_1('greedy-wd', 'greedy')} points (lower"),
    *((doc, lambda: f"decay 0.3 eats {_decay_03('greedy-wd-0.3-50k', 'greedy')} % (greedy) "
                    f"and {_decay_03('bbb-md-0.3-50k', 'thompson')} % (BBB)")
      for doc in ("docs/experiments.md", "docs/bandit-results.md")),
]


test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES, whitespace=False)


def _recorded_walls(folders) -> set[str]:
    """Every wall time the results under ``folders`` record (a ``*wall*`` number of a JSON
    file there), written as the prose writes it: ``55 min 29 s``, ``1 h 18 min 58 s``."""
    found: set[str] = set()

    def walk(o) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and "wall" in k:
                    hours, rest = divmod(round(v), 3600)
                    minutes, seconds = divmod(rest, 60)
                    found.add(f"{hours} h {minutes} min {seconds} s" if hours
                              else f"{minutes} min {seconds} s")
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for path in {p for folder in folders for p in folder.rglob("*.json")}:
        try:
            walk(json.loads(path.read_text()))
        except ValueError:
            continue
    return found


def _folders_of(page: Path) -> set[Path]:
    """The folders a page speaks of: its own, each one it links to (or holding a file it
    links to), and each ``results/...`` path it names in code."""
    import re

    text = page.read_text(encoding="utf-8")
    folders = {page.parent}
    targets = [(page.parent, t) for t in re.findall(r"\]\(([^)#\s]+)", text)
               if not t.startswith(("http:", "https:"))]
    targets += [(REPO, t) for t in re.findall(r"`(results/[^`\s]+)`", text)]
    for base, target in targets:
        path = (base / target).resolve()
        if path.exists():
            folders.add(path if path.is_dir() else path.parent)
    return folders


def test_every_wall_time_in_the_prose_is_one_its_results_record():
    """A wall time a page quotes is one that a result of the page's own folder, or of a
    folder it links to or names, records (not merely one some result records)."""
    import re

    pages = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "results").rglob("*.md")]
    stray = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        quoted = list(re.finditer(r"(?:\d+ h\s+)?\d+ min\s+\d+ s\b", text))
        if not quoted:
            continue
        recorded = _recorded_walls(_folders_of(page))
        for m in quoted:
            wall = " ".join(m.group(0).split())
            if wall not in recorded:
                line = text[:m.start()].count("\n") + 1
                stray.append(f"{page.relative_to(REPO)}:{line}: {wall}")
    assert stray == [], "wall times none of the page's results records: " + "; ".join(stray)


# Numbers of a page's prose that are not results: years of the papers cited, versions,
# section numbers, and the settings of the runs it describes (steps, buffer sizes, widths,
# epochs, decay, the bar set for the learner). Every other number of these pages' prose
# must be built by a check of QUOTES from the files it comes from.
SETTINGS = {
    "README.md": {"2010", "2015", "2018", "2020", "2021", "3.11", "2.13", "4.0", "400", "600",
                  "1200",
                  "2000", "2,001", "4,096", "14,000", "16,384", "20,000", "50,000", "0.3",
                  "0.04", "1.5", "2,000", "0.5", "0.95"},  # held-out: the Wheel's steps, deltas
    "docs/index.md": {"2010", "2015", "2018", "2020", "2021", "1987", "5.1", "5.3", "3.11",
                      "2.13", "2.4", "4.0", "400", "600", "1200", "8000", "50,000"},
}


test_every_number_of_the_front_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    sorted(SETTINGS), lambda doc: unquoted(doc, snippets(doc, QUOTES), SETTINGS[doc]),
    add="a check to QUOTES")
