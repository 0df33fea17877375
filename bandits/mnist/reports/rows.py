"""The report's rows, from the lines of ``models.jsonl``: the models as one pandas table
(:func:`models_table`), and the rows of the tables (:func:`rows_table`).

A row is a set of models trained with identical settings (every setting that changes
what a model learns: all of :class:`~bandits.mnist.models.config.Config` but the seed and the
run options in :data:`RUN_OPTIONS`), wherever they were written: seeds trained by
several commands with the same settings join one row. A row holds each seed once; a
model that repeats a seed of the same settings starts another row (a repeat, not one
more seed). A row's name is where its models were written: the command's directory,
with the setting of a model of a command that trained several, joined by `` + `` when
its seeds come from several commands. Per method, network and width the report
chooses the row with the lowest mean validation error (:func:`selection`)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from bandits.mnist.models.config import PRIOR_FIELDS, Config
from bandits.mnist.reports.gather import run_dir

# settings that never change what a model learns (left out when grouping models)
RUN_OPTIONS = frozenset({"seed", "seeds", "out", "overwrite", "progress", "plots", "threads",
                         "workers", "device", "data_dir", "download", "checkpoint_every",
                         "resume", "exact"})  # exact: the same model, rounded alike
TRAINING = tuple(f.name for f in dataclasses.fields(Config) if f.name not in RUN_OPTIONS)
# the settings that make a BBB model's prior (the others are its training)
PRIOR_SETTINGS = frozenset({"prior"}.union(*PRIOR_FIELDS.values()))
KIND_ORDER = {"sgd": 0, "dropout": 1, "bbb-gaussian": 2, "bbb-mixture": 3}
# the numbers of a model the tables read, as models.jsonl names them (flattened)
NUMBERS = ("final.test_error_mean", "final.test_error_sampled",
           "best_validation.val_error_mean", "best_validation.test_error_mean",
           "best_validation.test_error_sampled", "first_epoch.kl", "last_epoch.kl",
           "last_epoch.nll")


def settings_key(settings: dict[str, Any], leave_out: frozenset[str] = frozenset()) -> str:
    """A model's training settings (:data:`TRAINING`, less ``leave_out``) as JSON."""
    return json.dumps({k: settings.get(k) for k in TRAINING if k not in leave_out},
                      sort_keys=True)


def kind(settings: dict[str, Any]) -> str:
    """A model's kind: ``sgd``, ``dropout``, ``bbb-gaussian`` or ``bbb-mixture``."""
    return f"bbb-{settings['prior']}" if settings["model"] == "bbb" else settings["model"]


def models_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The models (the lines of ``models.jsonl``, in their order) as one table: every
    number of a line flattened by :func:`pandas.json_normalize` (``final.test_error_mean``,
    ``ood.entropy_noise``, ...), and the columns the tables group and read by: ``line``
    (its place in the file), ``seed``, ``kind``, ``run_dir`` and ``run_name`` (where its
    command wrote it), ``test``, ``sampled`` and ``val`` (the test errors at its epoch of
    lowest validation error, or at the last epoch without a validation set, and that
    validation error), ``training`` (:func:`settings_key`) and ``row``."""
    df = pd.json_normalize(records)
    for col in NUMBERS:
        if col not in df:
            df[col] = math.nan
    has_val = pd.Series(["best_validation" in r for r in records], index=df.index)
    df["line"] = range(len(df))
    df["seed"] = [int(r["settings"]["seed"]) for r in records]
    df["kind"] = [kind(r["settings"]) for r in records]
    df["run_dir"] = [str(run_dir(r)) for r in records]
    df["run_name"] = [_run_name(r) for r in records]
    df["test"] = df["best_validation.test_error_mean"].where(has_val,
                                                             df["final.test_error_mean"])
    df["sampled"] = df["best_validation.test_error_sampled"].where(
        has_val, df["final.test_error_sampled"])
    df["val"] = df["best_validation.val_error_mean"]
    df["training"] = [settings_key(r["settings"]) for r in records]
    # a row holds each seed once: the k-th model of a seed (in file order) is in row k
    repeat = df.groupby(["training", "seed"], sort=False).cumcount()
    df["row"] = df.groupby([df["training"], repeat], sort=False).ngroup()
    return df


def _run_name(record: dict[str, Any]) -> str:
    """Where a model's command wrote it: the command's directory, and for a command of
    several models the setting its directory names (``grid/prior=gaussian``)."""
    where, leaf = run_dir(record), PurePosixPath(record["model"]).name
    if record["command_models"] > 1 and "__seed=" in leaf:
        return f"{where}/{leaf.rsplit('__seed=', 1)[0]}"
    return str(where)


def rows_table(models: pd.DataFrame, records: list[dict[str, Any]]
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of the report, and the models ordered by row (then seed).

    One line per row, in the report's order (by width, method, ``where`` and name):
    ``name``, ``where`` (its command's directory, or its name when it joins several
    commands), ``kind``, ``arch``, ``hidden``, ``epochs``, ``seeds``, ``settings`` (the
    first model's, a dict), ``first`` (the directory of its first seed), ``dirs`` (every
    seed's directory, in the order of the seeds), ``quick`` (a
    ``--quick`` check), ``bbb`` (it has pruning rows, and is no quick check), ``has_val``
    (every model has a validation error), ``val_mean`` (:func:`mean_val_error`),
    ``selection`` and ``chosen``."""
    out = []
    for row, group in models.sort_values(["seed", "line"]).groupby("row", sort=False):
        first = records[group["line"].iloc[0]]
        runs = group.drop_duplicates("run_dir").sort_values("run_dir")
        joined = len(runs) > 1
        name = " + ".join(runs["run_name"]) if joined else runs["run_name"].iloc[0]
        st = first["settings"]
        where = name if joined else runs["run_dir"].iloc[0]
        out.append({"row": row, "name": name, "where": where,
                    "kind": kind(st), "arch": st["arch"], "hidden": st["hidden"],
                    "epochs": first["epochs"], "seeds": len(group), "settings": st,
                    "first": first["model"],
                    "dirs": [records[line]["model"] for line in group["line"]],
                    "quick": st["quick"],
                    "bbb": "pruning" in first and not st["quick"],
                    "has_val": bool(group["val"].notna().all()),
                    "val_mean": mean_val_error(group), "selection": selection(group)})
    rows = pd.DataFrame(out)
    rows["order"] = rows["kind"].map(KIND_ORDER).fillna(9)
    rows = rows.sort_values(["hidden", "order", "where", "name"], kind="stable")
    rows = rows.set_index("row")
    rows["chosen"] = chosen(rows)
    order = {r: k for k, r in enumerate(rows.index)}
    models = models.assign(_order=models["row"].map(order)).sort_values(
        ["_order", "seed", "line"]).drop(columns="_order")
    return rows, models


def mean_val_error(models: pd.DataFrame) -> float:
    """The mean over seeds of the lowest validation error (a run on all 60,000 training
    images has none: its test error at the last epoch stands in, and sorts last)."""
    if models["val"].isna().any():
        return 100.0 + float(np.mean(models["final.test_error_mean"].to_numpy()))
    return float(np.mean(models["val"].to_numpy()))


def selection(models: pd.DataFrame) -> tuple[float, int]:
    """What a row is chosen by: the lowest mean validation error, and at equal errors (to
    1e-6 points: the same number of misclassified images on average; float32 sums
    differ below that) the row with more seeds."""
    return round(mean_val_error(models), 6), -len(models)


def method(row: pd.Series) -> tuple[str, str, int]:
    """What one row is chosen among: the method, the network and its hidden size."""
    return row["kind"], row["arch"], row["hidden"]


def chosen(rows: pd.DataFrame) -> pd.Series:
    """The rows chosen on the validation set: per method, network and hidden size, the
    row with the lowest :func:`selection` (the first of equal ones; rows without a
    validation set are never chosen)."""
    best: dict[tuple, Any] = {}
    for r, row in rows[rows["has_val"]].iterrows():
        key = method(row)
        if key not in best or row["selection"] < rows.at[best[key], "selection"]:
            best[key] = r
    return pd.Series(rows.index.isin(list(best.values())), index=rows.index)


def best_bbb(rows: pd.DataFrame) -> pd.DataFrame:
    """Per BBB kind, network and hidden size, the row with the lowest mean validation
    error (the model chosen as everything else is: never on the test set), in the order
    of their validation errors."""
    bbb = rows[rows["bbb"]]
    ranked = sorted(range(len(bbb)), key=lambda k: bbb["selection"].iloc[k])
    picked: dict[tuple, int] = {}
    for k in ranked:
        picked.setdefault(method(bbb.iloc[k]), k)
    return bbb.iloc[list(picked.values())]


def t975(df: int) -> float:
    """The two-sided 95 % quantile of Student's t with ``df`` degrees of freedom: the
    ``t`` with ``P(|T| <= t) = 0.95``, found by bisection on the closed form of that
    probability for whole degrees of freedom (Abramowitz and Stegun 26.7.3-4)."""
    lo, hi = 0.0, 1000.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_within(mid, df) < 0.95 else (lo, mid)
    return (lo + hi) / 2


def _t_within(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` (a whole number) degrees of freedom."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2:  # odd: (2 / pi) (theta + sin cos (1 + 2/3 cos^2 + 2 4 / (3 5) cos^4 ...))
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        spread = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return 2 / math.pi * (theta + spread)
    for k in range(1, df // 2):  # even: sin (1 + 1/2 cos^2 + 1 3 / (2 4) cos^4 ...)
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return math.sin(theta) * total


def paired_difference(mixture: pd.DataFrame, gaussian: pd.DataFrame
                      ) -> dict[str, float] | None:
    """The scale mixture's test error minus the Gaussian's, seed by seed, over the seeds
    both rows trained (a seed's two models share their initialisation and minibatch
    order, so the per-seed difference is free of most of the seed-to-seed spread): the
    number of seeds, on how many the mixture is lower, the mean difference, its standard
    error and 95 % interval (Student's t), and the mean difference of the validation
    errors. None below two common seeds."""
    m = mixture[mixture["val"].notna()].set_index("seed")
    g = gaussian[gaussian["val"].notna()].set_index("seed")
    seeds = sorted(set(m.index) & set(g.index))
    if len(seeds) < 2:
        return None
    diffs = np.array([m.at[k, "test"] - g.at[k, "test"] for k in seeds])
    mean = float(diffs.mean())
    sd = float(diffs.std(ddof=1))
    se = sd / math.sqrt(len(diffs))
    t = t975(len(diffs) - 1)
    return {"seeds": len(seeds), "lower": int((diffs < 0).sum()), "mean": mean, "se": se,
            "low": mean - t * se, "high": mean + t * se,
            "val_mean": float(np.mean([m.at[k, "val"] - g.at[k, "val"] for k in seeds]))}
