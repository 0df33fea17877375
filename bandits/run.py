"""``python -m bandits.run``: the bandit simulator: agents act, learn from a replay
buffer, and are scored by regret.

The command itself is :mod:`bandits.simulator.run`; this module and the console script
``bandits-run`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is one line from
the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.run", "bandits.simulator.run").entries()

if __name__ == "__main__":
    cli()
