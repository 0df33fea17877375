"""What a resumed bandit run may change and how it is checked: the flags allowed beside
``--resume`` (:data:`RESUME_FLAGS`), a run's identity (the fingerprint of the settings
that decide its results) and the settings of the run a checkpoint continues."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import envs
from bandits import checkpoint
from bandits.checkpoint import CheckpointError
from bandits.config import UsageError, refuse_with_resume
from bandits.config import given_flags as flags_named
from bandits.settings import CHECKPOINT_KIND, Config, build_parser, plain, validate

# flags that may be given beside --resume: they do not change the results
RESUME_FLAGS = ("resume", "steps", "checkpoint_every", "data_dir", "workers", "no_progress",
                "log_y", "progress_file")


def given_flags(argv: Sequence[str] | None) -> set[str]:
    """The settings named on the command line (not filled by a default)."""
    return flags_named(build_parser, argv)


# settings added after runs were made and checkpointed, each with the value runs made
# before it had (before --normalize, the data set's own features; before --order,
# examples drawn with replacement): at that value it is
# left out of the identity, so those runs keep theirs and resume. A setting goes here when
# it is added, never later (a run that recorded it at its default would change identity).
ADDED_LATER: dict[str, Any] = {"normalize": "none", "order": "random", "encoding": "onehot",
                               "optimizer": "adam", "fit": "steps", "fit_tolerance": 1e-3,
                               "weight_decay_per_datum": False, "train_always_until": 0}


def identity(config: dict[str, Any]) -> str:
    """A fingerprint of the settings that decide a run's results (all but the output
    directory and the flags allowed beside ``--resume``), from ``config.json``'s values.
    Two runs with the same identity and steps produce the same bytes."""
    names = sorted(f.name for f in dataclasses.fields(Config)
                   if f.name not in {*RESUME_FLAGS, "out", "overwrite"}
                   # a setting added later counts only away from its default, so that a
                   # run made before it keeps its identity and resumes
                   and not (f.name in ADDED_LATER
                            and config.get(f.name, ADDED_LATER[f.name]) == ADDED_LATER[f.name]))
    return checkpoint.fingerprint(plain({k: config.get(k) for k in names}))


def resume_flags(argv: Sequence[str] | None) -> tuple[dict[str, Any], set[str]]:
    """The parsed command line of a ``--resume`` and the flags given on it; one line
    naming the first flag that would change the results."""
    args = vars(build_parser().parse_args(argv))
    given = given_flags(argv)
    refuse_with_resume(given, RESUME_FLAGS)
    return args, given


def resume_config(out: Path, changes: dict[str, Any]) -> tuple[Config, dict]:
    """The config of the run to resume in ``out`` (its config.json, with ``changes``:
    --steps and the other flags of :data:`RESUME_FLAGS`) and what
    :func:`bandits.loop.simulate` needs to continue it."""
    refuse_with_resume(changes, RESUME_FLAGS)
    try:  # the checkpoint must be this directory's own, and intact
        state = checkpoint.load_own(out, CHECKPOINT_KIND, identity)
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    saved = state["config"]  # config.json as it was when the checkpoint was written
    settings = {f.name: saved[f.name] for f in dataclasses.fields(Config) if f.name in saved}
    settings.update(changes)
    settings.update(resume=out, out=out, overwrite=True)
    try:
        cfg = Config(**settings)
        cfg.hidden = tuple(cfg.hidden)
        cfg.data_dir = None if cfg.data_dir is None else Path(cfg.data_dir)
    except TypeError as e:
        raise UsageError(f"the checkpoint in {out} holds settings of another version: {e}"
                         ) from None
    if cfg.env not in envs.ENV_IDS:
        raise UsageError(f"the run in {out} is on the data set {cfg.env!r}, which a script "
                         "registered (envs.register_dataset) and this process does not know; "
                         f"resume it from a script that registers {cfg.env!r} first, then "
                         f"calls bandits.run.main(['--resume', '{out}'])")
    validate(cfg)
    done = int(state["steps_done"])
    if cfg.steps < done:
        raise UsageError(f"--steps {cfg.steps} is fewer than the {done} steps the checkpoint in "
                         f"{out} has done; give --steps {done} or more")
    return cfg, {"state": state, "config": saved}
