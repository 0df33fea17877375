"""Cells shared by the generated result tables (:mod:`bandits.tools.doc_tables`): the agents'
names as the tables print them, bold for the best entry, a mean and its standard error
(:func:`mean_se`, the one way a table prints them), the ranking's "next" column in those
names, and the checked reading of a shipped CSV file that is not a run's
(:func:`read_table`; a run's files: :mod:`bandits.records.reader`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bandits.records.tables import TableError

NAMES = {"linfullpost": "LinFullPost", "bbb-lrt": "BBB, local reparameterisation",
         "bbb": "BBB", "eps1": "1 % greedy", "neurallinear": "NeuralLinear",
         "dropout": "Dropout TS (p 0.2)", "greedy": "greedy", "neuralucb": "NeuralUCB",
         "linucb": "LinUCB", "eps5": "5 % greedy", "bootstrap": "Bootstrapped NN (5 heads)",
         "neuralts": "NeuralTS", "uniform": "uniform"}


def bold_if(text: str, flag: bool) -> str:
    return f"**{text}**" if flag else text


def se_text(se: float, digits: int) -> str:
    """A standard error to ``digits`` decimals, rounded to the nearest (399.66 is 400,
    never 399): every s.e. a generated table prints is this text."""
    return f"{se:.{digits}f}"


def mean_se(mean: float, se: float, digits: int, bold: bool = False, sign: str = "") -> str:
    """``mean +- se``, both rounded to ``digits`` decimals (:func:`se_text`), the mean in
    bold where ``bold``; ``sign="+"`` prints the mean's sign."""
    return f"{bold_if(f'{mean:{sign}.{digits}f}', bold)} +- {se_text(se, digits)}"


def next_label(text: str) -> str:
    """The ranking's paired difference to the next agent (:func:`bandits.records.regret.ranking`),
    without its seed count and with the agent's printed name."""
    nxt = re.sub(r" at \d+ seeds?$", "", str(text))
    for agent, name in sorted(NAMES.items(), key=lambda kv: -len(kv[0])):
        if nxt.endswith(f" {agent}"):
            return nxt[: -len(agent)] + name
    return nxt


def read_table(path: Path, columns: Sequence[str], complete: Sequence[str] = ()
               ) -> pd.DataFrame:
    """The CSV file ``path`` with ``columns``, each of ``complete`` a finite number.

    Raises:
        TableError: The file is missing or unreadable, lacks a column, or a value of
            ``complete`` is missing (a NaN, a cut row), not a number or not finite.
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
        values = pd.to_numeric(t[c], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            raise TableError(f"{path}: line {int(bad.argmax()) + 2}: {c} is "
                             f"{t[c].iloc[int(bad.argmax())]!r}, not a finite number")
        t[c] = values
    return t
