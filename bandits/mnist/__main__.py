"""``python -m bandits.mnist`` and the console script ``bandits-mnist``: the command line of
:mod:`bandits.mnist.cli`."""

from bandits.mnist import COMMAND

cli = COMMAND.cli

if __name__ == "__main__":
    cli()
