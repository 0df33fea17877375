"""What each decision could remember: the memorisation record of ``memory.csv``.

On Mushroom every context is one of 8124 mushrooms, each shown again and again, and
eating a poisonous one pays -35 or +5 at even odds. A reward network that *averages*
the noisy outcomes over similar mushrooms predicts about -15 for eating any poisonous
one; a network that *memorises* predicts what that mushroom paid the last time it was
eaten. The two differ in where the greedy mistakes fall: a memorising network eats the
poisonous mushrooms last seen paying +5 and avoids those last seen paying -35.

:func:`memory_frame` counts, per agent, seed and phase (the windows of ``phases.csv``),
the decisions by what the run itself had seen of the item shown: whether it is edible,
the reward its last eating paid (empty: never eaten before by this run), and whether
that eating is still in the replay buffer. ``shown`` decisions, ``eaten`` of them.
Exact counts over every step, computed from the run's per-step record at the end.
``python -m bandits.diagnose`` reads them back (:func:`check_memory` refuses a file cut
short) and writes :func:`memorisation`'s table, ``memorisation.csv``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from agents import SPECS
from bandits.records.regret import phase_length
from bandits.records.tables import TableError

MEMORY_COLUMNS = ["agent", "seed", "start", "end", "edible", "last_eaten_reward",
                  "in_buffer", "shown", "eaten"]


def last_eaten(item: np.ndarray, eaten: np.ndarray, reward: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """For every step ``t`` of one run: the reward the last eating of ``item[t]`` before
    ``t`` paid (NaN if never), and that eating's step (-1 if never)."""
    n = len(item)
    frame = pd.DataFrame({"item": item, "t": np.arange(n),
                          "paid": np.where(eaten, reward, np.nan),
                          "at": np.where(eaten, np.arange(n), np.nan)})
    by_item = frame.sort_values(["item", "t"], kind="stable").groupby("item", sort=False)
    before = by_item[["paid", "at"]].shift(1)  # strictly before t
    before = before.groupby(frame.loc[before.index, "item"], sort=False).ffill()
    before = before.reindex(np.arange(n))
    return before["paid"].to_numpy(), before["at"].fillna(-1).to_numpy(np.int64)


def memory_frame(agents: list[str], seeds: list[int], action: np.ndarray,
                 reward: np.ndarray, item: np.ndarray, optimal_action: np.ndarray,
                 buffer_size: int, eat: int = 1) -> pd.DataFrame:
    """The counts of ``memory.csv`` from per-step arrays ``(agents, seeds, steps)``:
    ``action``, ``reward``, ``item`` (the mushroom shown; -1 where unknown) and
    ``optimal_action`` (``eat`` exactly when the mushroom is edible)."""
    n = action.shape[-1]
    if n == 0 or (item < 0).any():
        return pd.DataFrame(columns=MEMORY_COLUMNS)
    w = phase_length(n)
    phase = np.arange(n) // w
    parts = []
    for k, agent in enumerate(agents):
        for r, seed in enumerate(seeds):
            eaten = action[k, r] == eat
            paid, at = last_eaten(item[k, r], eaten, reward[k, r])
            f = pd.DataFrame({
                "phase": phase, "edible": optimal_action[k, r] == eat,
                "last_eaten_reward": paid,
                "in_buffer": np.where(at < 0, pd.NA, np.arange(n) - at <= buffer_size),
                "eaten": eaten})
            g = (f.groupby(["phase", "edible", "last_eaten_reward", "in_buffer"],
                           dropna=False, sort=True)["eaten"]
                 .agg(shown="size", eaten="sum").reset_index())
            g.insert(0, "agent", agent)
            g.insert(1, "seed", seed)
            g.insert(2, "start", g.pop("phase") * w + 1)
            g.insert(3, "end", np.minimum(g["start"] - 1 + w, n))
            parts.append(g)
    out = pd.concat(parts, ignore_index=True)
    out["eaten"] = out["eaten"].astype(np.int64)
    return out[MEMORY_COLUMNS]


def standard_error(x: pd.Series) -> float:
    """The standard error of the mean of ``x`` (0 for a single value)."""
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def epsilon_of(agent: str) -> float:
    """The share of an agent's actions taken at random (epsilon-greedy agents; else 0)."""
    spec = SPECS.get(agent)
    return float(spec.overrides.get("epsilon", 0.0) if spec is not None else 0.0)


def memorisation(memory: pd.DataFrame, last: int, n_actions: int = 2) -> pd.DataFrame:
    """Per agent and category of ``memory.csv`` (edible or not, the reward of the last
    eating, whether it is in the buffer), over the last ``last`` steps (whole phases),
    summed over seeds: ``shown``, ``eaten``, ``mistake_rate`` (poisonous: eaten; edible:
    left), ``own_mistake_rate`` (the rate among the agent's own choices: a random action
    of an epsilon-greedy agent is a mistake with probability ``1 / n_actions``, so
    ``(rate - epsilon / n_actions) / (1 - epsilon)``, clipped to [0, 1]),
    ``share_of_own_mistakes``
    (of the agent's own mistakes on that class of mushroom, the share in this category)
    and ``mistake_ratestandard_error`` (over seeds, where the category was shown to every seed)."""
    end = int(memory["end"].max())
    m = memory[memory["start"] > end - last].copy()
    m["history"] = np.where(m["last_eaten_reward"].isna(), "never eaten",
                            "last paid " + m["last_eaten_reward"].map("{:g}".format))
    m["in_buffer"] = m["in_buffer"].map({True: "yes", False: "no", "True": "yes",
                                         "False": "no"}).fillna("")
    m["mistakes"] = np.where(m["edible"], m["shown"] - m["eaten"], m["eaten"])
    keys = ["agent", "edible", "history", "in_buffer"]
    per_seed = m.groupby([*keys, "seed"], sort=False)[["shown", "mistakes", "eaten"]].sum()
    per_seed["rate"] = per_seed["mistakes"] / per_seed["shown"]
    total = per_seed.groupby(level=keys, sort=False)[["shown", "eaten", "mistakes"]].sum()
    sem = per_seed.groupby(level=keys, sort=False)["rate"].agg(standard_error)
    t = total.join(sem.rename("mistake_ratestandard_error")).reset_index()
    t["mistake_rate"] = t["mistakes"] / t["shown"]
    eps = t["agent"].map(epsilon_of)
    t["own_mistake_rate"] = ((t["mistake_rate"] - eps / n_actions) / (1 - eps)).clip(0, 1)
    own = t["own_mistake_rate"] * t["shown"]
    t["share_of_own_mistakes"] = own / own.groupby([t["agent"], t["edible"]]).transform("sum")
    t.insert(1, "from_step", int(m["start"].min()))
    t.insert(2, "to_step", end)
    t = t.sort_values(["agent", "edible", "history", "in_buffer"], kind="stable",
                      key=lambda c: c.map({a: i for i, a in enumerate(m["agent"].unique())})
                      if c.name == "agent" else c)
    return t[["agent", "from_step", "to_step", "edible", "history", "in_buffer", "shown",
              "eaten", "mistake_rate", "mistake_ratestandard_error", "own_mistake_rate",
              "share_of_own_mistakes"]].reset_index(drop=True)


def memorisation_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per agent, the poisonous mushrooms only: the own-choice eating rate of those never
    eaten before, of those last seen paying the high and the low reward (buffer or not),
    and the share of the agent's own poisonous bites on mushrooms last seen paying the
    high reward."""
    p = table[~table["edible"].astype(bool)]
    rows = []
    for agent, g in p.groupby("agent", sort=False):
        by = g.groupby("history")[["shown", "eaten"]].sum()
        own = (g["own_mistake_rate"] * g["shown"]).groupby(g["history"]).sum()
        row = {"agent": agent}
        for h in by.index:
            row[f"eats: {h}"] = own[h] / by.loc[h, "shown"]
        high = [h for h in by.index if h.startswith("last paid") and float(h.split()[-1]) > 0]
        row["own bites on last-paid-high"] = own[high].sum() / own.sum() if own.sum() else 0.0
        rows.append(row)
    return pd.DataFrame(rows)


def check_memory(memory: pd.DataFrame, phases: pd.DataFrame, path: Path) -> None:
    """Refuse a ``memory.csv`` that does not count every step of ``phases.csv``: each
    (agent, seed, phase) of the run must be there, its decisions ``shown`` adding up to
    the phase's length (a file cut short, even at a line boundary, does not)."""
    keys = ["agent", "seed", "start", "end"]
    shown = memory.groupby(keys)["shown"].sum()
    want = phases.set_index(keys)
    want = (want.index.get_level_values("end") - want.index.get_level_values("start") + 1
            ).to_series(index=want.index)
    if set(shown.index) != set(want.index):
        missing = sorted(set(want.index) - set(shown.index), key=str)
        what = (f"has no rows for agent {missing[0][0]}, seed {missing[0][1]}, steps "
                f"{missing[0][2]}-{missing[0][3]}" if missing else
                "has rows for steps, agents or seeds that phases.csv does not have")
        raise TableError(f"{path} {what}: it is cut short or from another run; run "
                         "bandits.run again to rewrite it")
    short = shown[shown != want.loc[shown.index]]
    if len(short):
        agent, seed, start, end = short.index[0]
        raise TableError(f"{path} counts {int(short.iloc[0])} decisions for agent {agent}, "
                         f"seed {seed}, steps {start}-{end}, not {end - start + 1}: it is "
                         "cut short or from another run; run bandits.run again to rewrite it")
