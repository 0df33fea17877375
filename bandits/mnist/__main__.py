"""``python -m bandits.mnist``: the command line of :mod:`bandits.mnist.cli`."""

from bandits.core.startup import start

if __name__ == "__main__":  # before the slow imports: Ctrl-C is one line, the kernels are pinned
    start("bandits.mnist")

from bandits.mnist.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
