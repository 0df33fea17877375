"""Worker processes: how many cores this process may use, and the initialiser of a pool
worker that Ctrl-C and a killed parent are handled for."""

from __future__ import annotations

import os
import signal
import threading
import time


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


def pool_worker_init(parent: int) -> None:
    """In each pool worker: a session of its own, so that a terminal's Ctrl-C reaches
    only the parent, which passes it on once (a task stops at a checkpoint; an idle
    worker ignores it: SIGINT is ignored until a task turns it back on), and the worker
    ends when the parent is killed (no orphan keeps writing into a directory a rerun
    would take up)."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
