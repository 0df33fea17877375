"""``python -m bandits.plot``: regret plots, redrawn from a run's ``metrics.csv``.

The command itself is :mod:`bandits.analysis.plot`; this module and the console script
``bandits-plot`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is one line
from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.plot", "bandits.analysis.plot").entries()

if __name__ == "__main__":
    cli()
