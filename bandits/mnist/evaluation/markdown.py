"""How the benchmark writes numbers and tables as text: one formatter for a number over
seeds (:func:`fmt`) and one renderer of a :class:`pandas.DataFrame` as a markdown pipe
table (:func:`pipe_table`), used by every table of a command and of ``report``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def mean_std(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def fmt(values: Sequence[float], digits: int = 2, spread: bool = True,
        bold: bool = False) -> str:
    """A number over seeds as text: ``mean +- std`` (the value alone for one value, or
    without ``spread``), ``digits`` after the point, in bold with ``bold``; ``-`` when
    there are none or one is missing (NaN)."""
    a = np.asarray(values, dtype=float)
    if not len(a) or np.isnan(a).any():
        return "-"
    m, sd = mean_std(a)
    text = f"{m:.{digits}f}" if len(a) == 1 or not spread else f"{m:.{digits}f} +- {sd:.{digits}f}"
    return f"**{text}**" if bold else text


def pipe_table(table: pd.DataFrame, align: str) -> str:
    """``table`` (its cells as text) as a markdown pipe table, its columns aligned by
    ``align``: one letter per column, ``l`` (left, the default), ``r`` (right) or ``c``
    (centred)."""
    rule = {"l": "---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(map(str, table.columns)) + " |",
             "|" + "|".join(rule[a] for a in align) + "|"]
    lines += ["| " + " | ".join(map(str, row)) + " |"
              for row in table.itertuples(index=False, name=None)]
    return "\n".join(lines)
