"""``python -m bandits.regression``: the toy 1-D regression with its uncertainty bands. The
command itself: :mod:`bandits.tools.regression`."""

from bandits.core.startup import Command

main, cli = Command("bandits.regression", "bandits.tools.regression").entries()

if __name__ == "__main__":
    cli()
