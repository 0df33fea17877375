"""``python -m bandits.mnist``: the command line of :mod:`bandits.mnist.cli`."""

from bandits.mnist import cli

if __name__ == "__main__":
    cli()
