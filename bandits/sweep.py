"""``python -m bandits.sweep``: many runs of the simulator over a grid of settings, here or on Ray.

The command itself is :mod:`bandits.experiments.sweep`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.sweep")

import sys

from bandits.experiments.sweep import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
