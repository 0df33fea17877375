"""``python -m bandits.run``: the bandit simulator: agents act, learn from a replay
buffer, and are scored by regret.

The command itself is :mod:`bandits.simulator.run`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.run")

import sys

from bandits.simulator.run import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
