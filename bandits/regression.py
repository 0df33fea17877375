"""``python -m bandits.regression``: the toy 1-D regression with its uncertainty bands.

The command itself is :mod:`bandits.tools.regression`; this module and the console
script ``bandits-regression`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is
one line from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.regression", "bandits.tools.regression").entries()

if __name__ == "__main__":
    cli()
