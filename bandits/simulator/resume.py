"""The simulator's kind of run (:data:`RUN`, a :class:`bandits.core.runner.RunKind`): the
files a run writes (:data:`OUTPUTS`), the flags allowed beside ``--resume``
(:data:`RESUME_FLAGS`), a run's identity (the fingerprint of the settings that decide its
results) and the settings of the run a checkpoint continues."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import envs
from bandits.core.command_line import given_flags as flags_named
from bandits.core.config import UsageError
from bandits.core.runner import RunKind
from bandits.simulator.settings import CHECKPOINT_KIND, Config, Flags, build_parser, validate

RESUME_FLAGS = tuple(f.name for f in dataclasses.fields(Flags) if f.metadata.get("resume"))
"""The flags that may be given beside ``--resume`` (each declared ``resume=True`` where it
is defined): they do not change the results."""


def given_flags(argv: Sequence[str] | None) -> set[str]:
    """The settings named on the command line (not filled by a default)."""
    return flags_named(build_parser, argv)


# The settings that count in a run's identity at any value: those of version 0.1.0, frozen.
# A setting added since counts only away from its default, so every earlier run keeps its
# identity with nothing to list (a new setting's default must be what runs did before it;
# to change what runs use, give a preset the new value, never change the default).
FIRST_SETTINGS = frozenset((
    "agent", "env", "preset", "seeds", "seed", "steps", "device", "no_cuda_graph", "compile",
    "out", "overwrite", "data_dir", "wheel_delta", "normalize", "order", "hidden", "lr",
    "batch_size", "noise_sigma", "likelihood", "nll_beta", "optimizer", "fit",
    "fit_tolerance", "weight_decay_per_datum", "encoding", "weight_decay", "buffer_size",
    "updates_per_step", "train_every", "train_always_until", "prior", "prior_pi",
    "prior_sigma1", "prior_sigma2", "prior_sigma", "kl_scale", "init_sigma", "act_samples",
    "mean_decay", "lrt", "lin_a0", "lin_b0", "lin_lambda", "ucb_alpha", "nu", "ucb_lambda",
    "exact_design", "dropout", "heads", "refresh_every", "log_points", "log_y", "threads",
    "no_progress", "skip_diverged", "checkpoint_every", "workers", "progress_file", "resume"))

# Settings of the first versions added after runs were made and checkpointed, each with
# the value runs made before it had (before --normalize, the data set's own features;
# before --order, examples drawn with replacement): at that value it is left out of the
# identity, so those runs keep theirs and resume. Frozen: FIRST_SETTINGS' rule does this
# for every setting added since.
ADDED_LATER: dict[str, Any] = {"normalize": "none", "order": "random", "encoding": "onehot",
                               "optimizer": "adam", "fit": "steps", "fit_tolerance": 1e-3,
                               "weight_decay_per_datum": False, "train_always_until": 0,
                               "mean_decay": 0.0}

PARTS = "parts"
# what a run (and bandits.plot, bandits.diagnose after it) writes into its directory
RUN_FILES = ("metrics.csv", "summary.csv", "phases.csv", "memory.csv", "probes.csv",
             "config.json", "regret.png", "regret.pdf", "expected_regret.png",
             "expected_regret.pdf", "checkpoint.pt", "diagnosis.csv", "diagnosis_seeds.csv",
             "diagnosis.png", "diagnosis.pdf", "memorisation.csv", "exploration.csv")
# and a run in workers besides: in DIR/parts/, each worker's log, its progress file and
# its own run's files in DIR/parts/<k>/ (an --overwrite removes these, nothing else)
OUTPUTS = (*RUN_FILES, f"{PARTS}/worker-<n>.log", f"{PARTS}/.progress-<n>",
           f"{PARTS}/settings.json",
           *(f"{PARTS}/<n>/{name}" for name in RUN_FILES))

# the simulator's kind of run (see bandits.core.runner)
RUN = RunKind("bandits.run", CHECKPOINT_KIND, frozenset(RESUME_FLAGS), OUTPUTS,
              added_later=ADDED_LATER,
              # where a worker read the run's settings: not a setting itself
              not_settings=frozenset({"settings_file"}),
              settings=lambda: [f.name for f in dataclasses.fields(Flags)],
              first_settings=FIRST_SETTINGS,
              defaults=lambda: {f.name: f.default if f.default_factory is dataclasses.MISSING
                                else f.default_factory()  # a list default's
                                for f in dataclasses.fields(Flags)})


def identity(config: dict[str, Any]) -> str:
    """A fingerprint of the settings that decide a run's results (all but the output
    directory and the flags allowed beside ``--resume``), from ``config.json``'s values.
    Two runs with the same identity and steps produce the same bytes."""
    return RUN.identity(config)


def resume_config(out: Path, changes: dict[str, Any]) -> tuple[Config, dict]:
    """The config of the run to resume in ``out`` (its config.json, with ``changes``:
    --steps and the other flags of :data:`RESUME_FLAGS`) and what
    :func:`bandits.simulator.loop.simulate` needs to continue it. ``changes`` are taken as
    checked (:meth:`bandits.core.runner.RunKind.refuse_changes`, done once by
    :func:`bandits.simulator.run.resume`)."""
    state = RUN.own_checkpoint(out)  # this directory's own, and intact
    saved = state["config"]  # config.json as it was when the checkpoint was written
    try:  # in the run's own mode (validate() refuses a process pinned otherwise)
        cfg = Config.recorded(saved, **{**changes, "resume": out, "out": out,
                                        "overwrite": True,
                                        "exact": bool(saved.get("exact", False))})
    except TypeError as e:
        raise UsageError(f"the checkpoint in {out} holds settings of another version: {e}"
                         ) from None
    if cfg.run.env not in envs.ENV_IDS:
        raise UsageError(f"the run in {out} is on the data set {cfg.run.env!r}, which a script "
                         "registered (envs.register_dataset) and this process does not know; "
                         f"resume it from a script that registers {cfg.run.env!r} first, then "
                         f"calls bandits.run.main({['--resume', str(out)]!r})")
    validate(cfg)
    RUN.check_continues("steps", cfg.run.steps, int(state["steps_done"]), "steps", out)
    return cfg, {"state": state, "config": saved}
