"""``python -m bandits.confirm``: paired comparisons over seeds from run folders joined into
one table (the analysis of a pre-registered confirmation).

The command itself is :mod:`bandits.analysis.confirm`; this module and the console
script ``bandits-confirm`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is
one line from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.confirm", "bandits.analysis.confirm").entries()

if __name__ == "__main__":
    cli()
