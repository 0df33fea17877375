"""``python -m bandits.same_bytes``: the shipped results' bytes on an emulated second
processor (a command's bytes checked without a second machine).

The command itself is :mod:`bandits.tools.same_bytes`; this module starts it (after turning
Ctrl-C on)."""

if __name__ == "__main__":  # before the imports: Ctrl-C is one line
    from bandits.core.startup import start

    start("bandits.same_bytes")

import sys

from bandits.tools.same_bytes import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
