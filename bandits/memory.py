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
Exact counts over every step, computed from the run's per-step record at the end;
``python -m bandits.diagnose`` reads them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bandits.regret import phase_length

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
