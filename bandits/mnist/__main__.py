"""``python -m bandits.mnist``: the command line of :mod:`bandits.mnist.cli`."""

from bandits.mnist.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
