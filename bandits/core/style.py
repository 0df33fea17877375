"""One look for every figure the project draws: the regret curves, the diagnosis, the
sweeps, the toy regression and the MNIST figures. :data:`STYLE` (sizes, fonts, a
colour-blind-safe cycle, a light grid, no frame around legends) is applied around each
drawing by :func:`styled`, so a user's own figures keep their own settings."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn
    from matplotlib.typing import RcKeyType

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
             "#000000")
"""The Okabe-Ito palette (blue first), told apart by colour-blind readers: the colour
cycle of every figure whose lines are not agents (an agent takes its spec's colour)."""

DPI = 150
"""Pixels per inch of every PNG: the sizes below, in inches, read at the width the pages
show them (about 6-10 inches)."""

STYLE: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "figure.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "savefig.dpi": DPI,
}
"""matplotlib settings shared by every figure (the colour cycle is added by
:func:`styled`)."""

VERSION = 2
"""The drawing rules' version: raised whenever a figure's look or content changes (a
statistic, a band, a colour, a label), so that figures drawn before carry an older
:data:`STAMP` and :mod:`bandits.tools.figures` tells them apart."""


def _digest() -> str:
    import hashlib
    import json

    text = json.dumps([VERSION, DPI, OKABE_ITO, sorted(STYLE.items())], default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


STAMP = f"bbb-bandits figure style {VERSION} ({_digest()})"
"""What every figure the project writes carries in its metadata (PNG text ``Style``, PDF
``Keywords``; :func:`bandits.core.files.save_figure`): the rules it was drawn by."""

F = TypeVar("F", bound=Callable[..., Any])


def styled(draw: F) -> F:
    """``draw`` run under :data:`STYLE` (``matplotlib.rc_context``)."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import matplotlib
        from cycler import cycler

        with matplotlib.rc_context({**STYLE, "axes.prop_cycle": cycler(color=OKABE_ITO)}):
            return draw(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
