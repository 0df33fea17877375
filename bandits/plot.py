"""``python -m bandits.plot``: regret plots, redrawn from a run's ``metrics.csv``.

The command itself is :mod:`bandits.analysis.plot`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.plot")

import sys

from bandits.analysis.plot import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
