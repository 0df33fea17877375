"""``python -m bandits.run``: the bandit simulator: agents act, learn from a replay buffer, and
are scored by regret. The command itself: :mod:`bandits.simulator.run`."""

from bandits.core.startup import Command

main, cli = Command("bandits.run", "bandits.simulator.run").entries()

if __name__ == "__main__":
    cli()
