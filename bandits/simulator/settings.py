"""The record of a bandit run, :class:`Config`: its settings as one typed record of
parts, each with its owner (the run, the environment, the agents' common network, the
training, the agents' own, the output), made once from the command line or from keywords;
with the checks of the settings against each other. The parts themselves are declared
where they belong (:mod:`bandits.simulator.parts`, each environment's and agent's module).
A run's identity and what a resumed run may change: :mod:`bandits.simulator.resume`.
Nothing here runs anything."""

from __future__ import annotations

import argparse
import dataclasses
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import envs
from agents import SPECS, AgentConfig, Agents, CommonSettings
from agents.neural import epochs_need_sgd
from bandits.core import kernels
from bandits.core.command_line import PlainParser
from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.conditions import refuse_settings_without_effect
from bandits.core.config import (
    UsageError,
    check_choices,
    check_ranges,
    convert,
    flag,
)
from bandits.core.data import DataError
from bandits.core.files import machine_memory
from bandits.core.import_path import hook_problem
from bandits.simulator.parts import (
    PRESETS,
    OutputSettings,
    RunSettings,
    TrainingSettings,
)
from envs import ClassificationSettings, WheelSettings

CHECKPOINT_KIND = "bandits.run"
"""The kind of checkpoint a run writes (:mod:`bandits.core.checkpoint` refuses another's)."""

DESCRIPTION = ("The bandit simulator: agents act, learn from a replay buffer, and are scored "
               "by regret.")
"""The first paragraph of ``python -m bandits.run --help``."""

ENV_SETTINGS = tuple(dict.fromkeys(part for spec in envs.SPECS.values() for part in spec.settings))
"""The environments' own settings classes, each once (every classification bandit shares
one)."""

AGENT_SETTINGS = tuple(dict.fromkeys(part for spec in SPECS.values() for part in spec.settings))
"""The agents' own settings classes, each once, in the registry's order."""


@dataclass
class Environment(ClassificationSettings, WheelSettings):
    """Every environment's own settings (its spec's ``settings``): the environment's part
    of a run's record."""


if missing := [p.__qualname__ for p in ENV_SETTINGS if p not in Environment.__mro__]:
    raise TypeError(f"the environments' settings {', '.join(missing)} are not named by "
                    "Environment (list each among its bases)")


@dataclass
class Flags(OutputSettings, Agents, TrainingSettings, CommonSettings, Environment, RunSettings):
    """One field per flag of ``python -m bandits.run`` (``--kebab-case``), in the order of
    the record's parts (a dataclass takes its bases' fields last base first): the command
    line's parser, and a flat view of a :class:`Config`."""


@dataclass
class Config:
    """The record of one bandit run (one invocation of ``python -m bandits.run``), made
    once from the command line (:func:`parse_config`) or from keywords
    (:func:`config_from`): one part per owner, each typed. An agent receives the network's
    settings and its own (:func:`agent_config`, its spec's ``own``), an environment its
    own (:func:`env_options`). ``config.json`` and a worker's settings file hold it flat
    (:meth:`flat`), one key per flag."""

    run: RunSettings
    environment: Environment
    network: CommonSettings
    training: TrainingSettings
    agents: Agents
    output: OutputSettings

    @classmethod
    def of(cls, values: dict[str, Any]) -> Config:
        """The record of ``values`` (settings by their names, as :meth:`flat` gives
        them); a setting left out keeps its default. An unknown name is a TypeError."""
        unknown = set(values) - {f.name for f in dataclasses.fields(Flags)}
        if unknown:
            raise TypeError(f"unknown setting {sorted(unknown)[0]!r}")
        return cls(**{name: part(**{f.name: values[f.name] for f in dataclasses.fields(part)
                                    if f.name in values})
                      for name, part in PART_CLASSES.items()})

    @classmethod
    def recorded(cls, saved: dict[str, Any], **changes: Any) -> Config:
        """The record a run's ``config.json`` holds (``saved``; its keys that are no
        setting left out), with ``changes``, its values as the run had them: the hidden
        sizes a tuple, the data directory a path."""
        cfg = cls.of({**{f.name: saved[f.name] for f in dataclasses.fields(Flags)
                         if f.name in saved}, **changes})
        cfg.network.hidden = tuple(cfg.network.hidden)
        cfg.run.data_dir = None if cfg.run.data_dir is None else Path(cfg.run.data_dir)
        return cfg

    def parts(self) -> tuple[Any, ...]:
        """The record's parts, in its order."""
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def flat(self) -> dict[str, Any]:
        """Every setting by its name, in the order of ``--help``: how ``config.json``, a
        worker's settings file and the checks across parts read the record."""
        return {k: v for part in self.parts() for k, v in dataclasses.asdict(part).items()}


PART_CLASSES: dict[str, type] = {
    "run": RunSettings, "environment": Environment, "network": CommonSettings,
    "training": TrainingSettings, "agents": Agents, "output": OutputSettings}
"""The class of each part of :class:`Config`, by the part's name, in the order ``--help``
lists their flags."""


def per_process(cls: type) -> frozenset[str]:
    """The settings of the dataclass ``cls`` that each process has of its own (declared
    ``per_process=True``): a worker's own command line gives them; every other setting
    comes from the run's settings file (``--settings-file``)."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get("per_process"))


def read_settings_file(path: Path) -> dict[str, Any]:
    """The run's settings in the JSON file ``path`` (written by
    :mod:`bandits.simulator.parallel`; all but those :func:`per_process` names), converted
    as the command line converts them; one line (:class:`UsageError`) where it cannot be
    read."""
    try:
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--settings-file {path}: cannot be read ({e})") from None
    own = per_process(Flags)
    return convert(Flags, {k: v for k, v in saved.items() if k not in own and v is not None})


def build_parser() -> PlainParser:
    """The parser of ``python -m bandits.run``: it gives the settings the command line
    names, and no other (the defaults and the preset fill the rest: :func:`parse_config`)."""
    return build_settings_parser(Flags, "python -m bandits.run", DESCRIPTION, PRESETS,
                                 argument_default=argparse.SUPPRESS)


def parse_config(argv: Sequence[str] | None = None, parsed: dict | None = None) -> Config:
    """Parse the command line (or take ``parsed``, the settings it named), fill the
    others from the preset and the defaults, and validate. A worker's
    (``--settings-file``) takes the run's settings from that file, as they are."""
    given = dict(parsed) if parsed is not None else vars(build_parser().parse_args(argv))
    if given.get("settings_file") is not None:
        given.update(read_settings_file(given["settings_file"]))
    return _complete(given)


def config_from(settings: dict[str, Any]) -> Config:
    """The record of ``settings`` (by the names of the flags, values as a TOML file or
    code gives them), with the defaults and the preset filling the rest, validated as
    :func:`parse_config` validates a command line."""
    return _complete(convert(Flags, settings))


def preset_values(preset: str, agents: Sequence[str]) -> dict[str, Any]:
    """What the preset ``preset`` gives a run of ``agents`` (empty: the preset's): each of
    its values, but an agent's own setting only where a listed agent reads it (or where it
    is declared ``preset_everywhere``); a run without such an agent keeps its default."""
    values = PRESETS[preset]
    read = {f.name for name in agents or values["agent"] if name in SPECS
            for part in SPECS[name].settings for f in dataclasses.fields(part)}
    own = {f.name: f for part in AGENT_SETTINGS for f in dataclasses.fields(part)}
    return {k: v for k, v in values.items()
            if k not in own or k in read or own[k].metadata.get("preset_everywhere")}


def _complete(given: dict[str, Any]) -> Config:
    """The record of the settings ``given``: each default, then the preset's values, then
    what was given."""
    values = {f.name: f.default if f.default_factory is dataclasses.MISSING
              else f.default_factory() for f in dataclasses.fields(Flags)}
    preset = given.get("preset", values["preset"])
    values.update({**preset_values(preset, given.get("agent") or []), **given})
    if kernels.in_force():  # BANDITS_EXACT=1 (or --exact) pinned this process
        values["exact"] = True
    cfg = Config.of(values)
    validate(cfg)
    if cfg.output.progress_file is None:  # a new run's (not a worker's: it gets them all)
        refuse_other_agents_settings(cfg)
        refuse_settings_without_effect(Flags, cfg.flat(), PRESETS[cfg.run.preset])
    return cfg


def validate(cfg: Config) -> None:
    """Every setting against its field's ``range``, then the settings that depend on each
    other, then the memory the run would need (before anything is allocated)."""
    unknown = [a for a in cfg.run.agent if a not in SPECS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}; choose from {', '.join(SPECS)}")
    if len(set(cfg.run.agent)) != len(cfg.run.agent):
        raise UsageError(f"--agent lists an agent twice: {' '.join(cfg.run.agent)}")
    if cfg.run.env not in envs.ENV_IDS:  # a data set registered by another process
        raise UsageError(f"unknown environment {cfg.run.env!r}; choose from "
                         f"{', '.join(envs.ENV_IDS)}, or register it with "
                         "envs.register_dataset in this process first")
    for part in cfg.parts():
        check_ranges(part)
        check_choices(part)
    if (why := kernels.problem(cfg.run.exact)) is not None:
        raise UsageError(why)
    refuse_other_envs_settings(cfg)
    for path in cfg.output.hook or ():
        if (why := hook_problem(path)) is not None:
            raise UsageError(f"--hook {path}: {why}")
    run = cfg.run
    if run.seed + run.seeds - 1 > 2**63 - 1:
        raise UsageError(f"--seed {run.seed} with --seeds {run.seeds} runs past the largest "
                         f"seed, 2^63 - 1; give --seed at most {2**63 - run.seeds}")
    if (why := epochs_need_sgd(cfg.network.fit, cfg.network.optimizer)) is not None:
        raise UsageError(why)
    if cfg.network.nll_beta and cfg.network.likelihood != "learned":
        raise UsageError(f"--nll-beta {cfg.network.nll_beta:g} weights the learned noise's "
                         "likelihood; add --likelihood learned (or leave --nll-beta at 0)")
    context_dim, n_actions = envs.SHAPES[cfg.run.env]
    for name in cfg.run.agent:  # each agent's own checks (its spec's)
        why = SPECS[name].check(SPECS[name].own(agent_config(cfg)), context_dim, n_actions)
        if why is not None:
            raise UsageError(why)
    if cfg.run.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but torch has no CUDA device here "
                         "(install a CUDA build of torch, or use --device cpu)")
    need, have = memory_estimate(cfg), machine_memory(cfg.run.device)
    if have and need > 0.8 * have:
        raise UsageError(f"these settings need about {need / 2**30:.1f} GiB of memory and this "
                         f"machine has {have / 2**30:.1f} GiB; lower --seeds, --steps, "
                         "--hidden, --heads, --batch-size or --buffer-size, or list fewer "
                         "agents")


def memory_estimate(cfg: Config) -> float:
    """Bytes a run of ``cfg`` needs, roughly (an upper-side estimate): the per-step
    records, the models with their optimiser state and workspace, the buffers, the rows
    of metrics.csv."""
    runs = cfg.run.seeds * len(cfg.run.agent)
    d_in = sum(envs.SHAPES[cfg.run.env])  # every env --env accepts has its shape there
    d, k = envs.SHAPES[cfg.run.env]
    sizes = [d * k if cfg.network.encoding == "disjoint" else d_in, *cfg.network.hidden, 1]
    params = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))
    copies = max(SPECS[name].networks(SPECS[name].own(agent_config(cfg))) for name in cfg.run.agent)
    models = 4.0 * params * runs * copies * 12  # mu, rho, grads, Adam moments, samples
    activations = 4.0 * runs * copies * cfg.network.batch_size * sum(cfg.network.hidden) * 6
    records = 8.0 * 4 * runs * cfg.run.steps
    buffers = 4.0 * runs * cfg.training.buffer_size * (d_in + 2)
    metrics = 8.0 * 12 * runs * min(cfg.run.steps, 2 * cfg.output.log_points)
    return models + activations + records + buffers + metrics


def agent_config(cfg: Config) -> AgentConfig:
    """The agents' settings given on the command line (each agent adds its own overrides)."""
    return AgentConfig(**{**dataclasses.asdict(cfg.network), **dataclasses.asdict(cfg.agents),
                          "hidden": tuple(cfg.network.hidden)})  # a name sets the rest


def env_options(cfg: Config) -> dict[str, Any]:
    """The keyword arguments of ``cfg.run.env``: its own settings (its spec's), and the data
    directory where it reads one."""
    spec = envs.SPECS[cfg.run.env]
    return {**({"data_dir": cfg.run.data_dir} if spec.data else {}),
            **spec.options(cfg.environment)}


def check_data(cfg: Config) -> None:
    """The data ``cfg.run.env`` reads, loaded once (cached in-process: the run's own envs
    reuse it) before anything is made: a data file missing, malformed or changed raises
    :class:`bandits.core.data.DataError`, said in one line by the command's entry as every
    command says it; a bad setting of the environment raises :class:`UsageError`."""
    try:
        envs.make_vec(cfg.run.env, 1, **env_options(cfg))
    except DataError:
        raise
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(str(e)) from None


def refuse_other_agents_settings(cfg: Config) -> None:
    """One line naming another agent's own setting (its spec's ``settings``: ``--heads``
    without bootstrap, ``--exact-design`` without neuralucb or neuralts) given away from its
    default (or its preset's value) in a run that lists none of the agents that read it: it
    would change nothing, and was surely meant for another run. The settings every network
    shares (:class:`agents.CommonSettings`) likewise, in a run that lists no neural agent
    (``--lr`` for linucb alone)."""
    owned = {part for name in cfg.run.agent for part in SPECS[name].settings}
    if any(SPECS[name].neural for name in cfg.run.agent):
        owned.add(CommonSettings)
    values, preset = cfg.flat(), preset_values(cfg.run.preset, cfg.run.agent)
    for part in (CommonSettings, *AGENT_SETTINGS):
        if part in owned:
            continue
        for f in dataclasses.fields(part):
            if f.name not in values:
                continue  # set by an agent's name (eps1's epsilon), not a flag
            value = values[f.name]  # against what an unlisted agent's setting gets
            default = preset.get(f.name, f.default)
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
                             f"({' '.join(cfg.run.agent)}); add one, or leave {flag(f.name)} out")


def refuse_other_envs_settings(cfg: Config) -> None:
    """One line naming a setting of another environment than ``cfg.run.env`` given away from
    its default (it would change nothing, and was surely meant for that environment)."""
    own = set(envs.SPECS[cfg.run.env].settings)
    for part in ENV_SETTINGS:
        if part in own:
            continue
        for f in dataclasses.fields(part):
            value = getattr(cfg.environment, f.name)
            if value != f.default:
                owners = [name for name, spec in envs.SPECS.items() if part in spec.settings]
                raise UsageError(f"{flag(f.name)} {value} is a setting of --env "
                                 f"{', '.join(owners)}; --env {cfg.run.env} is not one (use one "
                                 f"of those, or leave {flag(f.name)} out)")


def recorded_columns(cfg: Config) -> list[str]:
    """The columns of ``metrics.csv`` after the regret's: those the env's spec declares,
    then those of the agents of the whole run, each once, in ``--agent`` order. A worker
    of a multi-process run records only its agents' (the merge fills the others)."""
    names = [*envs.SPECS[cfg.run.env].columns,
             *(c for a in cfg.run.agent for c in SPECS[a].columns)]
    return list(dict.fromkeys(names))


def agent_seed(seed: int, runs: int, name: str) -> list[int]:
    """Entropy for an agent's generators: the run's seeds and the agent's name."""
    return [seed, runs, zlib.crc32(name.encode())]
