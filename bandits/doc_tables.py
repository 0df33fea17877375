"""``python -m bandits.doc_tables``: the result tables of the README and the docs, written from the
shipped result files (``--check``: that none has drifted).

The command itself is :mod:`bandits.tools.doc_tables`; this module starts it (for the
commands that import slowly, after turning Ctrl-C on and pinning the kernels)."""

import sys

from bandits.tools.doc_tables import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
