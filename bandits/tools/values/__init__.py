"""The generated values of the pages' prose (:mod:`bandits.tools.page_values`), by the
pages they sit in: each module's ``VALUES`` maps a value's name to the function of the
repository's root that writes it from the shipped files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bandits.tools.values import speed

VALUES: dict[str, Callable[[Path], str]] = {**speed.VALUES}
