"""``python -m bandits.bench``: the training step's speed, and whole commands' by their workers.

The command itself is :mod:`bandits.tools.bench`; this module and the console script
``bandits-bench`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is one line
from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.bench", "bandits.tools.bench").entries()

if __name__ == "__main__":
    cli()
