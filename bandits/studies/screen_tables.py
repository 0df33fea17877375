"""The learner screen's summary (:func:`summarise`: mean and standard error per learner and
buffer size, its standing against the reference rows, whether it passes the rule) and its
Markdown table (:func:`markdown`)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bandits.studies.learners import LEARNERS, METRICS, REFERENCES


def acting_share(runs: pd.DataFrame, metric: str) -> pd.Series:
    """Each run's share of ``metric`` under the decisions it acts on (BBB: its Thompson
    samples; the others: greedy)."""
    thompson = runs.get(f"thompson_{metric}")
    greedy = runs[f"greedy_{metric}"]
    return greedy if thompson is None else thompson.where(thompson.notna(), greedy)


def summarise(runs: pd.DataFrame, cfg: Any) -> pd.DataFrame:
    """Mean and standard error over the runs of every learner and buffer size, the acting
    rule's shares (BBB: Thompson samples), its standing against the reference rows of its
    buffer size (``times_oracle``, ``times_half_oracle``; ``vs_ridge``: the paired mean
    difference from ridge regression on the same outcomes over the buffers, with its
    standard error) and whether it passes the rule."""
    runs = runs.assign(acting_never_eaten=acting_share(runs, "never_eaten"),
                       acting_edible_uneaten=acting_share(runs, "edible_uneaten"))
    per_buffer = runs.groupby(["learner", "buffer_size", "buffer"], sort=False)[
        "acting_never_eaten"].mean()
    out = []
    for (name, size), g in runs.groupby(["learner", "buffer_size"], sort=False):
        has_samples = "thompson_never_eaten" in g and g["thompson_never_eaten"].notna().all()
        row: dict[str, Any] = {"learner": name, "agent": g["agent"].iloc[0],
                               "buffer_size": int(size), "runs": len(g),
                               "updates": int(g["updates"].iloc[0]),
                               "acting": "thompson" if has_samples else "greedy"}
        for kind in ("greedy", "thompson"):
            for metric in METRICS:
                v = g.get(f"{kind}_{metric}", pd.Series(math.nan, index=g.index))
                row[f"{kind}_{metric}"] = v.mean()
                row[f"{kind}_{metric}_se"] = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 \
                    else math.nan

        def ref(reference: str, size: int = size) -> float:
            return runs.loc[(runs.learner == reference) & (runs.buffer_size == size),
                            "acting_never_eaten"].mean()

        never, edible_left = g["acting_never_eaten"].mean(), g["acting_edible_uneaten"].mean()
        row["times_oracle"] = never / ref("oracle") if ref("oracle") > 0 else math.inf
        half = ref("oracle-half")
        row["times_half_oracle"] = never / half if half > 0 else math.inf
        diff = (per_buffer.loc[(name, size)] - per_buffer.loc[("ridge", size)]).to_numpy()
        row["vs_ridge"] = diff.mean()
        row["vs_ridge_se"] = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 \
            else math.nan
        row["passes"] = bool(name not in REFERENCES and row["vs_ridge"] < 0
                             and never <= cfg.pass_factor * half
                             and edible_left <= cfg.max_edible_uneaten)
        row["train_seconds"] = g["train_seconds"].sum()
        out.append(row)
    return pd.DataFrame(out)


def _pct(v: float, se: float) -> str:
    if math.isnan(v):
        return ""
    return f"{100 * v:.1f} +- {100 * se:.1f}" if not math.isnan(se) else f"{100 * v:.1f}"


def markdown(table: pd.DataFrame, cfg: Any) -> str:
    """The summary as a Markdown table: shares in %, mean +- s.e. over the runs, the
    reference rows of each buffer size first."""
    head = ("| learner | buffer | settings | acts on | never eaten, poisonous: eats | last "
            "paid +5: eats | last paid -35: eats | edible left uneaten | x oracle | "
            "x half-information oracle | minus ridge (paired) | passes |\n"
            "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
            "| :---: |\n")
    lines = []
    for _, r in table.iterrows():
        learner = REFERENCES.get(r.learner) or LEARNERS.get(r.learner)
        note = learner.note if learner else ""
        reference = r.learner in REFERENCES
        kinds = [("greedy", "greedy" if r.acting == "greedy" else "posterior mean")]
        if r.acting == "thompson":
            kinds.append(("thompson", f"Thompson ({cfg.samples} samples)"))
        for kind, label in kinds:
            cells = [_pct(r[f"{kind}_{m}"], r[f"{kind}_{m}_se"]) for m in METRICS]
            acting = kind == r.acting
            ratios = ([f"{r.times_oracle:.1f}", f"{r.times_half_oracle:.1f}",
                       _pct(r.vs_ridge, r.vs_ridge_se)] if acting else ["", "", ""])
            passes = ("yes" if r.passes else "no") if acting and not reference else ""
            first = kind == "greedy"
            lines.append(f"| {r.learner if first else ''} | "
                         f"{f'{r.buffer_size:,}' if first else ''} | "
                         f"{note if first else ''} | {label} | "
                         + " | ".join(cells + ratios) + f" | {passes} |")
    return head + "\n".join(lines) + "\n"
