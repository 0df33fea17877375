"""Paired comparisons of one agent against the others over the same seeds, from run folders
joined into one table: the analysis of a pre-registered confirmation
(``results/mushroom/heldout``).

Each run folder's ``phases.csv`` gives, per agent and seed, the final cumulative regret
(the sum of its phases' realised regret) and the late expected regret per step (its
phases' expected regret from ``--late-from`` on, over the steps there). Folders are joined
agent by agent (an agent's rows never depend on the agents beside it), each file checked
against what its run wrote (:mod:`bandits.records.reader`); a damaged file, runs of two
environments or lengths, a run of other than ``--steps``, an agent and seed in two
folders or runs of the reference agent alone is one line. For every other agent the
reference agent's paired differences (reference minus other, seed by seed) give the mean,
its standard error, the wins, ties and losses of the reference, and a one-sided
sign-flip (randomisation) test of "the reference's mean is lower": exact up to 16 seeds,
else ``--flips`` random sign patterns from a fixed generator. Writes ``seeds.csv``,
``agents.csv``, ``paired.csv``, ``tables.md`` and ``analysis.json`` into ``--out``: an
empty folder, or with ``--overwrite`` one whose files of those names it wrote itself (a
file of theirs that it did not write is never replaced)."""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from agents import SPECS
from bandits.core.command import parsed, refused
from bandits.core.command_line import build_parser as build_settings_parser
from bandits.core.command_line import first_paragraph
from bandits.core.config import UsageError, setting
from bandits.core.files import write_atomic, write_csv
from bandits.core.processes import stop_on_ctrl_c
from bandits.records import reader
from bandits.simulator.resume import RUN

MEASURES = {"final": "final cumulative regret", "late": "late expected regret per step"}
"""The two measures compared: the column of ``seeds.csv`` and how tables name it."""


def per_seed(folders: Sequence[Path], steps: int, late_from: int) -> pd.DataFrame:
    """One row per agent and seed: ``agent, seed, final, late, folder``, from the folders'
    ``phases.csv`` joined (:func:`bandits.records.reader.joined`: each file checked, runs
    of one environment and one step count, an agent and seed in one folder only). Raises
    ValueError (one line) on a file that is not what its run wrote, a run of other than
    ``steps`` steps, or phases that do not start at ``late_from``."""
    phases = reader.joined([Path(folder) / "phases.csv" for folder in folders])
    folder, ran = phases["folder"].iloc[0], int(phases["end"].max())
    if ran < steps:  # the command quoted: a folder with a space in its name pastes back
        again = RUN.resume_command(folder, bool(reader.run_of(Path(folder)).config.get("exact")))
        raise ValueError(f"{folder} ran {ran} of {steps} steps; resume it to {steps} "
                         f"({again} --steps {steps})")
    if ran > steps:
        raise ValueError(f"{folder} ran {ran} steps, not the {steps} of --steps; give "
                         f"--steps {ran}, or runs of {steps} steps")
    if late_from not in set(phases["start"]):
        raise ValueError(f"{folder}: no phase starts at step {late_from}; give "
                         f"--late-from at a phase's start")
    late = phases[phases["start"] >= late_from]
    by = ["agent", "seed", "folder"]
    table = pd.DataFrame({
        "final": phases.groupby(by)["regret"].sum(),
        "late": late.groupby(by)["expected_regret"].sum() / (steps - late_from + 1),
    }).reset_index()[["agent", "seed", "final", "late", "folder"]]
    return table.sort_values(["agent", "seed"], kind="stable").reset_index(drop=True)


def sign_flip_p(d: np.ndarray, flips: int = 200_000, seed: int = 0,
                two_sided: bool = False) -> float:
    """One-sided p-value of "the mean of ``d`` is below 0" by flipping the signs of the
    differences: the share of sign patterns whose mean is at most the observed one
    (exact over all 2^n patterns up to n = 16; else ``flips`` random patterns from
    ``numpy.random.default_rng(seed)``, counting the observed one). ``two_sided``: of
    "the mean is 0", the share whose mean is at least as far from 0 (exact only)."""
    d = np.asarray(d, dtype=np.float64)
    observed = d.mean()
    tol = 1e-9 * max(1.0, float(np.abs(d).max(initial=0.0)))
    if two_sided and not 0 < len(d) <= 16:
        raise ValueError(f"an exact sign-flip test takes 1 to 16 differences, got {len(d)}")
    if len(d) <= 16:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
        means = (signs * d).mean(axis=1)
        if two_sided:
            return float(np.mean(np.abs(means) >= abs(observed) - tol))
        return float(np.mean(means <= observed + tol))
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(flips, len(d)))
    return float((1 + np.sum((signs * d).mean(axis=1) <= observed + tol)) / (flips + 1))


def _order(seeds: pd.DataFrame, reference: str) -> list[str]:
    """The agents, the reference first, then in the registry's order."""
    names = list(SPECS)
    rank = {a: (a != reference, names.index(a) if a in names else len(names), a)
            for a in seeds["agent"].unique()}
    return sorted(rank, key=rank.__getitem__)


def agents_table(seeds: pd.DataFrame, reference: str = "bbb") -> pd.DataFrame:
    """Per agent (the reference first) and measure: seeds, mean, standard error, median."""
    rows = []
    for agent in _order(seeds, reference):
        group = seeds[seeds["agent"] == agent]
        for measure in MEASURES:
            x = group[measure]
            rows.append({"agent": agent, "measure": measure, "seeds": len(x),
                         "mean": x.mean(), "se": x.std(ddof=1) / np.sqrt(len(x)),
                         "median": x.median()})
    return pd.DataFrame(rows)


def paired_table(seeds: pd.DataFrame, reference: str, flips: int = 200_000) -> pd.DataFrame:
    """The reference's paired differences to every other agent, per measure: seeds,
    mean and standard error of (reference - other), wins, ties and losses of the
    reference, the one-sided p-value (:func:`sign_flip_p`) and whether it is below 0.05.
    Raises ValueError (one line) where there is no other agent, or the reference's seeds
    are not another's."""
    wide = {m: seeds.pivot(index="seed", columns="agent", values=m) for m in MEASURES}
    if reference not in wide["final"]:
        raise ValueError(f"no runs of the reference agent {reference!r}; give its folder")
    if len(wide["final"].columns) < 2:
        others = ", ".join(a for a in SPECS if a != reference)
        raise ValueError(f"the runs are of the reference agent {reference} alone: nothing to "
                         f"compare it with; give also the folders of runs of another agent "
                         f"(one of {others})")
    rows = []
    for other in _order(seeds, reference)[1:]:
        for measure, table in wide.items():
            both = table[[reference, other]].dropna()
            if len(both) != len(table):
                raise ValueError(f"{reference} and {other} do not cover the same seeds; "
                                 "give the folders of every seed of both")
            d = (both[reference] - both[other]).to_numpy()
            p = sign_flip_p(d, flips)
            rows.append({"measure": measure, "reference": reference, "other": other,
                         "seeds": len(d), "mean_diff": d.mean(),
                         "se": d.std(ddof=1) / np.sqrt(len(d)),
                         "wins": int((d < 0).sum()), "ties": int((d == 0).sum()),
                         "losses": int((d > 0).sum()), "p_one_sided": p,
                         "separated": bool(p < 0.05)})
    return pd.DataFrame(rows)


def markdown(agents: pd.DataFrame, paired: pd.DataFrame, labels: dict[str, str]) -> str:
    """The two tables of ``tables.md``: each agent's measures, and the paired tests."""
    name = lambda a: labels.get(a, a)  # noqa: E731 - a one-line lookup
    final = agents[agents["measure"] == "final"].set_index("agent")
    late = agents[agents["measure"] == "late"].set_index("agent")
    lines = ["| Agent | seeds | final cumulative regret, mean +- s.e. (median) | "
             "late expected regret per step, mean +- s.e. |", "| --- | ---: | ---: | ---: |"]
    for agent in final.index:
        f, g = final.loc[agent], late.loc[agent]
        lines.append(f"| {name(agent)} | {int(f['seeds'])} | {f['mean']:.0f} +- {f['se']:.0f} "
                     f"({f['median']:.0f}) | {g['mean']:.3f} +- {g['se']:.3f} |")
    lines += ["", "| Paired: reference - other | measure | seeds | mean +- s.e. | "
              "wins / ties / losses | one-sided p | separated at 5 % |",
              "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for _, r in paired.iterrows():
        digits = 0 if r["measure"] == "final" else 3
        lines.append(f"| {name(r['reference'])} - {name(r['other'])} | {MEASURES[r['measure']]} "
                     f"| {r['seeds']} | {r['mean_diff']:.{digits}f} +- {r['se']:.{digits}f} | "
                     f"{r['wins']} / {r['ties']} / {r['losses']} | {r['p_one_sided']:.4f} | "
                     f"{'yes' if r['separated'] else 'no'} |")
    return "\n".join(lines) + "\n"


@dataclass
class Settings:
    """The settings of ``python -m bandits.confirm``."""

    dirs: list[Path] = setting(None, "bandits.run output folders to join",
                               positional=True, nargs="+", type=Path)
    out: Path | None = setting(None, "folder for seeds.csv, agents.csv, paired.csv, "
                               "tables.md and analysis.json (made if missing)", type=Path)
    overwrite: bool = setting(False, "write into a non-empty --out, replacing the files "
                              "bandits.confirm wrote there and nothing else")
    reference: str = setting("bbb", "the agent compared with every other")
    steps: int = setting(50_000, "the steps every run must have run", range=(1, 10**9))
    late_from: int = setting(40_001, "the first step of the late regret per step",
                             range=(1, 10**9))
    flips: int = setting(200_000, "random sign patterns of the test beyond 16 seeds (its "
                         "smallest p, 1 / (flips + 1), below the 0.0001 tables.md prints)",
                         range=(10_000, 10**8))


OUTPUTS = {"seeds.csv": "agent,seed,final,late\n",
           "agents.csv": "agent,measure,seeds,mean,se,median\n",
           "paired.csv": "measure,reference,other,seeds,mean_diff,se,wins,ties,losses,"
                         "p_one_sided,separated\n",
           "tables.md": "| Agent | seeds | final cumulative regret, mean +- s.e. (median) |",
           "analysis.json": '{\n "folders": ['}
"""The files the command writes, each with how it begins (a file of that name that begins
otherwise is not its own: never overwritten)."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m bandits.confirm``; a bad flag raises
    :class:`bandits.core.config.UsageError` (one line, exit status 2)."""
    return build_settings_parser(Settings, "python -m bandits.confirm",
                                 first_paragraph(__doc__))


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse (ValueError) an ``out`` holding a file of :data:`OUTPUTS`' names that this
    command did not write (with or without ``overwrite``), or, without ``overwrite``,
    holding anything."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder; choose another --out")
    for name, begins in OUTPUTS.items():
        path = out / name
        if path.is_file():
            with open(path, "rb") as f:
                head = f.read(len(begins.encode())).decode("utf-8", errors="replace")
            if head != begins:
                raise ValueError(f"{path} was not written by bandits.confirm (it does not "
                                 f"begin as its {name} does); move it away or choose another "
                                 "--out")
        elif path.exists():
            raise ValueError(f"{path} is not a file bandits.confirm wrote; move it away or "
                             "choose another --out")
    if not overwrite and out.is_dir() and any(out.iterdir()):
        raise ValueError(f"--out {out} is not empty; pass --overwrite to replace the files "
                         "bandits.confirm wrote there (nothing else), or choose another --out")


def confirm(args: Settings) -> str:
    """Write the five files into ``args.out``; the tables' markdown."""
    assert args.out is not None  # a confirmation without --out is refused before
    if args.late_from > args.steps:
        raise ValueError(f"--late-from {args.late_from} is past --steps {args.steps}")
    seeds = per_seed(args.dirs, args.steps, args.late_from)
    agents = agents_table(seeds, args.reference)
    paired = paired_table(seeds, args.reference, args.flips)
    text = markdown(agents, paired, {n: s.label for n, s in SPECS.items()})
    check_out(args.out, args.overwrite)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(seeds.drop(columns="folder"), args.out / "seeds.csv")
    write_csv(agents, args.out / "agents.csv")
    write_csv(paired, args.out / "paired.csv")
    write_atomic(args.out / "tables.md", text)
    write_atomic(args.out / "analysis.json", json.dumps(
        {"folders": [str(d) for d in args.dirs], "reference": args.reference,
         "steps": args.steps, "late_from": args.late_from, "flips": args.flips}, indent=1)
        + "\n")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    return stop_on_ctrl_c("bandits.confirm", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = parsed(Settings, build_parser(), argv)
        if args.out is None:
            raise UsageError("give --out, the folder for the tables")
        print(confirm(args), end="")
    except (UsageError, ValueError, OSError) as e:
        return refused("bandits.confirm", e)
    return 0
