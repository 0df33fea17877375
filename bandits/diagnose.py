"""``python -m bandits.diagnose``: where a run's regret went.

The command itself is :mod:`bandits.analysis.diagnose`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.diagnose")

import sys

from bandits.analysis.diagnose import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
