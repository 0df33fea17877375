"""``python -m bandits.sweep``: many runs of the simulator over a grid of settings, here or on
Ray. The command itself: :mod:`bandits.experiments.sweep`."""

from bandits.core.startup import Command

main, cli = Command("bandits.sweep", "bandits.experiments.sweep").entries()

if __name__ == "__main__":
    cli()
