"""``python -m bandits.sweep``: many runs of the simulator over a grid of settings, here or on Ray.

The command itself is :mod:`bandits.experiments.sweep`; this module and the console
script ``bandits-sweep`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is one
line from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.sweep", "bandits.experiments.sweep").entries()

if __name__ == "__main__":
    cli()
