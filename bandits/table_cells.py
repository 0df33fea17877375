"""Cells shared by the generated result tables (:mod:`bandits.doc_tables`): the agents'
names as the tables print them, bold for the best entry, and the ranking's "next"
column in those names."""

from __future__ import annotations

import re

NAMES = {"linfullpost": "LinFullPost", "bbb-lrt": "BBB, local reparameterisation",
         "bbb": "BBB", "eps1": "1 % greedy", "neurallinear": "NeuralLinear",
         "dropout": "Dropout TS (p 0.2)", "greedy": "greedy", "neuralucb": "NeuralUCB",
         "linucb": "LinUCB", "eps5": "5 % greedy", "bootstrap": "Bootstrapped NN (5 heads)",
         "neuralts": "NeuralTS", "uniform": "uniform"}


def bold_if(text: str, flag: bool) -> str:
    return f"**{text}**" if flag else text


def next_label(text: str) -> str:
    """The ranking's paired difference to the next agent (:func:`bandits.regret.ranking`),
    without its seed count and with the agent's printed name."""
    nxt = re.sub(r" at \d+ seeds?$", "", str(text))
    for agent, name in sorted(NAMES.items(), key=lambda kv: -len(kv[0])):
        if nxt.endswith(f" {agent}"):
            return nxt[: -len(agent)] + name
    return nxt
