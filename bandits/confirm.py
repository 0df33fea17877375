"""``python -m bandits.confirm``: paired comparisons over seeds from run folders joined into
one table (the analysis of a pre-registered confirmation).

The command itself is :mod:`bandits.analysis.confirm`; this module starts it (Ctrl-C one
line from the first moment)."""

if __name__ == "__main__":  # before the slow imports
    from bandits.core.startup import start

    start("bandits.confirm")

import sys

from bandits.analysis.confirm import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
