"""``python -m bandits.confirm``: paired comparisons over seeds from run folders joined into
one table (the analysis of a pre-registered confirmation). The command itself:
:mod:`bandits.analysis.confirm`."""

from bandits.core.startup import Command

main, cli = Command("bandits.confirm", "bandits.analysis.confirm").entries()

if __name__ == "__main__":
    cli()
