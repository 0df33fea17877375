"""Numbers the prose of docs/speed.md (how fast the simulator and the MNIST benchmark run)
quotes, its hand-written table included, checked against the shipped benchmark files they
come from, as tests/test_quoted_numbers.py checks the README and docs/index.md: a rerun
that changes a file without the page fails here."""

from __future__ import annotations

import json
import re

import page_numbers
import pandas as pd
from page_numbers import REPO, prose_numbers, snippets, unquoted
from test_quoted_numbers import QUOTES as FRONT
from test_quoted_numbers import _pin_cost

PAGE = "docs/speed.md"
BENCH = "results/bench"
H100_RUN = "results/mushroom/paper-preset-h100"
H200_RUN = f"{H100_RUN}/h200-rerun"
PAPERS_SETUP = f"{BENCH}/agents-per-step-papers"
REFERENCE = "results/neural-bandits/mnist-reference"


def _json(path: str) -> dict:
    return json.loads((REPO / path).read_text(encoding="utf-8"))


def _csv(path: str, index: str) -> pd.DataFrame:
    return pd.read_csv(REPO / path).set_index(index)


def _wall(seconds: float) -> str:
    """A wall time as the prose writes it: ``2 min 4 s``."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _torch(path: str) -> str:
    """The torch version a benchmark's JSON records, as the prose writes it (``2.13.0``)."""
    return _json(path)["versions"]["torch"].removesuffix("+cpu")


AGENT_NAMES = {"greedy": "greedy", "eps1": "1 % greedy", "eps5": "5 % greedy"}
"""The epsilon-greedy agents' rows of ``bench.csv`` (each its own population), as the pages
name them."""


def _host(path: str) -> str:
    """The processor a benchmark's JSON records, as the pages name it."""
    processor = _json(path)["versions"]["kernels"]["processor"]
    return next((name for key, name in (("Xeon", "Intel Xeon"), ("EPYC", "AMD EPYC"))
                 if key in processor), "x86-64 CPU")


# ---- every core: the default command's workers (the paper preset's: a generated value)


def _default_command() -> str:
    t = _csv(f"{BENCH}/default_command.csv", "workers")
    one, two = t.loc[1, "wall_seconds_median"], t.loc[2, "wall_seconds_median"]
    rounds = {w: [float(s) for s in t.loc[w, "wall_seconds"].split()] for w in (1, 2)}
    assert len(rounds[1]) == len(rounds[2]), rounds
    assert t["same_bytes_as_1_worker"].all()  # "with every CSV the same bytes"
    each = ", ".join(f"{a:.1f} and {b:.1f} s" for a, b in (rounds[2], rounds[1]))
    return (f"**{two:.1f} s with two workers against {one:.1f} s with one** (medians of "
            f"{len(rounds[1])} interleaved\nrounds: {each}; {one / two:.2f}x,")


def _default_command_wall() -> str:
    wall = _wall(_json(f"{BENCH}/default_command.json")["wall_seconds"])
    return "--overwrite`, " + wall.replace(" min ", " min\n") + ";"


# ---- the training step: fused against the per-agent loop, on a CPU


def _bench(folder: str = BENCH) -> pd.Series:
    return _csv(f"{folder}/bench.csv", "variant")["seconds_per_update"]


def _fused_step() -> str:
    one, two = _bench(), _bench(f"{BENCH}/threads-2")
    per_run = _csv(f"{BENCH}/bench.csv", "variant")["seconds_per_run_update"]
    runs = _json(f"{BENCH}/bench.json")["runs_per_agent"]
    loop, fused = "per-agent loop (all agents)", "fused (all agents)"
    return (f"({1000 * per_run[fused]:.2f} ms against {1000 * per_run[loop]:.2f} ms per run "
            f"and update for the paper's four agents x {runs}\nseeds, "
            f"**{one[loop] / one[fused]:.2f}x**, measured side by side in one process; "
            f"{two[loop] / two[fused]:.2f}x with two threads)")


def _populations() -> str:
    t = _bench()
    bbb = t["per-agent loop bbb"] / t["fused bbb"]
    greedy = [t[f"per-agent loop {k}"] / t[f"fused {k}"] for k in AGENT_NAMES]
    return (f"BBB's update gains {bbb:.1f}x (its per-weight work is now a few whole-tensor "
            f"passes),\nthe epsilon-greedy agents {min(greedy):.1f}-{max(greedy):.1f}x")


def _matmul_precision() -> str:
    runs = [f.parent for f in (REPO / BENCH / "matmul-precision").glob("*/bench.csv")]
    fused = {f.name: pd.read_csv(f / "bench.csv").set_index("variant").loc[
        "fused (all agents)", "seconds_per_update"] for f in runs}
    walls = [json.loads((f / "bench.json").read_text())["wall_seconds"] for f in runs]
    assert len(runs) == 4, runs  # "two interleaved pairs"
    ms = {k: f"{1000 * v:.1f}" for k, v in fused.items()}
    return (f"took {ms['medium-round1']} and {ms['medium-round2']} ms against "
            f"{ms['highest-round1']}\nand {ms['highest-round2']} ms in float32 (two "
            "interleaved pairs of `python -m bandits.bench --threads\n1 --rounds 3 "
            f"--matmul-precision highest|medium`, {min(walls):.0f}-{max(walls):.0f} s each;")


# ---- the training step on a GPU, and the `paper` preset there


def _cuda(folder: str) -> tuple[float, float, dict]:
    t = _bench(f"{BENCH}/{folder}")
    return t["per-agent loop (all agents)"], t["fused (all agents)"], _json(
        f"{BENCH}/{folder}/bench.json")


def _h100() -> str:
    from bandits.tools.bench import PAPER_UPDATES
    from bandits.tools.bench_commands import PAPER_STEPS

    loop, fused, info = _cuda("cuda-h100")
    command = info["command"].split(" --out ")[0]
    minutes = PAPER_STEPS * PAPER_UPDATES * fused / 60  # as bandits.bench projects
    return (f"(one NVIDIA H100, torch {info['versions']['torch']},\n`{command}`, "
            f"{info['wall_seconds']:.0f} s;\n[the training step on an H100]"
            f"(../results/bench/cuda-h100/README.md)) the fused step,\nreplayed as one captured "
            f"CUDA graph per {PAPER_UPDATES} updates, takes {1000 * fused:.2f} ms per update "
            f"of the four\nagents x {info['runs_per_agent']} seeds against {1000 * loop:.1f} ms "
            f"for the per-agent loop (**{loop / fused:.0f}x**): the paper protocol's\n"
            f"training projects to {minutes:.0f} minutes.")


def _rate(run: str) -> float:
    """A run's steps per second over its whole wall time (every stretch)."""
    cfg = _json(f"{run}/config.json")
    return cfg["steps_completed"] / cfg["wall_seconds"]


def _h100_run() -> str:
    rate, steps = _rate(H100_RUN), _json(f"{H100_RUN}/config.json")["steps"]
    return (f"the exact `paper` preset ran at about {rate:.0f}\nsteps per second there (about "
            f"{steps / rate / 60:.0f} minutes for {steps:,} steps;")


def _h200() -> str:
    loop, fused, info = _cuda("cuda-h200")
    ms, h100_ms = (f"{1000 * _cuda(f)[1]:.2f}" for f in ("cuda-h200", "cuda-h100"))
    same = "the same " if ms == h100_ms else ""  # "the same" only while the two agree
    return (f"the fused step takes {same}{ms} ms per update ("
            f"{1000 * loop:.1f} ms for the\nper-agent loop, **{loop / fused:.0f}x**; "
            f"{info['wall_seconds']:.0f} s;")


def _h200_run() -> str:
    return f"ran there at about\n{_rate(H200_RUN):.0f} steps per second"


# ---- MNIST under the NeuralUCB and NeuralTS papers' set-up


def _weights_per_run() -> int:
    """The parameters of one network of the reference run: its disjoint first layer (arms
    x pixels inputs), its hidden layers and one output, each with its biases."""
    import envs

    cfg = _json(f"{REFERENCE}/config.json")
    assert cfg["encoding"] == "disjoint"
    pixels, arms = envs.SHAPES[cfg["env"]]
    sizes = [pixels * arms, *cfg["hidden"], 1]
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


def _disjoint_inputs() -> str:
    import envs

    cfg = _json(f"{REFERENCE}/config.json")
    pixels, arms = envs.SHAPES[cfg["env"]]
    (hidden,) = cfg["hidden"]
    return (f"per arm: {_weights_per_run():,}\nweights per run on MNIST ({arms} arms x "
            f"{pixels} pixels x {hidden} units, with the biases and the\noutput layer). "
            f"Three changes made the {cfg['steps']:,}-round reproduction")


def _per_step(name: str) -> pd.DataFrame:
    return _csv(f"{PAPERS_SETUP}/{name}.csv", "agent")


def _fell(agent: str, column: str) -> str:
    """How an agent's time per step of ``column`` fell with the changes (ms)."""
    before, after = (1000 * _per_step(n).loc[agent, column] for n in ("before", "agents_per_step"))
    return f"fell from {before:.0f} to {after:.0f} ms"


def _grouped_rows() -> str:
    updates = _json(f"{PAPERS_SETUP}/agents_per_step.json")["updates_per_step"]
    return f"A network's {updates} updates {_fell('greedy', 'seconds_update')}."


def _widths() -> str:
    runs = _json(f"{PAPERS_SETUP}/agents_per_step.json")["runs_per_agent"]
    return f"Acting {_fell('neuralucb', 'seconds_act')} (NeuralUCB,\n  {runs} runs)"


def _denormals() -> str:
    """The run without flushing was not shipped: its observations are quoted as the
    benchmark's README states them; the projection is the benchmark's, for the worker of
    the reference run that held the four networks."""
    text = " ".join((REPO / PAPERS_SETUP / "README.md").read_text(encoding="utf-8").split())
    share = re.search(r"A (\w+) of Adam's first moments had decayed into the denormal range "
                      r"by round ([\d,]+)", text)
    seen = re.search(r"worker ran at ([\d.]+) s per round", text)
    assert share and seen, "the benchmark's README no longer states the denormal run"
    parts = _json(f"{REFERENCE}/config.json")["parts"]
    (networks,) = [p["agents"] for p in parts if "bbb" not in p["agents"]]
    assert len(networks) == 4, networks  # "the four networks' worker"
    projected = _per_step("agents_per_step").loc[networks, "seconds_per_step"].sum()
    return (f"a {share[1]} of the networks' first moments were denormal by round\n    "
            f"{share[2]} of the MNIST run, and the four networks' worker ran at {seen[1]} s "
            f"per round against\n    the {projected:.1f} s the benchmark projected")


def _reference_minutes() -> tuple[dict, pd.Series, pd.Series]:
    """The MNIST reproduction's ``config.json`` (six agents, two workers), and the
    core-minutes the benchmark projects for each of its agents' run, after the changes and
    before."""
    cfg = _json(f"{REFERENCE}/config.json")
    agents = cfg["agent"]
    assert len(agents) == 6 and cfg["workers"] == 2, cfg  # "six agents", "two worker(s)"
    after, before = (_per_step(n).loc[agents, "minutes_per_papers_run"]
                     for n in ("agents_per_step", "before"))
    return cfg, after, before


def _six_agents() -> str:
    cfg, after, before = _reference_minutes()
    return (f"The six agents of the reproduction project to {after.sum():.0f} core-minutes for "
            f"{cfg['steps']:,} rounds ({before.sum():.0f}\nbefore). The measured run, all six "
            f"agents with {cfg['seeds']} seeds for {cfg['steps']:,} rounds in two worker "
            f"processes,\ntook **{_wall(cfg['wall_seconds'])}**")


def _bbb_weights() -> str:
    cfg = _json(f"{REFERENCE}/config.json")
    walls = cfg["wall_seconds_per_agent"]
    assert max(walls, key=walls.get) == "bbb"  # "BBB's worker set the pace"
    return (f"a Gaussian number drawn for each of\n"
            f"{cfg['seeds'] * _weights_per_run() / 1e6:.1f} million weights per update")


# ---- the MNIST benchmark (speed.json): the hand-written table and what it says


def _speed() -> dict:
    return _json("results/mnist/speed.json")


def _epochs(size: str) -> dict[str, float]:
    return _speed()["sizes"][size]["seconds_per_epoch"]


def _speed_intro() -> str:
    sp = _speed()
    return (f"(medians of {sp['rounds']} interleaved rounds of {sp['batches_timed']}\n"
            "minibatches scaled to an epoch;")


def _speed_row(size: str) -> str:
    """A row of the page's table, each ratio from the two medians it divides."""
    e, n = _epochs(size), _speed()["sizes"][size]["batched_models"]
    return (f"| 2 x {size} | {e['mlp']:.2f} | {e['bbb']:.2f} | **{e['bbb'] / e['mlp']:.2f}** "
            f"| {e['autograd-bbb'] / e['autograd-mlp']:.2f} | "
            f"{e['autograd-bbb'] / e['bbb']:.2f}x faster | "
            f"{n * e['bbb'] / e['bbb-batched']:.2f}x |")


def _speed_ratios() -> str:
    a, b = _epochs("400"), _epochs("1200")
    return (f"A BBB epoch now costs {a['bbb'] / a['mlp']:.2f}x a plain-MLP epoch at 2 x 400 "
            f"(the paper: about 2x;\n  the first version "
            f"{a['autograd-bbb'] / a['autograd-mlp']:.1f}x) and {b['bbb'] / b['mlp']:.2f}x at "
            f"2 x 1200; `--compile` gives {a['bbb-compiled'] / a['mlp']:.2f}x and "
            f"{b['bbb-compiled'] / b['mlp']:.2f}x.")


def _autograd_mlp() -> str:
    ratios = [_epochs(s)["autograd-mlp"] / _epochs(s)["mlp"] for s in ("400", "1200")]
    return f"autograd MLP takes {min(ratios):.2f}-{max(ratios):.2f}x as long"


def _batching() -> str:
    n = _speed()["sizes"]["400"]["batched_models"]
    a, b = (_epochs(s)["bbb-batched"] / (n * _epochs(s)["bbb"]) for s in ("400", "1200"))
    return (f"{n} models in one batch take {a:.1f}x\n  (2 x 400) to {b:.1f}x (2 x 1200) the "
            f"time of {n} single models one after another")


def _h200_epochs() -> str:
    """The 600-epoch BBB batches of the 2 x 1200 report: the median epoch of a batch."""
    lines = (REPO / "results/mnist/2x1200/models.jsonl").read_text().splitlines()
    runs = [m for m in map(json.loads, lines)
            if m["label"].startswith("bbb-") and m["epochs"] == 600]
    assert runs and all("H200" in m["machine"] for m in runs)
    per_epoch = {f"{m['seconds_per_epoch'] * m['batched_models']:.2f}" for m in runs}
    (models,) = {m["batched_models"] for m in runs}
    assert len(per_epoch) == 1, per_epoch
    return f"{per_epoch.pop()} s per epoch for a batch of {models} BBB models at 2 x 1200"


def _mnist_workers() -> str:
    t = _csv(f"{BENCH}/mnist_workers.csv", "workers")
    assert t["same_bytes_as_1_worker"].all()
    one, two = t.loc[1, "wall_seconds_median"], t.loc[2, "wall_seconds_median"]
    info = _json(f"{BENCH}/mnist_workers.json")
    return (f"{_torch(f'{BENCH}/mnist_workers.json')} CPU build, one torch thread per process; "
            f"{_wall(info['wall_seconds'])}): **{one:.1f} s with one\nworker, {two:.1f} s with "
            f"two: {one / two:.2f}x**")


QUOTES = [(PAGE, text) for text in (
    lambda: "the default command takes {} times as long pinned and the fused\ntraining step "
            "{} times".format(*_pin_cost()),
    _default_command, _default_command_wall,
    _fused_step, _populations, _matmul_precision,
    _h100, _h100_run, _h200, _h200_run,
    _disjoint_inputs, _grouped_rows, _widths, _denormals, _six_agents, _bbb_weights,
    _speed_intro, lambda: _speed_row("400"), lambda: _speed_row("1200"), _speed_ratios,
    _autograd_mlp, _batching, _h200_epochs, _mnist_workers,
)]


# Numbers of the page's prose that are not results: the paper's horizon (50,000 steps),
# the widths of the MNIST networks (2 x 400, 2 x 1200), the epochs of the H200 training
# runs (600), the rounds of the papers' MNIST set-up (10,000) and the images of the
# workers' timing (20,000), and the name of the instruction set (AVX-512).
SETTINGS = {PAGE: {"50,000", "400", "1200", "600", "10,000", "20,000", "512"}}


def _page_numbers(text: str) -> list[str]:
    """The numbers of the page's prose as ``prose_numbers`` reads them, with the lines of
    a paragraph indented under a list item read too: an indented code block cannot
    interrupt a paragraph, so only an indented line after a blank one (or after code) is
    code."""
    lines, code, prev = [], False, ""
    for line in text.splitlines():
        indented = line.startswith("    ")
        code = indented and (code or not prev.strip())
        lines.append(line if code or not indented else line.lstrip())
        prev = line
    return prose_numbers("\n".join(lines))


test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES, whitespace=False)
test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    (PAGE,), lambda page: unquoted(page, snippets(page, FRONT, QUOTES), SETTINGS[page],
                                   read=_page_numbers),
    add="a check to QUOTES")
