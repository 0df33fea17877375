"""``python -m bandits.diagnose``: where a run's regret went. The command itself:
:mod:`bandits.analysis.diagnose`."""

from bandits.core.startup import Command

main, cli = Command("bandits.diagnose", "bandits.analysis.diagnose").entries()

if __name__ == "__main__":
    cli()
