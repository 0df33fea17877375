"""The settings of a bandit run: the presets, :class:`Config` (one field per flag of
``python -m bandits.run``) and their checks. A run's identity and what a resumed run may
change: :mod:`bandits.simulator.resume`. Nothing here runs anything."""

from __future__ import annotations

import argparse
import dataclasses
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

import envs
from agents import SPECS, AgentConfig, CommonSettings
from agents.neural import epochs_need_sgd
from bandits.core import kernels
from bandits.core.conditions import refuse_settings_without_effect
from bandits.core.config import (
    BIG,
    COUNT,
    UsageError,
    check_choices,
    check_ranges,
    compose,
    convert,
    flag,
    setting,
)
from bandits.core.config import build_parser as build_settings_parser
from bandits.core.files import machine_memory
from bandits.core.import_path import hook_problem
from bandits.simulator.given import read_settings_file

CHECKPOINT_KIND = "bandits.run"
"""The kind of checkpoint a run writes (:mod:`bandits.core.checkpoint` refuses another's)."""

DESCRIPTION = ("The bandit simulator: agents act, learn from a replay buffer, and are scored "
               "by regret.")
"""The first paragraph of ``python -m bandits.run --help``."""

# Preset values fill every setting the command line leaves unset (the agents' own defaults
# come from AgentConfig). The learner with a memory (results/mushroom/memory-20k,
# memory-decay-0.3): every neural agent with decoupled weight decay 0.3 (BBB's on its
# posterior means) and a buffer of 50,000 items; the paper's protocol (Blundell et al.
# 2015, section 5.3): no decay and a buffer of 4,096.
MEMORY = {"buffer_size": 50_000, "weight_decay": 0.3, "mean_decay": 0.3}
PAPER_LEARNER = {"buffer_size": 4096, "weight_decay": 0.0, "mean_decay": 0.0}
FIGURE6 = {"agent": ["bbb", "greedy", "eps1", "eps5"], "batch_size": 64}  # its agents
PRESETS: dict[str, dict] = {
    # A CPU-sized run of the learner with a memory, BBB acting on one weight sample
    # (plain Thompson sampling).
    "quick": {**FIGURE6, "seeds": 3, "steps": 2000, "updates_per_step": 16,
              "act_samples": 1, **MEMORY},
    # The learner with a memory at the paper's horizon: results/mushroom/memory-decay-0.3.
    "memory": {**FIGURE6, "seeds": 10, "steps": 50_000, "updates_per_step": 8,
               "act_samples": 1, **MEMORY},
    "paper": {**FIGURE6, "seeds": 5, "steps": 50_000, "updates_per_step": 64,
              "act_samples": 2, **PAPER_LEARNER},
    # The paper's horizon, agents, network and buffer on a 2-core CPU in under an hour:
    # 10 seeds, 8 updates of 64 per step (each item is still drawn about 500 times in
    # its 4096 steps in the buffer).
    "long": {**FIGURE6, "seeds": 10, "steps": 50_000, "updates_per_step": 8,
             "act_samples": 2, **PAPER_LEARNER},
}


@dataclass
class RunSettings:
    """What a run compares, on what, and where: the first of the settings :class:`Config`
    puts together."""

    agent: list[str] | None = setting(
        None, "agents to compare, from: " + ", ".join(SPECS), nargs="+",
        type=str, per_process=True)
    env: str = setting(
        "mushroom", "bandit environment",
        choices=envs.ENV_IDS)  # the registry itself: data sets registered later count too
    preset: str = setting(
        "quick", "defaults for every unset setting", choices=sorted(PRESETS))
    seeds: int | None = setting(
        None, "number of seeds (runs) per agent", range=COUNT, type=int)
    seed: int = setting(
        0, "first seed; the runs use seed, seed+1, ...", range=(0, 2**63 - 1))
    steps: int | None = setting(
        None, "interactions per run", range=COUNT, type=int, resume=True)
    device: str = setting(
        "cpu", "torch device of the models", choices=["cpu", "cuda"])
    no_cuda_graph: bool = setting(
        False, "with --device cuda, run each training step eagerly instead "
        "of replaying it as a captured CUDA graph",
        acts_when=(lambda c: c["device"] == "cuda", "add --device cuda"))
    compile: bool = setting(
        False, "fuse the BBB training step's per-weight work with torch.compile "
        "(fewer kernels on a GPU; on a CPU it gains little and takes "
        "about 30 s to compile)",
        acts_when=(lambda c: any(a in ("bbb", "bbb-lrt") for a in c["agent"]),
                   "add --agent bbb (it fuses BBB's training step)"))
    exact: bool = setting(False, kernels.EXACT_HELP,  # beside --resume only as the run was
                          resume=True)  # made: the process's mode, checked against the run's
    out: Path | None = setting(
        None, "output directory (default: a new directory under runs/)",
        type=Path, per_process=True)
    overwrite: bool = setting(
        False, "allow writing into an existing non-empty output directory", per_process=True)
    data_dir: Path | None = setting(
        None, "data directory (else $BANDITS_DATA_DIR, the cache, download)",
        type=Path, resume=True)


@dataclass
class TrainingSettings:
    """How often the agents train, and on what."""

    buffer_size: int | None = setting(
        None, "replay buffer capacity (last N interactions)",
        range=COUNT, type=int)
    updates_per_step: int | None = setting(
        None, "minibatch updates after each interaction",
        range=COUNT, type=int)
    train_every: int = setting(
        1, "train after every k-th interaction (k=1: every step)",
        range=COUNT)
    train_always_until: int = setting(
        0, "train after every step up to this one, then every --train-every steps "
        "(NeuralUCB's reference: 2000, then every 100)", range=(0, BIG))


@dataclass
class OutputSettings:
    """What a run records and shows, and how it is run and continued (none of these
    changes the results but ``log_points``)."""

    log_points: int = setting(
        2000, "max metrics.csv rows per run (every step if steps <= this)",
        range=COUNT)
    log_y: bool = setting(
        False, "logarithmic y axis in regret.png", resume=True)
    threads: int = setting(
        1, "torch CPU threads; 1 is fastest for these small networks "
        "(0: torch's default)", range=(0, 1024))
    no_progress: bool = setting(
        False, "hide the progress bar", resume=True, per_process=True)
    skip_diverged: bool = setting(
        False, "when a run's training loss becomes NaN or infinite, warn and "
        "let the other runs go on instead of stopping (runs are "
        "independent; the diverged one keeps acting on its NaN model)")
    checkpoint_every: float = setting(
        300.0, "seconds of work between checkpoints in the output "
        "directory (0: after every step); one is also written "
        "at the end and on Ctrl-C",
        range=(0, math.inf), allow_inf=True, resume=True)
    workers: int | None = setting(
        None, "processes that run the populations side by side, one "
        "torch thread each unless --threads says otherwise; the "
        "results are the same bytes for every value (default: "
        "$BANDITS_WORKERS, else the cores this process may use, at "
        "most one per population)", range=(1, 1024), type=int, resume=True, per_process=True)
    hook: list[str] | None = setting(
        None, "objects that look on after every step, each as MODULE:CALLABLE: called "
        "with the run's settings and output directory, it returns an object with "
        "after_step(populations, log, stopping); it changes no result (with workers, "
        "each worker calls it for its own agents, with its part's directory)",
        nargs="+", type=str, metavar="MODULE:CALLABLE", resume=True)
    progress_file: Path | None = setting(
        None, argparse.SUPPRESS, type=Path, resume=True, per_process=True)  # for the workers
    settings_file: Path | None = setting(
        None, argparse.SUPPRESS, type=Path,  # for the workers: the run's settings as JSON
        per_process=True)
    resume: Path | None = setting(
        None, "continue the run in this output directory from its "
        "checkpoint, with its config.json (--steps may extend it)",
        type=Path, resume=True, per_process=True)


ENV_SETTINGS = tuple(dict.fromkeys(part for spec in envs.SPECS.values() for part in spec.settings))
"""The environments' own settings classes, each once (every classification bandit shares
one)."""

if TYPE_CHECKING:  # what a type checker sees: every built-in part, every field typed
    from agents import bbb, bootstrap, dropout, linear, neural_linear, neural_ucb
    from envs import ClassificationSettings, WheelSettings

    @dataclass
    class Config(OutputSettings, neural_linear.Settings, bootstrap.Settings, dropout.Settings,
                 neural_ucb.Settings, linear.UCBSettings, linear.PosteriorSettings,
                 bbb.Settings, TrainingSettings, CommonSettings, ClassificationSettings,
                 WheelSettings, RunSettings):
        """Settings of one invocation of ``python -m bandits.run`` (the static view of the
        class composed below, with the built-in environments and agents)."""

else:
    Config = compose(
        "Config",
        [RunSettings, *ENV_SETTINGS, CommonSettings, TrainingSettings,
         *(part for spec in SPECS.values() for part in spec.settings), OutputSettings],
        """Settings of one invocation of ``python -m bandits.run``; each field is a CLI flag
        (``--kebab-case``). Made of :class:`RunSettings`, every environment's own settings
        (its spec's ``settings``), the agents' common settings
        (:class:`agents.CommonSettings`), :class:`TrainingSettings`, every registered agent's
        own (its spec's ``settings``) and :class:`OutputSettings`. The settings a preset
        gives default to None: the preset fills them (:func:`parse_config`).""",
        module=__name__, filled_later={k for preset in PRESETS.values() for k in preset},
        cli_only=True)


OWN_DEFAULTS: dict[str, tuple[set, Any]] = {
    f.name: ({part for spec in SPECS.values() for part in spec.settings if f in
              dataclasses.fields(part)}, f.default)
    for spec in SPECS.values() for part in spec.settings for f in dataclasses.fields(part)
    if any(f.name in preset for preset in PRESETS.values())
    and not f.metadata.get("preset_everywhere")}
"""An agent's own setting that a preset gives: the settings classes that declare it and its
own default, which a run listing none of the agents that read it keeps (but where the
setting is declared ``preset_everywhere``)."""


def build_parser() -> argparse.ArgumentParser:
    return build_settings_parser(Config, "python -m bandits.run", DESCRIPTION,
                                 PRESETS)


def parse_config(argv: Sequence[str] | None = None, parsed: dict | None = None) -> Config:
    """Parse the command line (or take ``parsed``, its parse), fill unset settings from the
    preset, and validate. A worker's (``--settings-file``) takes the run's settings from
    that file, as they are."""
    values = dict(parsed) if parsed is not None else vars(build_parser().parse_args(argv))
    if values["settings_file"] is not None:
        values.update(read_settings_file(values["settings_file"], Config))
    return _complete(values)


def config_from(settings: dict[str, Any]) -> Config:
    """The configuration of ``settings`` (names of :class:`Config`'s fields, values as
    a TOML file or code gives them), with the defaults and the preset filling the rest,
    validated as :func:`parse_config` validates a command line."""
    values = {f.name: f.default for f in dataclasses.fields(Config)}
    values.update(convert(Config, settings))
    return _complete(values)


def _complete(values: dict[str, Any]) -> Config:
    listed = {part for name in values["agent"] or PRESETS[values["preset"]]["agent"]
              if name in SPECS for part in SPECS[name].settings}
    for k, v in PRESETS[values["preset"]].items():  # the preset fills what was not given
        if values[k] is None:  # (an agent's own setting only where a listed agent reads it)
            values[k] = v if k not in OWN_DEFAULTS or OWN_DEFAULTS[k][0] & listed \
                else OWN_DEFAULTS[k][1]
    if kernels.in_force():  # BANDITS_EXACT=1 (or --exact) pinned this process
        values["exact"] = True
    cfg = Config(**values)
    validate(cfg)
    if cfg.progress_file is None:  # a new run's (not a worker's: it gets every setting)
        refuse_other_agents_settings(cfg)
        refuse_settings_without_effect(  # the settings as values: given.py never holds cfg
            Config, dataclasses.asdict(cfg), PRESETS[cfg.preset])
    return cfg


def validate(cfg: Config) -> None:
    """Every setting against its field's ``range``, then the settings that depend on each
    other, then the memory the run would need (before anything is allocated)."""
    unknown = [a for a in cfg.agent if a not in SPECS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}; choose from {', '.join(SPECS)}")
    if len(set(cfg.agent)) != len(cfg.agent):
        raise UsageError(f"--agent lists an agent twice: {' '.join(cfg.agent)}")
    if cfg.env not in envs.ENV_IDS:  # a data set registered by another process
        raise UsageError(f"unknown environment {cfg.env!r}; choose from "
                         f"{', '.join(envs.ENV_IDS)}, or register it with "
                         "envs.register_dataset in this process first")
    check_ranges(cfg)
    check_choices(cfg)
    if (why := kernels.problem(cfg.exact)) is not None:
        raise UsageError(why)
    refuse_other_envs_settings(cfg)
    for path in cfg.hook or ():
        if (why := hook_problem(path)) is not None:
            raise UsageError(f"--hook {path}: {why}")
    if cfg.seed + cfg.seeds - 1 > 2**63 - 1:
        raise UsageError(f"--seed {cfg.seed} with --seeds {cfg.seeds} runs past the largest "
                         f"seed, 2^63 - 1; give --seed at most {2**63 - cfg.seeds}")
    if (why := epochs_need_sgd(cfg.fit, cfg.optimizer)) is not None:
        raise UsageError(why)
    if cfg.nll_beta and cfg.likelihood != "learned":
        raise UsageError(f"--nll-beta {cfg.nll_beta:g} weights the learned noise's "
                         "likelihood; add --likelihood learned (or leave --nll-beta at 0)")
    context_dim, n_actions = envs.SHAPES[cfg.env]
    for name in cfg.agent:  # each agent's own checks (its spec's)
        why = SPECS[name].check(SPECS[name].own(agent_config(cfg)), context_dim, n_actions)
        if why is not None:
            raise UsageError(why)
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but torch has no CUDA device here "
                         "(install a CUDA build of torch, or use --device cpu)")
    need, have = memory_estimate(cfg), machine_memory(cfg.device)
    if have and need > 0.8 * have:
        raise UsageError(f"these settings need about {need / 2**30:.1f} GiB of memory and this "
                         f"machine has {have / 2**30:.1f} GiB; lower --seeds, --steps, "
                         "--hidden, --heads, --batch-size or --buffer-size, or list fewer "
                         "agents")


def memory_estimate(cfg: Config) -> float:
    """Bytes a run of ``cfg`` needs, roughly (an upper-side estimate): the per-step
    records, the models with their optimiser state and workspace, the buffers, the rows
    of metrics.csv."""
    runs = cfg.seeds * len(cfg.agent)
    d_in = sum(envs.SHAPES[cfg.env])  # every env --env accepts has its shape there
    d, k = envs.SHAPES[cfg.env]
    sizes = [d * k if cfg.encoding == "disjoint" else d_in, *cfg.hidden, 1]
    params = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))
    copies = max(SPECS[name].networks(SPECS[name].own(agent_config(cfg))) for name in cfg.agent)
    models = 4.0 * params * runs * copies * 12  # mu, rho, grads, Adam moments, samples
    activations = 4.0 * runs * copies * cfg.batch_size * sum(cfg.hidden) * 6
    records = 8.0 * 4 * runs * cfg.steps
    buffers = 4.0 * runs * cfg.buffer_size * (d_in + 2)
    metrics = 8.0 * 12 * runs * min(cfg.steps, 2 * cfg.log_points)
    return models + activations + records + buffers + metrics


def agent_config(cfg: Config) -> AgentConfig:
    """The agents' settings given on the command line (each agent adds its own overrides)."""
    agent_cfg = AgentConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(AgentConfig)
                               if f.metadata.get("cli", True)})  # the flags; a name sets the rest
    agent_cfg.hidden = tuple(cfg.hidden)
    return agent_cfg


def env_options(cfg: Config) -> dict[str, Any]:
    """The keyword arguments of ``cfg.env``: its own settings (its spec's), and the data
    directory where it reads one."""
    spec = envs.SPECS[cfg.env]
    return {**({"data_dir": cfg.data_dir} if spec.data else {}), **spec.options(cfg)}


def refuse_other_agents_settings(cfg: Config) -> None:
    """One line naming another agent's own setting (its spec's ``settings``: ``--heads``
    without bootstrap, ``--exact-design`` without neuralucb or neuralts) given away from its
    default (or its preset's value) in a run that lists none of the agents that read it: it
    would change nothing, and was surely meant for another run. The settings every network
    shares (:class:`agents.CommonSettings`) likewise, in a run that lists no neural agent
    (``--lr`` for linucb alone)."""
    owned = {part for name in cfg.agent for part in SPECS[name].settings}
    if any(SPECS[name].neural for name in cfg.agent):
        owned.add(CommonSettings)
    for part in dict.fromkeys([CommonSettings,
                               *(part for spec in SPECS.values() for part in spec.settings)]):
        if part in owned:
            continue
        for f in dataclasses.fields(part):
            if not f.metadata.get("cli", True) or not hasattr(cfg, f.name):
                continue  # set by an agent's name (eps1's epsilon), not a flag
            value = getattr(cfg, f.name)  # against what an unlisted agent's setting gets
            default = (f.default if f.name in OWN_DEFAULTS  # (see _complete)
                       else PRESETS[cfg.preset].get(f.name, f.default))
            if isinstance(default, tuple) and isinstance(value, list):
                value = tuple(value)
            if value == default:
                continue
            readers = [name for name, spec in SPECS.items()
                       if part in spec.settings or part is CommonSettings and spec.neural]
            shown = (" " + " ".join(map(str, value)) if isinstance(value, (list, tuple))
                     else "" if isinstance(value, bool) else f" {value}")
            raise UsageError(f"{flag(f.name)}{shown} is read by --agent "
                             f"{', '.join(readers)}, none of which this run lists "
                             f"({' '.join(cfg.agent)}); add one, or leave {flag(f.name)} out")


def refuse_other_envs_settings(cfg: Config) -> None:
    """One line naming a setting of another environment than ``cfg.env`` given away from
    its default (it would change nothing, and was surely meant for that environment)."""
    own = set(envs.SPECS[cfg.env].settings)
    for part in ENV_SETTINGS:
        if part in own:
            continue
        for f in dataclasses.fields(part):
            value = getattr(cfg, f.name)
            if value != f.default:
                owners = [name for name, spec in envs.SPECS.items() if part in spec.settings]
                raise UsageError(f"{flag(f.name)} {value} is a setting of --env "
                                 f"{', '.join(owners)}; --env {cfg.env} is not one (use one "
                                 f"of those, or leave {flag(f.name)} out)")


def recorded_columns(cfg: Config) -> list[str]:
    """The columns of ``metrics.csv`` after the regret's: those the env's spec declares,
    then those of the agents of the whole run, each once, in ``--agent`` order. A worker
    of a multi-process run records only its agents' (the merge fills the others)."""
    names = [*envs.SPECS[cfg.env].columns, *(c for a in cfg.agent for c in SPECS[a].columns)]
    return list(dict.fromkeys(names))


def agent_seed(seed: int, runs: int, name: str) -> list[int]:
    """Entropy for an agent's generators: the run's seeds and the agent's name."""
    return [seed, runs, zlib.crc32(name.encode())]
