"""``python -m bandits.regression``: the toy 1-D regression with its uncertainty bands.

The command itself is :mod:`bandits.tools.regression`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.regression")

import sys

from bandits.tools.regression import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
