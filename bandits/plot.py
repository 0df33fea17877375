"""``python -m bandits.plot``: regret plots, redrawn from a run's ``metrics.csv``. The command
itself: :mod:`bandits.analysis.plot`."""

from bandits.core.startup import Command

main, cli = Command("bandits.plot", "bandits.analysis.plot").entries()

if __name__ == "__main__":
    cli()
