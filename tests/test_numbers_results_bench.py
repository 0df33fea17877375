"""Numbers the hand-written results pages of the benchmarks (every README.md under
results/bench) and of the toy regression (results/regression/README.md) quote, checked
against the shipped files next to each page, as tests/test_numbers_speed.py checks
docs/speed.md: a rerun that changes a file without its page fails here.

A hand-written table copied from a file is checked row by row (:data:`TABLES`): each row
of the page must be one row its file gives, every cell's numbers as the page rounds them
and its other text the same, and the table must hold every row of the file. The prose is
checked by :data:`QUOTES` (snippets built from the files), and every other number of a
page's prose must be a setting or a citation declared in :data:`SETTINGS`, or one of the
few measurements no shipped file holds (:data:`UNRECORDED`), each the page's own record."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import page_numbers
import pandas as pd
from page_numbers import REPO, flat, prose_numbers, row_cells, rows_of, snippets, uncovered
from test_numbers_speed import AGENT_NAMES, _host, _reference_minutes, _weights_per_run

BENCH = "results/bench"
TOP = f"{BENCH}/README.md"
PER_STEP, PAPERS = f"{BENCH}/agents-per-step", f"{BENCH}/agents-per-step-papers"
COMPACT, KERNELS = f"{BENCH}/compact-buffer", f"{BENCH}/kernels"
H100, H200 = f"{BENCH}/cuda-h100", f"{BENCH}/cuda-h200"
REGRESSION = "results/regression"
GC = "results/bench/gc"
H100_RUN = "results/mushroom/paper-preset-h100"
REFERENCE = "results/neural-bandits/mnist-reference"

PAGES = tuple(sorted(str(p.relative_to(REPO)) for p in (REPO / BENCH).rglob("README.md"))) \
    + (f"{REGRESSION}/README.md",)


def _json(path: str) -> dict:
    return json.loads((REPO / path).read_text(encoding="utf-8"))


def _csv(path: str, index: str) -> pd.DataFrame:
    return pd.read_csv(REPO / path).set_index(index)


def _paper_updates() -> int:
    """The paper protocol's updates per agent and seed (50,000 steps x 64 updates)."""
    from bandits.tools.bench import PAPER_UPDATES
    from bandits.tools.bench_commands import PAPER_STEPS

    return PAPER_STEPS * PAPER_UPDATES


# ---------------------------------------------------------------- hand-written tables

# A number of a table cell: thousands separators, decimals and an exponent kept
# (``5.66e-05``); a unit or an ``x`` after it is the cell's text.
NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?")


@dataclass(frozen=True)
class Cell:
    """What a cell must hold: its text with ``{}`` for each number, and the numbers."""

    template: str
    values: tuple[float, ...] = ()


def _c(template: str, *values: float) -> Cell:
    return Cell(template, tuple(float(v) for v in values))


@dataclass(frozen=True)
class HandTable:
    """The hand-written table of ``page`` whose first line is ``header``: ``rows`` gives,
    from the files, every row it must hold, by the text of its first ``key`` cells, as the
    cells of the rest of the row."""

    page: str
    header: str
    rows: Callable[[], dict[str, list[Cell]]]
    key: int = 1


def _same(doc: str, value: float) -> bool:
    """Whether the page's number ``doc`` is ``value`` as the page rounds it."""
    m = re.fullmatch(r"[\d,]+(?:\.(\d+))?(?:e([-+]?\d+))?", doc)
    assert m, doc
    half = 0.5 * 10.0 ** (int(m[2] or 0) - len(m[1] or ""))
    return abs(float(doc.replace(",", "")) - value) <= half * (1 + 1e-9)


def _cell_ok(cell: str, want: Cell) -> bool:
    found = NUMBER.findall(cell)
    return (NUMBER.sub("{}", cell) == want.template and len(found) == len(want.values)
            and all(map(_same, found, want.values)))


def _table_errors(spec: HandTable, text: str) -> tuple[int, list[str]]:
    """How many rows of the page's table ``spec`` checked, and what is wrong with it: rows
    that are no row of their file, and rows of the file the table leaves out."""
    want, rows, errors, seen = spec.rows(), rows_of(text, spec.header), [], []
    for _, line in rows:
        cells = row_cells(line)
        key, rest = " | ".join(cells[:spec.key]), cells[spec.key:]
        if key not in want:
            errors.append(f"{line.strip()} (no row {key!r} in its file)")
            continue
        seen.append(key)
        if len(rest) != len(want[key]) or not all(map(_cell_ok, rest, want[key])):
            errors.append(f"{line.strip()} (the file: {want[key]})")
    errors += [f"the table leaves out the file's row {k!r}" for k in want if k not in seen]
    return len(rows), errors


def _per_run(seconds: float) -> Cell:
    """A time per run and update as the pages write it: in ms, or in us below 0.1 ms."""
    return _c("{} ms", 1e3 * seconds) if seconds >= 1e-4 else _c("{} us", 1e6 * seconds)


def _bench_rows(folder: str) -> Callable[[], dict[str, list[Cell]]]:
    """The rows of a training-step benchmark (``bench.csv``): each population's per-agent
    loop and fused step, the speed-up the ratio of the two."""
    def rows():
        t = _csv(f"{folder}/bench.csv", "variant")
        (runs,) = set(t["runs_per_agent"])
        labels = {"bbb": (f"BBB ({runs} runs)",) * 2,
                  **{k: (f"{name} ({runs} runs)",) * 2 for k, name in AGENT_NAMES.items()},
                  # the fused step before each agent was its own population (GPU files)
                  "greedy+eps1+eps5": (f"greedy + 1 % + 5 % (3 x {runs} runs)",
                                       f"greedy + 1 % + 5 % (one population of {3 * runs})"),
                  "(all agents)": ("all four agents",) * 2}
        assert {v.split(" ", 1)[1] if v.startswith("fused ") else v.split("loop ", 1)[1]
                for v in t.index} <= set(labels), t.index  # every row has its label
        out = {}
        for k, (loop_label, fused_label) in labels.items():
            if f"fused {k}" not in t.index:
                continue
            loop, fused = t.loc[f"per-agent loop {k}"], t.loc[f"fused {k}"]
            out[f"per-agent loop, {loop_label}"] = [
                _c("{}", loop["seconds_per_update"]), _per_run(loop["seconds_per_run_update"]),
                _c("")]
            out[f"fused, {fused_label}"] = [
                _c("{}", fused["seconds_per_update"]), _per_run(fused["seconds_per_run_update"]),
                _c("**{}x**", loop["seconds_per_update"] / fused["seconds_per_update"])]
        return out
    return rows


def _scaling_rows() -> dict[str, list[Cell]]:
    from bandits.tools.bench_commands import PAPER_STEPS

    t = _csv(f"{BENCH}/scaling.csv", "workers")["seconds_per_step"]
    out = {}
    for w, s in t.items():
        hours = s * PAPER_STEPS / 3600  # as bench_commands.scaling projects
        out[str(w)] = ([_c("{}", s), _c("{}", 1), _c("{} h", hours)] if w == 1 else
                       [_c("{}", s), _c("**{}x**", t[1] / s), _c("**{} h**", hours)])
    return out


# the layers of the gradient-variance table: their inputs and outputs, as the page names
# them (the number of weights the file gives must be their product)
DENSE = {("lenet5", 3): (256, 120), ("lenet5", 4): (120, 84), ("lenet5", 5): (84, 10),
         ("mlp", 1): (784, 400), ("mlp", 2): (400, 400), ("mlp", 3): (400, 10)}


def _variance_rows() -> dict[str, list[Cell]]:
    t = pd.read_csv(REPO / BENCH / "gradient_variance.csv")
    out = {}
    for (arch, layer), g in t.groupby(["arch", "layer"], sort=False):
        g = g.set_index("estimator")
        kind, weights = g["kind"].iloc[0], int(g["weights"].iloc[0])
        if kind == "BayesConv2d":
            name = f"conv {layer} ({weights:,}{' weights' if layer == 1 else ''})"
        else:
            a, b = DENSE[arch, layer]
            assert a * b == weights, (arch, layer, weights)
            name = f"dense {a}-{b}" if arch == "lenet5" else f"{a}-{b}"
        net = {"lenet5": "LeNet-5", "mlp": "MLP 2 x 400"}[arch]
        flip = "**{}**" if kind == "BayesConv2d" else "{}"  # the convolutions' in bold
        out[f"{net} | {name}"] = [_c("{}", g.loc["reparam", "gradient_variance"]),
                                  _c("{}", g.loc["lrt", "relative_to_reparam"]),
                                  _c(flip, g.loc["flipout", "relative_to_reparam"])]
    return out


def _workers_rows() -> dict[str, list[Cell]]:
    t = _csv(f"{BENCH}/mnist_workers.csv", "workers")
    one = t.loc[1, "wall_seconds_median"]
    out = {}
    for w, r in t.iterrows():
        rounds = [float(s) for s in r["wall_seconds"].split()]
        out[str(w)] = [_c("{}", r["wall_seconds_median"]),
                       _c(", ".join("{}" for _ in rounds), *rounds),
                       _c("yes" if r["same_bytes_as_1_worker"] else "no"),
                       _c("") if w == 1 else _c("**{}x**", one / r["wall_seconds_median"])]
    return out


def _per_step_rows() -> dict[str, list[Cell]]:
    t = _csv(f"{PER_STEP}/agents_per_step.csv", "agent")
    return {a: [_c("{}", r[c]) for c in ("seconds_act", "seconds_update", "seconds_per_step",
                                         "minutes_per_10000_steps")]
            for a, r in t.iterrows()}


def _papers_rows() -> dict[str, list[Cell]]:
    after, before = (_csv(f"{PAPERS}/{n}.csv", "agent") for n in ("agents_per_step", "before"))
    assert list(after.index) == list(before.index)
    out = {}
    for a in after.index:
        b, n = before.loc[a], after.loc[a]
        out[a] = [_c("{}", 1e3 * b["seconds_act"]), _c("{}", 1e3 * n["seconds_act"]),
                  _c("{}", 1e3 * b["seconds_update"]), _c("{}", 1e3 * n["seconds_update"]),
                  _c("{}", b["minutes_per_papers_run"]), _c("{}", n["minutes_per_papers_run"]),
                  _c("{}", b["minutes_per_papers_run"] / n["minutes_per_papers_run"])]
    return out


KERNEL_ROWS = {"python -m bandits.run (the default command)": "the default command",
               "fused training step (bandits.bench)": "the fused training step"}


KERNEL_MODES = ("pinned", "native", "mkl_strict")  # the page's columns, in its order


def _kernels_rows() -> dict[str, list[Cell]]:
    t = _csv(f"{KERNELS}/kernels.csv", "command")
    out = {}
    for command, name in KERNEL_ROWS.items():
        r = t.loc[command]
        each = {k: [float(s) for s in r[f"{k}_each"].split()] for k in KERNEL_MODES}
        out[name] = [_c(r["unit"]),
                     *(_c("{} (" + ", ".join("{}" for _ in each[k]) + ")", r[k], *each[k])
                       for k in KERNEL_MODES),
                     *(_c("{}", r[k] / r["native"]) for k in KERNEL_MODES if k != "native")]
    return out


def _threads_rows() -> dict[str, list[Cell]]:
    t = pd.read_csv(REPO / BENCH / "threads_under_load.csv")
    return {f"{r['busy_processes']} | {r['variant']}": [
        _c("{}", r["seconds"]), _c("{}", r["load_before"]),
        _c("yes" if r["wait_policy_same_bytes"] else "no")] for _, r in t.iterrows()}


TABLES = [
    HandTable(TOP, "| one thread | seconds per update | per run and update | speed-up |",
              _bench_rows(BENCH)),
    HandTable(TOP, "| workers | seconds per step | speed-up | paper protocol (50,000 steps), "
                   "projected |", _scaling_rows),
    HandTable(TOP, "| network | layer | reparam | lrt / reparam | flipout / reparam |",
              _variance_rows, key=2),
    HandTable(TOP, "| workers | wall time, median (s) | rounds (s) | same bytes as 1 worker "
                   "| speed-up |", _workers_rows),
    HandTable(f"{PER_STEP}/README.md", "| agent | act (s) | update (s) | step (s) | minutes "
                                       "per 10,000 steps |", _per_step_rows),
    HandTable(f"{PAPERS}/README.md", "| agent | act before (ms) | act after (ms) | 16 updates "
                                     "before (ms) | after (ms) | papers' run before (min) | "
                                     "after (min) | ratio |", _papers_rows),
    HandTable(f"{H100}/README.md", "| | seconds per update | per run and update | speed-up |",
              _bench_rows(H100)),
    HandTable(f"{H200}/README.md", "| | seconds per update | per run and update | speed-up |",
              _bench_rows(H200)),
    HandTable(f"{KERNELS}/README.md", "| command | unit | pinned (each round) | native (each "
                                      "round) | `mkl_strict` (each round) | pinned / native | "
                                      "`mkl_strict` / native |", _kernels_rows),
    HandTable(TOP, "| busy processes | variant | seconds, one epoch | load average before | "
                   "numbers the same under either wait policy |", _threads_rows, key=2),
]


test_every_row_of_a_hand_written_table_is_a_row_of_its_file = page_numbers.table_test(
    TABLES, _table_errors, "are not their file's")


def test_a_changed_number_fails_its_row():
    """The table check can fail: a number moved on the page, a row of another agent's
    numbers, a bold mark lost or a row left out each break it."""
    spec = next(s for s in TABLES if s.page == f"{PAPERS}/README.md")
    text = (REPO / spec.page).read_text(encoding="utf-8")
    (_, first), (_, second) = rows_of(text, spec.header)[:2]
    moved = first.replace(row_cells(first)[1], f"{float(row_cells(first)[1]) + 0.1:.1f}", 1)
    assert _table_errors(spec, text.replace(first, moved))[1]
    swapped = "| " + " | ".join(row_cells(first)[:1] + row_cells(second)[1:]) + " |"
    assert _table_errors(spec, text.replace(first, swapped))[1]
    assert _table_errors(spec, text.replace(first + "\n", ""))[1]
    top = TABLES[0]
    text = (REPO / top.page).read_text(encoding="utf-8")
    _, fused = rows_of(text, top.header)[1]
    assert _table_errors(top, text.replace(fused, fused.replace("**", "")))[1]


# ---------------------------------------------------------------- the prose

# results/bench/README.md: the training step on a CPU, the workers, the estimators'
# gradient variance, lower-precision products


def _two_threads() -> str:
    t = _csv(f"{BENCH}/threads-2/bench.csv", "variant")
    s = t["seconds_per_update"]
    ratio = {k: s[f"per-agent loop {k}"] / s[f"fused {k}"]
             for k in ("(all agents)", "bbb", *AGENT_NAMES)}
    one = _csv(f"{BENCH}/bench.csv", "variant")["seconds_per_update"]
    greedy = [ratio[k] for k in AGENT_NAMES]
    return (f"With two threads (`threads-2/`): {ratio['(all agents)']:.2f}x for all four "
            f"agents (BBB {ratio['bbb']:.2f}x, the epsilon-greedy agents "
            f"{min(greedy):.2f}-{max(greedy):.2f}x), "
            f"{1e3 * t.loc['fused (all agents)', 'seconds_per_run_update']:.2f} ms per run "
            "and update: the fused step of the four agents takes "
            f"{s['fused (all agents)'] / one['fused (all agents)']:.1f} times as long as with "
            "one thread.")


def _one_thread_ratio(k: str) -> float:
    s = _csv(f"{BENCH}/bench.csv", "variant")["seconds_per_update"]
    return s[f"per-agent loop {k}"] / s[f"fused {k}"]


def _where_the_time_goes() -> str:
    import envs
    from agents import AgentConfig

    contexts, actions = envs.SHAPES["mushroom"]
    sizes = [contexts + actions, *AgentConfig().hidden, 1]  # the reward network's widths
    weights = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
    greedy = [_one_thread_ratio(k) for k in AGENT_NAMES]
    return (f"work per update ({min(greedy):.1f}-{max(greedy):.1f}x). BBB's update also "
            f"samples {weights:,} weights per run")


def _paper_protocol() -> str:
    one, two = (_csv(f"{f}/bench.csv", "variant")["seconds_per_update"]
                for f in (BENCH, f"{BENCH}/threads-2"))
    hours = {k: _paper_updates() * v / 3600 for k, v in (  # as bandits.bench projects
        ("fused", one["fused (all agents)"]), ("loop", one["per-agent loop (all agents)"]),
        ("two", two["fused (all agents)"]))}
    scaling = _csv(f"{BENCH}/scaling.csv", "workers").loc[1, "seconds_per_step"]
    from bandits.tools.bench_commands import PAPER_STEPS

    return (f"**{hours['fused']:.1f} hours** on one CPU core with the fused step "
            f"({hours['loop']:.1f} hours with the per-agent loop), {hours['two']:.1f} hours "
            "with two threads. The `--scaling` measurement below times whole steps end to "
            "end, acting and the environment included, at two horizons and projects "
            f"{scaling * PAPER_STEPS / 3600:.1f} hours on one core.")


def _flipout_ranges() -> str:
    t = pd.read_csv(REPO / BENCH / "gradient_variance.csv")
    t = t[t["estimator"] == "flipout"].groupby("arch")["relative_to_reparam"]
    lo, hi = t.min(), t.max()
    return (f"Flipout's gradient variance is {lo['lenet5']:.2f}-{hi['lenet5']:.2f} of plain "
            f"reparameterisation's in every layer of LeNet-5, the convolutions included, and "
            f"{lo['mlp']:.2f}-{hi['mlp']:.2f} in the MLP's")


def _matmul_precision() -> str:
    fused = {p: _csv(f"{BENCH}/matmul-precision/{p}/bench.csv", "variant").loc[
        "fused (all agents)", "seconds_per_update"]
        for p in ("highest-round1", "highest-round2", "medium-round1", "medium-round2")}
    slower = all(fused[f"medium-round{r}"] > fused[f"highest-round{r}"] for r in (1, 2))
    return (f"float32 {fused['highest-round1']:.4f} and {fused['highest-round2']:.4f}, "
            f"bfloat16 {fused['medium-round1']:.4f} and {fused['medium-round2']:.4f}. "
            + ("Slower in both pairs" if slower else "(not slower in both pairs)"))


def _busy_threads() -> str:
    """What two busy processes cost each 2-thread variant, and the passive wait alone."""
    t = pd.read_csv(REPO / BENCH / "threads_under_load.csv").set_index(
        ["busy_processes", "variant"])["seconds"]
    active, passive = "2 threads, active wait", "2 threads, passive wait"
    return (f"two spinning threads took {t[(2, active)] / t[(0, active)]:.1f} times their "
            f"idle time, two sleeping ones {t[(2, passive)] / t[(0, passive)]:.1f}\ntimes "
            f"(under 2x), about as fast as one thread. Alone, the\n"
            f"sleeping threads took {100 * (t[(0, passive)] / t[(0, active)] - 1):.0f} % "
            "longer than spinning ones.")


def _against_memory() -> str:
    t = pd.read_csv(REPO / BENCH / "against" / "memory.csv").set_index("side")
    now, then = t.loc["this commit, native"], t.loc["c3e3b89, its default"]
    return (f"{now['max_rss_kb'] / 1000:.0f} MB at this checkout (in "
            f"{now['wall_seconds']:.1f} s)\nagainst {then['max_rss_kb'] / 1000:.0f} MB at "
            f"`c3e3b89` ({then['wall_seconds']:.1f} s)")


TOP_QUOTES = [
    _two_threads, _where_the_time_goes, _busy_threads, _against_memory,
    lambda: f"skips the cost's value, hence {_one_thread_ratio('bbb'):.1f}x.",
    _paper_protocol,
    lambda: f"worker; {_json(f'{BENCH}/scaling.json')['wall_seconds']:.0f} s in all.",
    lambda: f"wall time {_json(f'{BENCH}/gradient_variance.json')['wall_seconds']:.1f} s.",
    _flipout_ranges, _matmul_precision,
    lambda: (f"Machine: a 2-core {_host(f'{BENCH}/bench.json')} (AVX-512), torch "
             f"{_json(f'{BENCH}/bench.json')['versions']['torch'].removesuffix('+cpu')} CPU "
             f"build, the cores otherwise idle; {_json(f'{BENCH}/bench.json')['wall_seconds']:.0f}"
             f" s with one thread, {_json(f'{BENCH}/threads-2/bench.json')['wall_seconds']:.0f}"
             " s with two."),
]


# agents-per-step: every agent's step on MNIST-shaped contexts


def _cheapest_learners() -> str:
    t = _csv(f"{PER_STEP}/agents_per_step.csv", "agent")
    (dim,) = set(t["context_dim"])
    step = t["seconds_per_step"].drop("uniform")  # uniform learns nothing
    assert set(step.nsmallest(2).index) == {"linfullpost", "linucb"}, step.nsmallest(2)
    return (f"arm's {dim + 1} x {dim + 1} design up to date by rank-one (Sherman-Morrison) "
            f"updates: {step['linfullpost']:.3f} s and {step['linucb']:.3f} s per step, the "
            "cheapest learning agents here.")


WORDS = {12: "twelve", 13: "thirteen", 14: "fourteen"}


def _all_agents() -> str:
    t = _csv(f"{PER_STEP}/agents_per_step.csv", "agent")
    step = t["seconds_per_step"].sum()
    return (f"one step of every agent, five seeds each, takes about {step:.2f} s, so 10,000 "
            f"steps of all {WORDS[len(t)]} agents would take about {step * 10_000 / 3600:.1f} "
            "hours")


PER_STEP_QUOTES = [
    lambda: f"Wall time: {_json(f'{PER_STEP}/agents_per_step.json')['wall_seconds']:.1f} s "
            "of timing.",
    _cheapest_learners, _all_agents,
]


# agents-per-step-papers: under the NeuralUCB and NeuralTS papers' MNIST set-up


def _schedule() -> str:
    from bandits.tools.bench_agents import HORIZON, TRAIN_ALWAYS_UNTIL, TRAIN_EVERY

    calls = TRAIN_ALWAYS_UNTIL + (HORIZON - TRAIN_ALWAYS_UNTIL) // TRAIN_EVERY
    updates = _json(f"{PAPERS}/agents_per_step.json")["updates_per_step"]
    return f"{HORIZON:,} acts and {calls:,} training calls of {updates} updates)"


def _reproduction() -> str:
    cfg, after, before = _reference_minutes()  # "the two cores"
    return (f"add up to {after.sum():.0f} minutes of one core for a {cfg['steps']:,}-round "
            f"run, against {before.sum():.0f} before. On the two cores that is about "
            f"{after.sum() / cfg['workers']:.0f} minutes if the work splits evenly, but BBB "
            f"alone is {after['bbb']:.0f} of them.")


def _per_weight() -> str:
    runs = _json(f"{PAPERS}/agents_per_step.json")["runs_per_agent"]
    weights = _weights_per_run()
    millions = f"{runs * weights / 1e6:.1f} million weights"
    return (f"Adam over its {millions} ({runs} runs x {weights:,}). BBB's is mostly drawing, "
            f"and taking the softplus of, {millions} per update")


def _projected_worker() -> str:
    """The seconds per round this benchmark projects for the reference run's worker that
    held the networks (every agent but BBB's worker's)."""
    parts = _json(f"{REFERENCE}/config.json")["parts"]
    (networks,) = [p["agents"] for p in parts if "bbb" not in p["agents"]]
    t = _csv(f"{PAPERS}/agents_per_step.csv", "agent")
    return f"not the {t.loc[networks, 'seconds_per_step'].sum():.1f} s projected here"


PAPERS_QUOTES = [
    _schedule,
    lambda: f"Wall time {_json(f'{PAPERS}/agents_per_step.json')['wall_seconds']:.0f} s.",
    _reproduction, _per_weight, _projected_worker,
]


# compact-buffer: its table is the only record of the measurement (see UNRECORDED)


def _compact_contexts() -> str:
    import envs

    features, _ = envs.SHAPES["mushroom"]
    return f"its {features} floats ({4 * features} bytes)"  # float32


def test_the_compact_buffers_ratios_are_their_rows():
    """The last column of the compact buffer's table divides its row's two numbers."""
    text = (REPO / COMPACT / "README.md").read_text(encoding="utf-8")
    rows = rows_of(text, "| | before | after | after / before |")
    assert len(rows) == 3
    for _, line in rows:
        label, before, after, ratio = row_cells(line)
        b, a = (float(NUMBER.findall(c)[0].replace(",", "")) for c in (before, after))
        want = f"1/{b / a:.0f}" if a / b < 0.1 else f"{a / b:.2f}"
        assert ratio == want, f"{label}: {ratio} (the row's numbers give {want})"


# cuda-h100, cuda-h200: the training step on a GPU


def _gpu(folder: str) -> tuple[pd.Series, dict]:
    return _csv(f"{folder}/bench.csv", "variant")["seconds_per_update"], \
        _json(f"{folder}/bench.json")


def _gpu_wall(folder: str) -> str:
    _, info = _gpu(folder)
    return f"{info['versions']['torch']}; wall time {info['wall_seconds']:.1f} s."


def _gpu_projection(folder: str, digits: int) -> str:
    s, info = _gpu(folder)
    fused, loop = (_paper_updates() * s[f"{v} (all agents)"] / 60  # as bandits.bench does
                   for v in ("fused", "per-agent loop"))
    return (f"The paper's {_paper_updates() / 1e6:.1f} million updates per agent and seed "
            f"project to **{fused:.{digits}f} min** of training for the four agents x "
            f"{info['runs_per_agent']} seeds ({loop:.0f} min with the per-agent loop)")


def _h100_run() -> str:
    cfg = _json(f"{H100_RUN}/config.json")
    rate = cfg["steps_completed"] / cfg["wall_seconds"]
    return (f"ran at about {rate:.0f} steps per second on the same machine (about "
            f"{cfg['steps'] / rate / 60:.0f} min for {cfg['steps']:,} steps")


def _h200_against_h100() -> str:
    (h200, _), (h100, _) = _gpu(H200), _gpu(H100)
    fused = [s["fused (all agents)"] for s in (h200, h100)]
    loop = [s["per-agent loop (all agents)"] for s in (h200, h100)]
    assert abs(fused[0] / fused[1] - 1) < 0.02, fused  # "the same time as on the H100"
    assert loop[0] > loop[1], loop  # "slower here"
    return (f"({fused[0]:.6f} s against {fused[1]:.6f} s per update of all four agents): "
            f"at 5 runs per agent the step is bound by kernel launches inside the graph, not "
            f"by the chip's arithmetic or memory. The per-agent loop is slower here "
            f"({loop[0]:.4f} s against {loop[1]:.4f} s)")


# kernels: what the pinned kernels cost


def _kernel_ratios() -> str:
    t = _csv(f"{KERNELS}/kernels.csv", "command")
    command, step = (t.loc[c, "pinned_over_native"] for c in KERNEL_ROWS)
    for c in KERNEL_ROWS:  # "in both the rounds do not overlap"
        each = {k: [float(x) for x in t.loc[c, f"{k}_each"].split()] for k in ("pinned", "native")}
        assert min(each["pinned"]) > max(each["native"]), c
    strict = t.loc["python -m bandits.run (the default command)", "mkl_strict_over_native"]
    return (f"the default command takes {command:.2f} times as long as with the libraries' "
            f"own kernels, the fused training step alone {step:.2f} times; in both the rounds "
            f"do not overlap. `mkl_strict` costs little ({strict:.2f} times on the default "
            f"command)")


def _same_bytes() -> str:
    t = _csv(f"{KERNELS}/kernels.csv", "command")
    same = t.loc["python -m bandits.run (the default command)", "same_bytes"]
    strict = t.loc["python -m bandits.run (the default command)", "mkl_strict_same_as_pinned"]
    assert not strict  # "and so does mkl_strict"
    return f"`same_bytes` is {str(bool(same)).lower()}"


# the garbage collector's cut, tried and dropped


def _gc_table() -> list[str]:
    t = _csv(f"{GC}/gc.csv", "unit")
    return [f"| {what} | {t.loc[unit, 'quiet']:.2f} | {t.loc[unit, 'python']:.2f} | "
            f"{t.loc[unit, 'quiet_over_python']:.4g} |"
            for what, unit in (("wall seconds, median", "wall seconds"),
                               ("CPU seconds of the run, median", "CPU seconds"))]


def _gc_spread() -> str:
    t = _csv(f"{GC}/gc.csv", "unit").loc["CPU seconds"]
    quiet, python = (sorted(float(v) for v in t[c].split()) for c in ("quiet_each",
                                                                     "python_each"))
    cut = 100 * (t["python"] - t["quiet"]) / t["python"]
    assert bool(t["same_bytes"])  # "The CSVs were the same bytes either way"
    return (f"differs by {cut:.1f} %, inside the rounds' own spread ({quiet[0]:.2f} to "
            f"{quiet[-1]:.2f} s with the cut, {python[0]:.2f} to {python[-1]:.2f} s without)")


# the toy regression


def _regression() -> pd.DataFrame:
    return _csv(f"{REGRESSION}/regression.csv", "model")


def _known_noise() -> str:
    t = _regression()
    b, mlp = t.loc["bbb-fixed"], t.loc["mlp"]
    return (f"covers {100 * b['coverage_95_inside']:.1f} % of the held-out points inside the "
            f"training range and widens away from the data (the predictive std outside is "
            f"{b['std_ratio_outside_to_inside']:.1f} times that inside, almost all of it "
            f"epistemic: {b['epistemic_std_outside']:.1f} of {b['predictive_std_outside']:.1f}"
            f"), where the MLP extrapolates with no band at all (RMSE {mlp['rmse_outside']:.1f}"
            " outside)")


def _dropout() -> str:
    t = _regression()
    d = t.loc["dropout"]
    assert t["log_likelihood_inside"].idxmax() == "dropout"  # "the best ... inside"
    assert t["log_likelihood_outside"].idxmin() == "dropout"  # "is the worst"
    return (f"grows only {d['std_ratio_outside_to_inside']:.1f} times outside it: it covers "
            f"{100 * d['coverage_95_outside']:.0f} % of the points there, and its "
            f"log-likelihood outside ({d['log_likelihood_outside']:.1f}) is the worst")


def _learned_noise() -> str:
    cfg = _json(f"{REGRESSION}/config.json")
    h = cfg["hidden"]
    weights = 2 * h + (h + 1) * h + (h + 1)  # 1 -> h -> h -> 1, biases included
    return (f"with {cfg['points']} points and about {round(weights, -2):,} weights, the ELBO "
            f"prefers to explain the data as noise (the learned noise ends at "
            f"{_regression().loc['bbb-learned', 'learned_noise']:.1f} against the true "
            f"{cfg['noise']:g})")


QUOTES = [  # (the page, the text it must hold, built from the shipped files)
    *((TOP, q) for q in TOP_QUOTES),
    *((f"{PER_STEP}/README.md", q) for q in PER_STEP_QUOTES),
    *((f"{PAPERS}/README.md", q) for q in PAPERS_QUOTES),
    (f"{COMPACT}/README.md", _compact_contexts),
    (f"{H100}/README.md", lambda: _gpu_wall(H100)),
    (f"{H100}/README.md", lambda: _gpu_projection(H100, 0)),
    (f"{H100}/README.md", _h100_run),
    (f"{H200}/README.md", lambda: _gpu_wall(H200)),
    (f"{H200}/README.md", lambda: _gpu_projection(H200, 1)),
    (f"{H200}/README.md", _h200_against_h100),
    (f"{KERNELS}/README.md", _same_bytes),
    (f"{KERNELS}/README.md", _kernel_ratios),
    *((f"{GC}/README.md", (lambda row=row: row)) for row in _gc_table()),
    (f"{GC}/README.md", _gc_spread),
    (f"{GC}/README.md", lambda: f"({_json(f'{GC}/gc.json')['wall_seconds']:.1f} s in all"),
    (f"{REGRESSION}/README.md",
     lambda: f"wall time {_json(f'{REGRESSION}/config.json')['wall_seconds']:.1f} s while"),
    (f"{REGRESSION}/README.md", _known_noise),
    (f"{REGRESSION}/README.md", _dropout),
    (f"{REGRESSION}/README.md", _learned_noise),
]


test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES)


# Numbers of a page's prose that are not results: versions of torch, the name AVX-512,
# and the settings of the runs a page describes (widths, buffer sizes, steps, rounds,
# updates, seeds, draws, the data set's rows). An entry with words is a setting in its
# context (the number there only); a bare number is a setting wherever the page writes it.
SETTINGS = {
    TOP: {"2.13", "AVX-512", "(119 inputs, 2 x 100 ReLU", "buffer of 4096",
          "the 2 x 100 network", "(50,000 steps", "x 2000 steps", "over 200 draws",
          "first 128 training images", "posterior sigma 0.05",
          "over the 1.15x"},  # what would make the exact mode cheap
    f"{PER_STEP}/README.md": {"2.13", "(784 features", "per 10,000 steps"},
    f"{PAPERS}/README.md": {"2.13", "hidden layer of 100", "buffer of 10,000",
                            "holds 2,000 rounds", "project a 10,000-round",
                            "to round 2,000", "every 100th",
                            "by round 1,000"},  # a checkpoint's round (every 1,000)
    f"{COMPACT}/README.md": {"2.13", "a 50,000-item buffer", "8124 one-hot rows"},
    f"{H100}/README.md": set(),
    f"{H200}/README.md": set(),
    f"{KERNELS}/README.md": {"2.13", "AVX-512"},
    f"{BENCH}/floor/README.md": set(),  # its numbers are all in its generated table
    f"{BENCH}/one-exp/README.md": {"the 2 x 100 network", "rounds of 2000 calls"},
    f"{GC}/README.md": {"150 steps", "every 50,000 allocations instead of 700",
                        "to 400 steps", "over 3 rounds", "2-core"},
    f"{REGRESSION}/README.md": {"2.13", "500 held-out points", "and 500 outside",
                                "(lr 0.01", "2000 steps", "sigma 0.01", "over 100 weight",
                                "rate 0.1", "100 masks"},
}

# Measurements a page states that no shipped file holds: the page is their only record
# (the checks of other pages read them from it), so they are kept, and declared here.
UNRECORDED = {
    # the profile that pointed at the collector (the measurement, no shipped file)
    f"{GC}/README.md": {"10-13"},
    # the MNIST run without flushing denormals was not shipped (docs/speed.md quotes it)
    f"{PAPERS}/README.md": {"1.9"},
    # measure.sh prints the measurement and saves no file; the ratios are checked against
    # their rows by test_the_compact_buffers_ratios_are_their_rows
    f"{COMPACT}/README.md": {"244,146,453", "8,646,355", "2.83", "0.084", "1,109,868",
                             "419,824", "0.38"},
}


def _prose(text: str) -> str:
    """A page's prose: no code blocks (fenced, or indented after a blank line); the lines
    of a paragraph indented under a list item are prose."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    lines, code, prev = [], False, ""
    for line in text.splitlines():
        indented = line.startswith("    ")
        code = indented and (code or not prev.strip())
        if not code:
            lines.append(line.lstrip() if indented else line)
        prev = line
    return "\n".join(lines)


def _numbers_of(text: str) -> list[str]:
    """The numbers ``prose_numbers`` reads, and every ratio written ``2.4x``."""
    ratios = re.findall(r"(?<![\w./])\d+(?:\.\d+)?(?=x\b)", re.sub(r"`[^`]*`", "", text))
    return prose_numbers(text) + ratios


def _unchecked(page: str) -> list[str]:
    """The numbers of ``page``'s prose that no check builds and no setting declares."""
    text = (REPO / page).read_text(encoding="utf-8")
    # a generated table is checked by bandits.doc_tables --check (tests/test_doc_tables.py)
    text = re.sub(r"<!-- generated:.*?<!-- end generated -->", "", text, flags=re.S)
    for spec in TABLES:  # a checked row is checked whole
        if spec.page == page:
            rows = {k for k, _ in rows_of(text, spec.header)}
            text = "\n".join(x for k, x in enumerate(text.splitlines()) if k not in rows)
    return uncovered(flat(_prose(text)), snippets(page, QUOTES), SETTINGS[page],
                     also=UNRECORDED.get(page, set()), read=_numbers_of)


def test_the_pages_are_those_checked():
    assert set(PAGES) == set(SETTINGS), "a results page with no declared settings"


test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    PAGES, _unchecked)
# no setting or unrecorded number is declared for a page that no longer writes it
test_every_declared_number_is_on_its_page = page_numbers.settings_test(
    {page: SETTINGS[page] | UNRECORDED.get(page, set()) for page in PAGES},
    lambda text: flat(_prose(text)), PAGES)
