"""Numbers that docs/agents-compared.md quotes in its prose and in its hand-written tables,
checked against the shipped files they come from (as tests/test_quoted_numbers.py does
for the README and docs/index.md): a rerun that changes a file without the page fails
here."""

from __future__ import annotations

import json
import re
from functools import lru_cache

import page_numbers
import pandas as pd
from page_numbers import REPO, prose_numbers, snippets, unquoted
from test_quoted_numbers import QUOTES as FRONT

from bandits.records.regret import ranking
from bandits.tools.memory_tables import at_step
from bandits.tools.table_cells import NAMES

PAGE = "docs/agents-compared.md"
MNIST = "results/mnist-bandit"
TEN_K = "results/mushroom/showdown-10k"
LATE_STEPS = 2000  # the 10,000-step table's last column: steps 8001-10,000

# The page's hand-written tables name two agents shorter than the generated ones, and
# BBB-LRT by its short name in the "next" column.
ROW_NAMES = {**NAMES, "dropout": "Dropout TS", "bootstrap": "Bootstrapped NN"}
NEXT_NAMES = {**ROW_NAMES, "bbb-lrt": "BBB-LRT"}


@lru_cache
def _ranking(run: str) -> pd.DataFrame:
    """The run's agents as ``bandits.run`` ranks them (``metrics.csv``)."""
    return ranking(pd.read_csv(REPO / run / "metrics.csv"))


def _next(text: str) -> str:
    """The ranking's "next" cell as the page writes it: no seed count, printed names."""
    text = re.sub(r" at \d+ seeds?$", "", str(text))
    agent = text.rsplit(" ", 1)[-1] if text else ""
    return text[: -len(agent)] + NEXT_NAMES[agent] if agent else ""


@lru_cache
def _late(run: str) -> pd.Series:
    """Per agent: the expected regret per step over the run's last ``LATE_STEPS`` steps
    (``phases.csv``), mean over the seeds (a tie such as 0.2375 rounds as its float does,
    as the front pages' late regrets of tests/test_quoted_numbers.py)."""
    steps = json.loads((REPO / run / "config.json").read_text())["steps"]
    t = at_step(REPO / run, steps, LATE_STEPS)
    return pd.Series({a: t[t["agent"] == a]["late"].mean() for a in t["agent"].unique()})


def _row(run: str, agent: str, late: bool = False) -> str:
    """An agent's row of the page's table of ``run``: mean (bold for the lowest), s.e., the
    paired difference to the next agent and, with ``late``, the late regret per step."""
    table = _ranking(run).reset_index(drop=True)
    i = table.index[table["agent"] == agent]
    assert len(i) == 1, (run, agent)
    r = table.loc[i[0]]
    mean = f"{r['mean']:.0f}"
    cells = [ROW_NAMES[agent], f"**{mean}**" if i[0] == 0 else mean, f"{r['s.e.']:.0f}",
             _next(r["next"])]
    if late:
        values = _late(run)
        cell = f"{values[agent]:.3f}"
        cells.append(f"**{cell}**" if agent == values.idxmin() else cell)
    return ("| " + " | ".join(cells) + " |").replace("|  |", "| |")


UNCERTAIN = ("bbb", "bbb-lrt", "neurallinear", "neuralucb", "neuralts", "linfullpost")
EPSILON_GREEDY = ("greedy", "eps1", "eps5")


def _late_ranges() -> str:
    """The late regret of the agents exploring by their uncertainty against that of the
    epsilon-greedy ones, dropout's and bootstrap's (steps 8001-10,000)."""
    late = _late(TEN_K)
    low, high = late[list(UNCERTAIN)], late[list(EPSILON_GREEDY)]
    assert low.max() < min(high.min(), late["dropout"], late["bootstrap"]), late
    return (f"pay {low.min():.2f}-{low.max():.2f} per step at the end, below every\n"
            f"epsilon-greedy agent ({high.min():.2f}-{high.max():.2f})")


QUOTES = [  # (the page, the text it must hold, built from the shipped files)
    *((PAGE, lambda agent=agent: _row(MNIST, agent))
      for agent in ("eps5", "greedy", "eps1", "bbb", "linucb", "neuralucb", "neurallinear",
                    "linfullpost", "neuralts", "uniform")),
    *((PAGE, lambda agent=agent: _row(TEN_K, agent, late=True))
      for agent in ("linfullpost", "bbb-lrt", "bbb", "neurallinear", "eps1", "neuralucb",
                    "neuralts", "dropout", "greedy", "eps5", "bootstrap", "linucb",
                    "uniform")),
    (PAGE, _late_ranges),
]

# Numbers of the page's prose that are not results: the years of the papers cited, the
# torch version, the reference code's default lambda, the runs' settings (steps, the
# windows of the tables' last columns) and the size of MNIST's training set.
SETTINGS = {PAGE: {"2010", "2018", "2020", "2021", "2.13", "0.001", "2000", "4000", "10,000",
                   "200", "8001", "60,000"}}

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES, whitespace=False)
test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    (PAGE,), lambda page: unquoted(page, snippets(page, FRONT, QUOTES), SETTINGS[page]),
    add="a check to QUOTES")
test_every_setting_is_one_of_the_pages_prose = page_numbers.settings_test(
    SETTINGS, lambda text: set(prose_numbers(text)))
