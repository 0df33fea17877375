"""The first thing an entry point does when run as a command, before its slow imports.

Importing torch, pandas and matplotlib takes seconds. A Ctrl-C in those seconds would
print a long ``KeyboardInterrupt`` traceback, and in a process started with SIGINT
ignored (a shell script's ``cmd &``) it would be lost: the command would run to its end.
:func:`interruptible` turns SIGINT on at once, whatever the starting shell did: until
the command's own handling takes over (its ``main``), an interrupt ends the process
with one line and exit status 130, before anything is written. This module imports
only the standard library's ``os`` and ``signal``.
"""

import os
import signal


def interruptible(prog: str) -> None:
    """Install the start-up SIGINT handler of the command ``prog`` (see the module
    docstring). Only the main thread can: elsewhere nothing changes."""

    def stop(signum, frame):  # noqa: ARG001 - the signal handler's signature
        os.write(2, f"{prog}: interrupted while starting; nothing was written\n".encode())
        os._exit(130)

    try:
        signal.signal(signal.SIGINT, stop)
    except ValueError:  # not the main thread
        pass

