"""Worker processes: how many cores this process may use, and the initialiser of a pool
worker that Ctrl-C and a killed parent are handled for."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def sigint_handler(handler: Any) -> Iterator[None]:
    """Inside, SIGINT goes to ``handler`` (a function, or ``signal.SIG_IGN``); the
    previous handler comes back on leaving. Only the main thread can set one: elsewhere
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def ctrl_c_on() -> contextlib.AbstractContextManager[None]:
    """Inside, Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` in the main thread even in a
    process started with SIGINT ignored (a shell script starts a command with ``&`` so):
    ``kill -INT`` then stops the work at a checkpoint, as it stops ``bandits.run``."""
    return sigint_handler(signal.default_int_handler)


def available_cores() -> int:
    """The cores this process may run on (its affinity), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def requested_workers(given: int | None, default: int) -> int:
    """The workers asked for: ``given`` (a ``--workers`` flag), else
    ``$BANDITS_WORKERS`` when it is a positive integer, else ``default``."""
    if given is not None:
        return given
    env = os.environ.get("BANDITS_WORKERS", "")
    return int(env) if env.isdigit() and int(env) > 0 else default


_stop: Any = None  # in a pool worker: the parent's stop event (set on Ctrl-C)


def pool_worker_init(parent: int, stop: Any = None) -> None:
    """In each pool worker: a session of its own, so that a terminal's Ctrl-C reaches
    only the parent, which passes it on once (:func:`interrupt_workers`: a task stops at
    a checkpoint; an idle worker ignores it: SIGINT is ignored until a task turns it
    back on), and the worker ends when the parent is killed (no orphan keeps writing
    into a directory a rerun would take up). ``stop``, a ``multiprocessing`` event the
    parent sets on Ctrl-C, is what :func:`parent_stopped` reads."""
    global _stop
    _stop = stop
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def parent_stopped() -> bool:
    """In a pool worker: whether the parent was interrupted. A task checks it once its
    own Ctrl-C handling is on: the pool hands out queued tasks that cannot be cancelled,
    and a Ctrl-C that came while SIGINT was still ignored is lost."""
    return _stop is not None and _stop.is_set()


def interrupt_workers(pool: Any, stop: Any) -> None:
    """Ctrl-C in the parent of ``pool`` (a ``ProcessPoolExecutor`` whose workers were
    started by :func:`pool_worker_init` with ``stop``): set ``stop``, then pass SIGINT
    once to every worker."""
    stop.set()
    for proc in list(getattr(pool, "_processes", {}).values()):
        try:
            os.kill(proc.pid, signal.SIGINT)
        except OSError:
            pass
