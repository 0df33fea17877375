"""The first thing an entry point does when run as a command, before its slow imports.

Importing torch, pandas and matplotlib takes seconds. A Ctrl-C in those seconds would
print a long ``KeyboardInterrupt`` traceback, and in a process started with SIGINT
ignored (a shell script's ``cmd &``) it would be lost: the command would run to its end.
:func:`interruptible` turns SIGINT on at once, whatever the starting shell did: until
the command's own handling takes over (its ``main``), an interrupt ends the process
with one line and exit status 130, before anything is written.

SIGTERM and SIGHUP (``kill``, a closed terminal) end the command as they always did,
killed by that signal (a shell reports 128 + its number; the workers end with their
parent), but first say so in one line. A signal the command was started with ignored
(``nohup`` ignores SIGHUP) stays ignored. This module imports only the standard
library (and :mod:`bandits.core.kernels` and :mod:`bandits.core.version`, which do too).
:func:`start` does both things an entry point does first: the signals, and the kernels
pinned before torch loads. A command started with ``--version`` or ``--help`` alone first
answers at once, without its slow imports (:func:`stored_help`).
"""

import importlib
import os
import signal
import sys
from collections.abc import Callable, Sequence

from bandits.core import kernels
from bandits.core.config import UsageError
from bandits.core.version import VERSION_LINE

STOPPING = (signal.SIGTERM, signal.SIGHUP)
"""The signals that end a command with one line saying so (:func:`interruptible`)."""

_ON_STOP: list = []  # what a stopping signal does before the command ends (on_stop)
_BEGUN = [False]  # whether the command's own work began (begun): then "nothing was
#                   written" would be wrong for a Ctrl-C that comes as it ends


def begun() -> None:
    """Say that the command's own work has begun (its Ctrl-C handling took over, see
    :func:`bandits.core.processes.ctrl_c_on`): a Ctrl-C after that handling has ended, as
    the command exits, says its outputs are whole instead of "nothing was written"."""
    _BEGUN[0] = True


def on_stop(undo) -> None:
    """Call ``undo()`` when SIGTERM or SIGHUP ends the command (:func:`interruptible`):
    for example, give up an output folder's claim so that no lock file stays behind.
    Once per callable; its errors are ignored (the command is ending)."""
    if undo not in _ON_STOP:
        _ON_STOP.append(undo)


class Command:
    """One command of the project: its name ``prog`` (``bandits.run``) and the module whose
    ``main(argv)`` is the command (``bandits.simulator.run``), imported only when the
    command runs. Every entry module (``python -m bandits.run``) and console script
    (``bandits-run``, ``[project.scripts]``) is one of these::

        main, cli = Command("bandits.run", "bandits.simulator.run").entries()

    ``main(argv)`` runs the command in this process as it is (for scripts and tests), a
    bad flag or a data file missing, malformed or changed said in one line (exit status 2)
    as every command says it (:func:`handled`);
    ``cli()`` is the command started from a shell: :func:`start` first (signals, kernels,
    before torch loads), then ``main`` with the process's arguments, exiting with its status;
    a first argument ``--version`` is answered before the command's module loads (as
    argparse would answer it: every command has ``--version``).
    """

    def __init__(self, prog: str, module: str) -> None:
        self.prog = prog
        self.module = module

    def main(self, argv: Sequence[str] | None = None) -> int:
        return handled(self.prog, importlib.import_module(self.module).main, argv)

    def cli(self) -> None:
        start(self.prog)
        if sys.argv[1:2] == ["--version"]:  # no torch for it: the answer is known here
            print(VERSION_LINE)
            sys.exit(0)
        if sys.argv[1:] in (["--help"], ["-h"]) and (text := stored_help(self.prog)):
            sys.stdout.write(text)  # no torch for it either: the parser's text, stored
            sys.exit(0)
        sys.exit(self.main())

    def entries(self):
        """``(main, cli)``: the two ways in, for the entry module's namespace."""
        return self.main, self.cli


HELP = os.path.join(os.path.dirname(__file__), "help")
"""The ``--help`` text of each command, ``PROG.txt``, as its parser prints it 80 columns
wide: written and checked against the parsers by :mod:`bandits.tools.help_text`, so that
``--help`` alone answers at once, as ``--version`` does, without the command's imports."""


def stored_help(prog: str) -> str | None:
    """The stored ``--help`` text of the command ``prog``, or None where none is stored."""
    try:
        with open(os.path.join(HELP, f"{prog}.txt"), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def handled(prog: str, main: Callable[[Sequence[str] | None], int],
            argv: Sequence[str] | None = None) -> int:
    """``main(argv)``, the command ``prog``'s body, with the one handler of bad input for
    every command: a bad flag (:class:`bandits.core.config.UsageError`, as the parser of
    :mod:`bandits.core.command_line` raises for an unknown flag or a value of the wrong
    type) or a data file missing, malformed or changed (``bandits.core.data.DataError``,
    its message naming the file and what is wrong) is one line, exit status 2; the
    command's output folder, claimed or made, is given up on the way out
    (:func:`bandits.core.command.writing`)."""
    try:
        return main(argv)
    except UsageError as e:
        return refused(prog, e)
    except Exception as e:
        # not imported here (it loads urllib: --version stays quick); an error is a
        # DataError only where the module that defines it was loaded
        data = sys.modules.get("bandits.core.data")
        if data is None or not isinstance(e, data.DataError):
            raise
        return refused(prog, e)


def refused(prog: str, error: Exception) -> int:
    """Say ``error`` in one line as the command ``prog``'s and give its exit status, 2."""
    print(f"{prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
    return 2


def start(prog: str) -> None:
    """What the command ``prog`` does first, before its slow imports: its signal handlers
    (:func:`interruptible`), OpenMP's passive wait (unless ``OMP_WAIT_POLICY`` is set)
    and, in exact mode, the math kernels pinned
    (:func:`bandits.core.kernels.pin`); a malformed ``BANDITS_EXACT`` is one line, exit 2."""
    interruptible(prog)
    # threads waiting for work sleep instead of spinning: on a busy machine two spinning
    # threads take turns with the other processes for the cores (one MNIST epoch several
    # times slower; python -m bandits.bench --threads-under-load); the bytes are the same
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        kernels.pin()
    except ValueError as e:  # BANDITS_EXACT=maybe: one line, before anything is written
        os.write(2, f"{prog}: error: {e}\n".encode())
        os._exit(2)


def interruptible(prog: str) -> None:
    """Install the start-up SIGINT handler of the command ``prog`` and its SIGTERM and
    SIGHUP handlers (see the module docstring). Only the main thread can: elsewhere
    nothing changes."""

    def stop(signum, frame):  # noqa: ARG001 - the signal handler's signature
        said = ("interrupted as it ended; every output written is whole" if _BEGUN[0]
                else "interrupted while starting; nothing was written")
        os.write(2, f"{prog}: {said}\n".encode())
        os._exit(130)

    def stopped(signum, frame):  # noqa: ARG001 - the signal handler's signature
        try:
            os.write(2, f"{prog}: stopped by signal {signal.Signals(signum).name}\n".encode())
        except OSError:  # no terminal left to say it on (SIGHUP)
            pass
        for undo in reversed(_ON_STOP):
            try:
                undo()
            except Exception:  # noqa: BLE001 - ending anyway: nothing more to do
                pass
        signal.signal(signum, signal.SIG_DFL)  # end as the signal itself would have
        signal.raise_signal(signum)
        os._exit(128 + signum)  # not reached

    try:
        signal.signal(signal.SIGINT, stop)
        for sig in STOPPING:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, stopped)
    except ValueError:  # not the main thread
        pass
