"""``python -m bandits.gradient_variance``: the variance of each estimator's gradient, per layer.

The command itself is :mod:`bandits.tools.gradient_variance`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    from bandits.core.startup import start

    start("bandits.gradient_variance")

import sys

from bandits.tools.gradient_variance import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
