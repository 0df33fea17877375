"""``python -m bandits.bench``: the training step's speed, and whole commands' by their workers.

The command itself is :mod:`bandits.tools.bench`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.bench")

import sys

from bandits.tools.bench import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
