"""``python -m bandits.bench``: the training step's speed, and whole commands' by their
workers. The command itself: :mod:`bandits.tools.bench`."""

from bandits.core.startup import Command

main, cli = Command("bandits.bench", "bandits.tools.bench").entries()

if __name__ == "__main__":
    cli()
