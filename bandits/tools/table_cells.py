"""Cells shared by the generated result tables (:mod:`bandits.tools.doc_tables`): the agents'
names as the tables print them, bold for the best entry, the ranking's "next" column in
those names, and the checked reading of a shipped CSV file (:func:`read_table`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

NAMES = {"linfullpost": "LinFullPost", "bbb-lrt": "BBB, local reparameterisation",
         "bbb": "BBB", "eps1": "1 % greedy", "neurallinear": "NeuralLinear",
         "dropout": "Dropout TS (p 0.2)", "greedy": "greedy", "neuralucb": "NeuralUCB",
         "linucb": "LinUCB", "eps5": "5 % greedy", "bootstrap": "Bootstrapped NN (5 heads)",
         "neuralts": "NeuralTS", "uniform": "uniform"}


def bold_if(text: str, flag: bool) -> str:
    return f"**{text}**" if flag else text


def next_label(text: str) -> str:
    """The ranking's paired difference to the next agent (:func:`bandits.records.regret.ranking`),
    without its seed count and with the agent's printed name."""
    nxt = re.sub(r" at \d+ seeds?$", "", str(text))
    for agent, name in sorted(NAMES.items(), key=lambda kv: -len(kv[0])):
        if nxt.endswith(f" {agent}"):
            return nxt[: -len(agent)] + name
    return nxt


class TableError(ValueError):
    """A shipped file a table is written from is missing, cut or not what it should be."""


def read_table(path: Path, columns: Sequence[str], complete: Sequence[str] = ()
               ) -> pd.DataFrame:
    """The CSV file ``path`` with ``columns``, none of ``complete`` holding a missing value.

    Raises:
        TableError: The file is missing or unreadable, lacks a column, or a value of
            ``complete`` is missing (a NaN, a cut row).
    """
    try:
        t = pd.read_csv(path)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise TableError(f"{path}: cannot be read ({str(e).splitlines()[0]})") from None
    missing = [c for c in columns if c not in t.columns]
    if missing:
        raise TableError(f"{path}: no column {missing[0]!r}; is it the file this table is "
                         "written from?")
    for c in complete:
        bad = t[c].isna() if t[c].dtype != object else pd.to_numeric(t[c], errors="coerce").isna()
        if bad.any():
            raise TableError(f"{path}: column {c!r} has a missing or non-numeric value in "
                             f"row {int(bad.to_numpy().argmax()) + 2}")
    return t
