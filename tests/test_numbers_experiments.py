"""Numbers the prose of docs/experiments.md (the index of the shipped runs) quotes, checked
against the shipped files they come from, as tests/test_quoted_numbers.py checks the README
and docs/index.md: a rerun that changes a file without the page fails here."""

from __future__ import annotations

import json
import math

import page_numbers
import pandas as pd
from page_numbers import GROUPED_NUMBER, REPO, snippets, unquoted
from test_quoted_numbers import (
    ALONE,
    BESIDE_GREEDY,
    DECAY_1,
    DECAYS,
    GRID,
    GRID_50K,
    GRID_300,
    NEW_BUFFERS,
    PRESET,
    REVISED,
    _at_50k,
    _decay_03_vs_1,
    _late,
    _pin_cost,
    _revised,
    _screen,
    _times_floor,
)
from test_quoted_numbers import QUOTES as FRONT

PAGE = "docs/experiments.md"
SCREEN = "results/mushroom/learner-screen"
H100_RUN = "results/mushroom/paper-preset-h100"
NEURAL = "results/neural-bandits"
BENCH = "results/bench"


def _wall_seconds(path: str) -> float:
    return json.loads((REPO / path).read_text())["wall_seconds"]


def _minutes(folder: str, record: str = "config.json") -> str:
    """A run's wall time to the minute, as the page's index writes it: ``47 min``,
    ``1 h 19 min``."""
    hours, minutes = divmod(round(_wall_seconds(f"{folder}/{record}") / 60), 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _screen_minutes(folder: str) -> str:
    return _minutes(folder, "screen.json")


def _summary(run: str) -> pd.DataFrame:
    return pd.read_csv(REPO / run / "summary.csv").set_index("agent")


def _mean_se(run: str, agent: str) -> str:
    """An agent's final regret over the seeds, ``mean +- s.e.``, to the unit."""
    row = _summary(run).loc[agent]
    se = row["cumulative_regret_std"] / math.sqrt(row["seeds"])
    return f"{row['cumulative_regret_mean']:.0f} +- {se:.0f}"


# --- the bandit simulator ---------------------------------------------------------------

def _paper_preset_stop() -> str:
    """Where the `paper` preset's H100 run stopped, and its wall time (``config.json``)."""
    c = json.loads((REPO / H100_RUN / "config.json").read_text())
    return (f"stopped at {c['steps_completed']:,} of {c['steps']:,} steps when the GPU time "
            f"ran out ({c['wall_seconds']:.0f} s)")


def _decay_pilot() -> str:
    """BBB's late regret at decay 0.3 and 1, and 1 % greedy's against its floor."""
    return (f"BBB's late regret {_late(ALONE, 'bbb'):.3f} per step against decay 1's "
            f"{_late(DECAY_1, 'bbb'):.3f}, final regret not higher, 1 % greedy "
            f"{_times_floor(ALONE, 'eps1'):.2f}x its floor; {_minutes(ALONE)} |")


def _four_at_decay_03() -> str:
    """BBB's final regret, mean and median, at decay 0.3, and that it is the lowest of the
    four agents (its run and the run of greedy and 5 % greedy beside it)."""
    from bandits.tools.memory_tables import at_step

    t = pd.concat([at_step(REPO / run, 50_000, 10_000) for run in (ALONE, BESIDE_GREEDY)])
    g = t.groupby("agent")["regret"]
    lowest = "BBB" if g.mean().idxmin() == g.median().idxmin() == "bbb" else "not BBB"
    bbb = t[t["agent"] == "bbb"]["regret"]
    return (f"{lowest} lowest in mean and median ({bbb.mean():.0f}, {bbb.median():.0f}), "
            f"every bar of the learner with a memory met; {_minutes(BESIDE_GREEDY)} |")


def _revised_networks() -> str:
    """The first screen's learners rerun at 4,096 items: how many, whether any passes, and
    the range of never-eaten shares their acting decisions eat among those that leave at
    most 1 % of the edible mushrooms uneaten (``summary.csv``)."""
    t = pd.read_csv(REPO / REVISED / "summary.csv")
    nets = t[~t["learner"].str.startswith(("oracle", "ridge"))]
    eats = nets.apply(lambda r: r[f"{r['acting']}_never_eaten"], axis=1)
    uneaten = nets.apply(lambda r: r[f"{r['acting']}_edible_uneaten"], axis=1)
    shares = 100 * eats[uneaten <= 0.01]
    passes = "none passes" if not t["passes"].any() else "some pass"
    return (f"the {len(nets)} learners at 4,096 items under the revised training and rule: "
            f"{passes}, ridge regression eats {_revised('ridge', 'greedy_never_eaten')} %, "
            f"the networks {shares.min():.0f}-{shares.max():.0f} %; "
            f"{_screen_minutes(REVISED)} |")


def _standard_errors(learner: str, column: str) -> float:
    """How many paired standard errors a decay is below decay 1 at 50,000 items."""
    new = pd.read_csv(REPO / DECAYS / "runs.csv")
    ref = pd.read_csv(REPO / GRID_50K / "runs.csv")
    one = learner.replace("-0.3-", "-1-")
    a, b = (r[r["learner"] == n].set_index("buffer")[column]
            for r, n in ((new, learner), (ref, one)))
    d = a - b
    return -d.mean() / (d.std() / math.sqrt(len(d)))


def _decays_ahead() -> str:
    z = sorted([_standard_errors("greedy-wd-0.3-50k", "greedy_never_eaten"),
                _standard_errors("bbb-md-0.3-50k", "thompson_never_eaten")])
    return (f"ahead of decay 1 by {z[0]:.1f}-{z[1]:.1f} standard errors, short of the two "
            f"the rule asked for a bandit run; {_screen_minutes(DECAYS)} |")


def _new_buffers() -> str:
    eats = [_screen(f"bbb-md-{d}-50k", "thompson_never_eaten", 50000, folder=NEW_BUFFERS)
            for d in ("0.3", "1")]
    return (f"BBB at decay 0.3 eats {eats[0]} % of the never-eaten poisonous mushrooms, "
            f"decay 1 {eats[1]} %: {_decay_03_vs_1('bbb-md', 'thompson')} points paired, "
            f"which by its rule sends decay 0.3 to the bandit; {_screen_minutes(NEW_BUFFERS)} |")


def _mnist_reference() -> str:
    """The MNIST run under the papers' set-up: its wall time and each agent's mean."""
    run = f"{NEURAL}/mnist-reference"
    s = _summary(run)["cumulative_regret_mean"].map(lambda v: f"{v:.0f}")
    wall = _wall_seconds(f"{run}/config.json")
    return (f"{round(wall / 60)} minutes on the 2-core CPU: "
            f"NeuralUCB ({s['neuralucb']}) and NeuralTS ({s['neuralts']} wrong answers) "
            f"below LinUCB ({s['linucb']}) but not below the greedy network ({s['greedy']}) "
            f"or NeuralLinear ({s['neurallinear']}); BBB {s['bbb']} |")


def _mushroom_reference() -> str:
    """NeuralUCB's reference training on Mushroom at nu = lambda = 1e-5 (its own folder,
    the greedy network and LinUCB of the same run) and at nu = 1."""
    run = f"{NEURAL}/mushroom-reference"
    small = f"{run}/nu-lambda-1e-5"
    return (f"at the reference scripts' 1e-5, NeuralUCB {_mean_se(small, 'neuralucb')} wrong "
            f"answers, below the greedy network's {_mean_se(small, 'greedy')} and LinUCB's "
            f"{_mean_se(small, 'linucb')}; at nu = 1, NeuralUCB {_mean_se(run, 'neuralucb')} |")


def _mushroom_grid() -> str:
    """The grid's chosen settings on seeds 0-4, and the wall time of the whole search: the
    sweeps one after another, the final NeuralUCB and NeuralTS runs side by side, then the
    baselines' run."""
    grid = f"{NEURAL}/mushroom-grid"
    sweeps = sum(_wall_seconds(str(p.relative_to(REPO)))
                 for p in (REPO / grid / "screen").glob("*/sweep.json"))
    final = (max(_wall_seconds(f"{grid}/final/{a}/config.json") for a in ("neuralucb", "neuralts"))
             + _wall_seconds(f"{grid}/final/baselines/config.json"))
    s = pd.concat([_summary(f"{grid}/final/{r}") for r in ("neuralucb", "neuralts", "baselines")])
    m = s["cumulative_regret_mean"].map(lambda v: f"{v:.1f}")
    return (f"(about {round((sweeps + final) / 60)} minutes on the 2-core CPU): NeuralUCB "
            f"{m['neuralucb']}, NeuralTS {m['neuralts']}, greedy {m['greedy']} (not "
            f"separated), LinUCB {m['linucb']}, BBB {m['bbb']}, 1 % greedy {m['eps1']} wrong "
            "answers |")


def _final_regrets(run: str, agent: str) -> pd.Series:
    m = pd.read_csv(REPO / NEURAL / run / "metrics.csv")
    m = m[m["agent"] == agent]
    return m[m["step"] == m["step"].max()].set_index("seed")["cumulative_regret"]


def _mnist_nu() -> str:
    """NeuralUCB at the nu chosen on MNIST against the greedy network of mnist-reference on
    the same seeds: the wall time of the screen and the final run, the means, and the paired
    difference (``metrics.csv``)."""
    where = f"{NEURAL}/mnist-nu"
    wall = (sum(_wall_seconds(str(p.relative_to(REPO)))
                for p in (REPO / where / "screen").glob("*/sweep.json"))
            + _wall_seconds(f"{where}/final/config.json"))
    nu = json.loads((REPO / where / "final/config.json").read_text())["nu"]
    ucb, greedy = _final_regrets("mnist-nu/final", "neuralucb"), _final_regrets(
        "mnist-reference", "greedy")
    d = (ucb - greedy).dropna()
    return (f"nu = {nu:g} then run on seeds 0-4 ({round(wall / 60)} minutes on the 2-core CPU): "
            f"{ucb.mean():.1f} wrong answers, level with the greedy network's "
            f"{greedy.mean():.1f} (paired difference {abs(d.mean()):.0f} +- "
            f"{d.std() / math.sqrt(len(d)):.0f}) |")


# --- everything else --------------------------------------------------------------------

def _compact_buffer() -> str:
    """The checkpoint's size and the run's peak memory before and after the compact buffer,
    from the measurement's table in its README (the only record of it: the script prints
    them)."""
    text = (REPO / BENCH / "compact-buffer/README.md").read_text(encoding="utf-8")

    def row(label: str) -> list[float]:
        line = next(x for x in text.splitlines() if x.startswith(f"| {label} |"))
        return [float(c.split()[0].replace(",", "")) for c in line.strip("|").split("|")[1:3]]

    size, memory = row("checkpoint size"), row("the run's peak memory")  # bytes, kB
    return (f"checkpoint {size[0] / 1e6:.0f} MB -> {size[1] / 1e6:.1f} MB and the run's peak "
            f"memory {memory[0] / 1e6:.2f} -> {memory[1] / 1e6:.2f} GB")


def _bench(chip: str) -> dict:
    return json.loads((REPO / BENCH / f"cuda-{chip}/bench.json").read_text())


def _fused_ms(chip: str) -> str:
    t = pd.read_csv(REPO / BENCH / f"cuda-{chip}/bench.csv").set_index("variant")
    return f"{1000 * t.loc['fused (all agents)', 'seconds_per_update']:.2f}"


def _h100() -> str:
    b = _bench("h100")
    return (f"on one NVIDIA H100: {b['speedup_fused_over_per_agent_loop']:.0f}x; the paper "
            f"protocol's training projects to {b['paper_protocol_minutes_projected']:.0f} min |")


def _h200() -> str:
    b = _bench("h200")
    same = (f"the same {_fused_ms('h200')} ms" if _fused_ms("h200") == _fused_ms("h100")
            else f"{_fused_ms('h200')} ms against {_fused_ms('h100')} ms")
    return (f"on one NVIDIA H200: {b['speedup_fused_over_per_agent_loop']:.0f}x; {same} per "
            "update of the four agents as on the H100 |")


AGENT_NAMES = {"linucb": "LinUCB", "bbb-lrt": "BBB with the local reparameterisation trick"}


def _agents_per_step() -> str:
    """The cheapest and the dearest step of the learning agents (uniform learns nothing)
    and the benchmark's timing wall time."""
    where = REPO / BENCH / "agents-per-step"
    t = pd.read_csv(where / "agents_per_step.csv").set_index("agent").drop("uniform")
    step = t["seconds_per_step"]
    lo, hi = step.idxmin(), step.idxmax()
    wall = json.loads((where / "agents_per_step.json").read_text())["wall_seconds"]
    return (f"from {step[lo]:.3f} s ({AGENT_NAMES.get(lo, lo)}) to {step[hi]:.2f} s "
            f"({AGENT_NAMES.get(hi, hi)}); 2-core CPU, {wall:.1f} s of timing |")


def _agents_per_step_papers() -> str:
    """The projected core-minutes of the agents of the MNIST run under the papers' set-up
    (mnist-reference's agents), after and before, and the benchmark's wall time."""
    where = REPO / BENCH / "agents-per-step-papers"
    agents = list(_summary(f"{NEURAL}/mnist-reference").index)
    after, before = (pd.read_csv(where / f).set_index("agent").loc[
        agents, "minutes_per_papers_run"].sum() for f in ("agents_per_step.csv", "before.csv"))
    wall = json.loads((where / "agents_per_step.json").read_text())["wall_seconds"]
    return (f"the {'six' if len(agents) == 6 else len(agents)} agents of the MNIST "
            f"reproduction project to {after:.0f} core-minutes for 10,000 rounds, against "
            f"{before:.0f} before; 2-core CPU, one thread, {wall:.0f} s |")


QUOTES = [  # (the page quoting, the text it must hold, built from the shipped files)
    (PAGE, lambda: "the pin (MKL's compatible mode) takes {} times as long for the default "
                   "command and {} times for the fused step".format(*_pin_cost())),
    (PAGE, _paper_preset_stop),
    (PAGE, lambda: f"with its population; {_minutes(PRESET)} |"),
    (PAGE, lambda: f"both set-ups' Figure 6 side by side; {_minutes(DECAY_1)} |"),
    (PAGE, _decay_pilot),
    (PAGE, _four_at_decay_03),
    (PAGE, lambda: f"decay 1 at 16,384 items first; {_screen_minutes(GRID)} |"),
    (PAGE, _revised_networks),
    (PAGE, lambda: f"greedy {_at_50k('greedy-wd-1-50k', 'greedy')} %, BBB "
                   f"{_at_50k('bbb-md-1-50k')} %, ridge {_at_50k('ridge', 'greedy')} %; "
                   f"{_screen_minutes(GRID_50K)} |"),
    (PAGE, lambda: f"not the training; {_screen_minutes(GRID_300)} |"),
    (PAGE, _decays_ahead),
    (PAGE, _new_buffers),
    (PAGE, lambda: f"{_screen_minutes(SCREEN)} on one core |"),
    (PAGE, _mnist_reference),
    (PAGE, _mushroom_reference),
    (PAGE, _mushroom_grid),
    (PAGE, _mnist_nu),
    (PAGE, _compact_buffer),
    (PAGE, _h100),
    (PAGE, _h200),
    (PAGE, _agents_per_step),
    (PAGE, _agents_per_step_papers),
]


# The numbers of the page's prose that are not results: the settings of the runs it indexes
# (steps and rounds, buffer sizes, draws per item, hidden widths, epochs, decay, nu, the
# screening seeds). Every other number of its prose must be built by a check of QUOTES
# (here or in tests/test_quoted_numbers.py) from the files it comes from.
SETTINGS = {
    PAGE: {"0.01", "0.1", "0.3", "100", "104", "300", "400", "600", "1200", "2000", "2,000", "3000",
           "4000", "4,096", "8,124", "10,000", "16,384", "20,000", "50,000"},
}

test_a_quoted_number_is_its_files = page_numbers.quoted_test(QUOTES, whitespace=False)
test_every_number_of_the_pages_prose_is_checked_or_a_setting = page_numbers.checked_test(
    sorted(SETTINGS), lambda doc: unquoted(doc, snippets(doc, FRONT, QUOTES), SETTINGS[doc],
                                           number=GROUPED_NUMBER),
    add="a check to QUOTES")
