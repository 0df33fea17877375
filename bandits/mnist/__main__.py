"""``python -m bandits.mnist``: the command line of :mod:`bandits.mnist.cli`."""

from bandits.startup import interruptible

if __name__ == "__main__":  # before the slow imports: a Ctrl-C while starting is one line
    interruptible("bandits.mnist")

from bandits.mnist.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
