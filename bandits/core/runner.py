"""What every command that trains, checkpoints and resumes shares: the bandit simulator
(``python -m bandits.run``) and the MNIST trainer (``python -m bandits.mnist``) each
declare a :class:`RunKind` and go through the same code for

* a run's **identity**: the fingerprint of the settings that decide its results
  (:meth:`RunKind.identity`), stored in its checkpoints and ``config.json``;
* **resuming**: the flags a ``--resume`` may add (checked once, by
  :meth:`RunKind.refuse_changes`), the run's own intact checkpoint
  (:meth:`RunKind.own_checkpoint`) and the check that a resumed run goes on, not back
  (:meth:`RunKind.check_continues`);
* the **output directory**: one run at a time in it (:meth:`RunKind.claimed`) and the
  files the command writes there (:attr:`RunKind.outputs`: what ``--overwrite``
  removes, and nothing else);
* **workers**: how many processes a run asks for (:func:`worker_count`);
* **divergence**: a training loss that became NaN or infinite (:class:`Diverged`, exit
  status :data:`DIVERGED_STATUS`).

What differs between the two stays with them: the simulator's step loop
(:mod:`bandits.simulator.loop`) and workers (:mod:`bandits.simulator.parallel`), the
trainer's epochs and batches (:mod:`bandits.mnist.training.train`).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bandits.core import checkpoint
from bandits.core.command_line import refuse_with_resume
from bandits.core.config import UsageError
from bandits.core.outputs import OutputDirError, claim_dir, release_dir
from bandits.core.processes import available_cores, requested_workers

DIVERGED_STATUS = 3  # the exit status of a run stopped by a non-finite training loss


class Diverged(Exception):
    """A run's training loss became NaN or infinite (exit status :data:`DIVERGED_STATUS`)."""


@dataclass(frozen=True)
class RunKind:
    """A kind of run: what its command's identity, resume and outputs are made of.

    Args:
        prog: The command (``bandits.run``), as ``python -m <prog>`` runs it.
        checkpoint_kind: The kind its checkpoints are written with
            (:func:`bandits.core.checkpoint.save`); another kind's are refused.
        resume_flags: The settings a ``--resume`` may add: they do not change the results.
        outputs: The files a run writes into its directory, as name patterns.
        not_settings: Names recorded in ``config.json`` that are not settings (besides
            ``out`` and ``overwrite``): left out of the identity.
        added_later: Settings added after runs were made and checkpointed, each with the
            value runs made before it had: at that value a setting is left out of the
            identity, so those runs keep theirs and resume.
        settings: The names of the settings, if a fixed list (a settings dataclass's
            fields); else every name the config holds counts.
        first_settings: With ``defaults``: the settings that count in the identity at any
            value (those the command had when this rule began; a frozen list, never
            extended). Every other setting counts only away from its default, so adding a
            setting with a default leaves every identity as it was, with nothing to list.
            None: every setting counts at any value.
        defaults: The settings' defaults (a settings dataclass's), for ``first_settings``.
    """

    prog: str
    checkpoint_kind: str
    resume_flags: frozenset[str]
    outputs: tuple[str, ...] = ()
    not_settings: frozenset[str] = frozenset()
    added_later: Mapping[str, Any] = field(default_factory=dict)
    settings: Callable[[], Iterable[str]] | None = None
    first_settings: frozenset[str] | None = None
    defaults: Callable[[], Mapping[str, Any]] | None = None

    def identity(self, config: Mapping[str, Any]) -> str:
        """A fingerprint of the settings that decide a run's results (all but the output
        directory and the flags allowed beside ``--resume``), from ``config.json``'s
        values. Two runs with the same identity produce the same bytes (at the same
        steps or epochs)."""
        skip = {*self.resume_flags, *self.not_settings, "out", "overwrite"}
        names = self.settings() if self.settings is not None else config.keys()
        defaults = self.defaults() if self.first_settings is not None and self.defaults \
            else {}
        first = self.first_settings if self.first_settings is not None else frozenset()
        kept = sorted(
            # a setting the config lacks is one its version did not have: runs made before
            # it was added keep their identity
            n for n in names if n not in skip and n in config
            # a setting added later counts only away from its default
            and not (n in self.added_later
                     and config.get(n, self.added_later[n]) == self.added_later[n])
            and not (n in defaults and n not in first
                     and plain(config[n]) == plain(defaults[n])))
        return checkpoint.fingerprint({n: config.get(n) for n in kept})

    def resume_command(self, out: Path | str, exact: bool = False) -> str:
        """The command that resumes the run in ``out`` (made in exact mode: with
        ``--exact``, without which the resume is refused)."""
        return shlex.join(["python", "-m", self.prog, "--resume", str(out),
                           *(["--exact"] if exact else [])])  # a folder with a space pastes

    def refuse_changes(self, given: Collection[str], cls: type | None = None) -> None:
        """One line naming the first setting of ``given`` that a ``--resume`` may not add
        (see :func:`bandits.core.command_line.refuse_with_resume`; ``cls``: the settings' dataclass,
        whose flags the line names)."""
        refuse_with_resume(given, self.resume_flags, cls)

    def own_checkpoint(self, out: Path) -> dict[str, Any]:
        """The state of ``out``'s checkpoint, which must be intact, of this kind and
        belong to the run ``out/config.json`` describes; else one line
        (:class:`UsageError`) saying which and what to do."""
        try:
            return checkpoint.load_own(out, self.checkpoint_kind, self.identity)
        except checkpoint.CheckpointError as e:
            raise UsageError(str(e)) from None

    @staticmethod
    def check_continues(flag: str, asked: int, done: int, unit: str, out: Path,
                        verb: str = "done") -> None:
        """A resumed run goes on from its checkpoint, never back: ``--<flag> asked`` must
        be at least the ``done`` steps (epochs) the checkpoint in ``out`` has."""
        if asked < done:
            raise UsageError(f"--{flag} {asked} is fewer than the {done} {unit} the checkpoint "
                             f"in {out} has {verb}; give --{flag} {done} or more")

    @contextlib.contextmanager
    def claimed(self, out: Path) -> Iterator[Path]:
        """``out`` claimed for this run (one run at a time in a directory; a claim of a
        live process is refused in one line) and given up however the run ends."""
        try:
            claim_dir(out, self.outputs)
        except OutputDirError as e:
            raise UsageError(str(e)) from None
        try:
            yield out
        finally:
            release_dir(out)


def worker_count(given: int | None, pieces: int, default: int | None = None) -> int:
    """The worker processes of a run of ``pieces`` independent parts: ``--workers``
    (``given``), else ``$BANDITS_WORKERS``, else ``default`` (the cores this process may
    use); never more than the parts. A bad ``$BANDITS_WORKERS`` is one line
    (:class:`UsageError`), checked in every case."""
    requested = requested_workers(given, available_cores() if default is None else default)
    return max(1, min(requested, pieces))


def plain(value: Any) -> Any:
    """``value`` as ``config.json`` gives it back (tuples as lists, paths as strings): what
    an identity compares, and safe to store in a checkpoint."""
    return json.loads(json.dumps(value, default=str))
