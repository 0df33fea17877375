"""Worker processes, in one place: how many cores this process may use, the one pool
that runs jobs in worker processes (:func:`run_jobs`: the sweep's local backend and
``bandits.mnist --workers``), and what every kind of worker shares.

What every worker gets: Ctrl-C passed on once to each worker (which stops at a
checkpoint), a worker that ends when its parent dies (no orphan keeps writing into a
directory a rerun would take up), a dead worker told in one line, and never a hang.

A pool worker (:func:`pool_worker_init`) runs in a session of its own, with SIGINT
ignored until a job turns it on, and watches its parent. ``bandits.simulator.parallel`` runs its
workers as ``python -m bandits.run`` subprocesses instead (its docstring says why) and
shares :func:`die_with_parent`, :func:`signal_each` and :func:`how_it_ended`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from bandits.core import startup
from bandits.core.config import UsageError


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
    startup.begun()
    return sigint_handler(signal.default_int_handler)


def stop_on_ctrl_c(prog: str, body: Callable[[], int]) -> int:
    """``body()``, the work of the command ``prog`` (its exit status), with Ctrl-C on
    (:func:`ctrl_c_on`, so also in a process started with SIGINT ignored): a Ctrl-C ends
    it with one line on stderr and exit status 130 instead of a traceback (every output
    is written whole or not at all: :func:`bandits.core.files.write_atomic`)."""
    try:
        with ctrl_c_on():
            return body()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; every output written so far is whole", file=sys.stderr)
        return 130


def available_cores() -> int:
    """The cores this process may run on (its affinity), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


MAX_WORKERS = 1024  # as --workers allows


def requested_workers(given: int | None, default: int) -> int:
    """The workers asked for: ``given`` (a ``--workers`` flag), else
    ``$BANDITS_WORKERS`` (unset or empty: not given), else ``default``.

    Raises:
        UsageError: ``$BANDITS_WORKERS`` is not a whole number from 1 to 1024 (one line
            naming it and what it must be), whether or not ``--workers`` is given: a
            setting that is wrong is said, not silently passed over.
    """
    env = os.environ.get("BANDITS_WORKERS", "").strip()
    if env and (not env.isdecimal() or not 1 <= int(env) <= MAX_WORKERS):
        raise UsageError(f"environment variable BANDITS_WORKERS={env!r} must be a whole "
                         f"number of worker processes from 1 to {MAX_WORKERS:,}; set it so, "
                         "or unset it to use the default")
    if given is not None:
        return given
    return int(env) if env else default


# ------------------------------------------------------------ shared by every worker


def signal_each(pids: Iterable[int], sig: int = signal.SIGINT) -> None:
    """Send ``sig`` once to each process of ``pids`` (one already gone is skipped): how a
    parent passes Ctrl-C on to its workers, which run in sessions of their own and so do
    not get a terminal's Ctrl-C themselves."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """The parent watch of a subprocess worker (``preexec_fn`` of ``subprocess.Popen``):
    the kernel kills it when its parent dies (Linux; elsewhere nothing changes). A pool
    worker watches its parent itself (:func:`pool_worker_init`)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def how_it_ended(returncode: int) -> str:
    """A worker's exit status in words, for the line that says it died: ``signal 9``,
    ``exit status 1``."""
    return f"signal {-returncode}" if returncode < 0 else f"exit status {returncode}"


def one_line(e: BaseException) -> str:
    """An error (a job's, or a dead worker's ``BrokenProcessPool``) as one line: its type
    and the last line of its message."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[-1] if text else ''}"


# ------------------------------------------------------------------- the pool


_stop: Any = None  # in a pool worker: the parent's stop event (set on Ctrl-C)


def _unraisable(info: Any) -> None:
    """A pool worker's ``sys.unraisablehook``: a Ctrl-C passed on by the parent that lands
    in a callback Python cannot raise from (an import lock's, a weakref's) prints no
    traceback; the parent's stop event (:func:`parent_stopped`) still ends the task at
    its next checkpoint, and the parent says so in one line. Anything else is reported
    as Python reports it."""
    if not issubclass(info.exc_type, KeyboardInterrupt):
        sys.__unraisablehook__(info)


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
    sys.unraisablehook = _unraisable

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
    signal_each(proc.pid for proc in list(getattr(pool, "_processes", {}).values()))


@dataclasses.dataclass
class Ended:
    """How one job of :func:`run_jobs` ended."""

    index: int  # its place in the list of jobs
    job: Any
    result: Any = None  # what the task returned
    error: BaseException | None = None  # what it raised; BrokenProcessPool: its worker died
    tries: int = 1  # the times it was handed to a worker

    @property
    def died(self) -> bool:
        """Whether its worker died (killed, or ``os._exit``) rather than the task raising."""
        return isinstance(self.error, BrokenProcessPool)


class JobsInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_jobs`, raised once every worker has stopped. ``ended``:
    the jobs that ended, before or after the Ctrl-C (each stopped where its own Ctrl-C
    handling put it), in the jobs' order; the jobs that never started are left out."""

    def __init__(self, ended: list[Ended]) -> None:
        super().__init__()
        self.ended = ended


def run_jobs(task: Callable[[Any], Any], jobs: Sequence[Any], workers: int,
             retries: int = 0, on_end: Callable[[Ended], None] | None = None,
             on_running: Callable[[int], None] | None = None) -> list[Ended]:
    """``task(job)`` for every job of ``jobs`` in a pool of ``workers`` fresh processes
    (spawned: no forked torch state; started by :func:`pool_worker_init`); how each job
    ended (:class:`Ended`), in the jobs' order. ``task`` and the jobs must pickle (a
    module-level function, or a ``functools.partial`` of one).

    A job that raises an ``Exception``, or whose worker dies, runs again in a new pool up
    to ``retries`` times; a dead worker breaks its pool, so the jobs running beside it
    fail too and count a try as well (the pool stops their workers, never a hang). A job
    that failed its last try ends with its error: nothing is raised for it here.
    ``on_end`` is called as each job ends for good, ``on_running`` with the number of
    jobs running whenever it changes; neither after a Ctrl-C.

    A task turns Ctrl-C on itself (SIGINT is ignored in an idle worker) and, once on,
    checks :func:`parent_stopped`. On Ctrl-C the jobs not handed to a worker are
    cancelled, SIGINT is passed on once to every worker (:func:`interrupt_workers`),
    the running jobs are waited for (a second Ctrl-C is ignored meanwhile: the workers
    are stopping) and :class:`JobsInterrupted` is raised."""
    # a killed worker leaves a semaphore behind, which multiprocessing's resource tracker
    # (started with this interpreter's -W options) would report on stderr after the one
    # line that says what happened
    quiet = "ignore:resource_tracker:UserWarning"
    if quiet not in sys.warnoptions:
        sys.warnoptions.append(quiet)
    return _Jobs(task, jobs, workers, retries, on_end, on_running).run()


class _Jobs:
    """The state of one :func:`run_jobs`: the tries of every job and how each ended."""

    def __init__(self, task: Callable[[Any], Any], jobs: Sequence[Any], workers: int,
                 retries: int, on_end: Callable[[Ended], None] | None,
                 on_running: Callable[[int], None] | None) -> None:
        self.task, self.jobs, self.workers, self.retries = task, jobs, workers, retries
        self.on_end = on_end or (lambda ended: None)
        self.on_running = on_running or (lambda n: None)
        self.tries = [0] * len(jobs)  # the times each job was handed to a pool
        self.ended: dict[int, Ended] = {}

    def run(self) -> list[Ended]:
        ctx = multiprocessing.get_context("spawn")
        todo = list(range(len(self.jobs)))
        while todo:  # one pool per round: a dead worker leaves its pool broken
            stop = ctx.Event()
            futures: dict[Future, int] = {}
            with ProcessPoolExecutor(self.workers, mp_context=ctx,
                                     initializer=pool_worker_init,
                                     initargs=(os.getpid(), stop)) as ex:
                try:
                    for i in todo:
                        futures[ex.submit(self.task, self.jobs[i])] = i
                        self.tries[i] += 1
                    todo = self._follow(futures)
                except KeyboardInterrupt:
                    for f in futures:
                        f.cancel()  # the jobs not handed to a worker yet
                    interrupt_workers(ex, stop)  # the queued ones never start
                    with sigint_handler(signal.SIG_IGN):
                        wait([f for f in futures if not f.cancelled()])
                    for f, i in futures.items():
                        if i not in self.ended and not f.cancelled():
                            self._end(f, i)
                    raise JobsInterrupted(self._in_order()) from None
        return self._in_order()

    def _follow(self, futures: dict[Future, int]) -> list[int]:
        """Record one pool's jobs as they end; returns the failed ones with tries left."""
        again: list[int] = []
        pending = set(futures)
        self.on_running(min(self.workers, len(pending)))
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                i = futures[f]
                if isinstance(f.exception(), Exception) and self.tries[i] <= self.retries:
                    again.append(i)
                    continue
                self.on_end(self._end(f, i))
            self.on_running(min(self.workers, len(pending)))
        return again

    def _end(self, f: Future, i: int) -> Ended:
        error = f.exception()
        self.ended[i] = Ended(i, self.jobs[i], None if error is not None else f.result(),
                              error, self.tries[i])
        return self.ended[i]

    def _in_order(self) -> list[Ended]:
        return [self.ended[i] for i in sorted(self.ended)]
