"""The pages of the README and the docs with generated tables, and the tables each holds
(:mod:`bandits.tools.doc_tables` writes and checks them)."""

from __future__ import annotations

# the pages with generated tables, and the tables each holds, in order (a table whose
# markers were deleted would otherwise go unchecked)
FILES: dict[str, tuple[str, ...]] = {
    "README.md": ("quick-output", "figure6-heldout", "wheel-heldout", "figure6", "table1",
                  "table2"),
    "docs/index.md": ("figure6-heldout", "figure6"),
    "docs/bandit-results.md": ("figure6-heldout", "figure6", "figure6-preset",
                               "figure6-memory", "quick", "showdown-brief"),
    "docs/agents-compared.md": ("showdown-brief",),
    "results/mushroom/README.md": ("quick-detail", "showdown"),
    "results/regression/README.md": ("regression",),
    "results/mushroom/memory-20k/README.md": ("memory-20k",),
    "results/mushroom/memory-20k/decay-0.3-50k/README.md": ("decay-pilot", "decay-pilot-50k"),
    "results/mushroom/memory-20k/decay-0.3-50k-greedy/README.md": ("figure6-decay",),
    "results/mushroom/memory-horizon/README.md": ("figure6-memory",),
    "results/mushroom/memory-decay-0.3/README.md": ("figure6-preset",),
    "results/wheel/heldout/README.md": ("wheel-heldout",),
    "results/mushroom/heldout/README.md": ("figure6-heldout",),
    "results/bench/README.md": ("bench-against",),
    "docs/speed.md": ("bench-against", "bench-floor"),
    "results/bench/floor/README.md": ("bench-floor",),
    "results/neural-bandits/README.md": ("mushroom-reference-1e-5", "mushroom-reference",
                                         "mushroom-grid", "mnist-reference"),
    "results/neural-bandits/mnist-reference/README.md": ("mnist-reference", "mnist-widths"),
    "results/neural-bandits/mushroom-grid/README.md": (
        "mushroom-grid-neuralucb", "mushroom-grid-neuralts", "mushroom-grid-baselines",
        "mushroom-grid"),
    "results/neural-bandits/mnist-nu/README.md": ("mnist-nu-screen", "mnist-nu-widths",
                                                  "mnist-nu-final"),
}
