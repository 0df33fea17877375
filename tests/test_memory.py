"""The memorisation record: each decision by what its run last saw the item pay."""

import numpy as np
import pandas as pd
import pytest

from bandits.records.memory import MEMORY_COLUMNS, memory_frame
from bandits.records.regret import phase_length


def _brute_force(agents, seeds, action, reward, item, optimal, buffer_size):
    """The same counts, one step at a time."""
    n = action.shape[-1]
    w = phase_length(n)
    counts = {}
    for k, agent in enumerate(agents):
        for r, seed in enumerate(seeds):
            last = {}  # item -> (reward, step) of its last eating
            for t in range(n):
                i = int(item[k, r, t])
                paid, at = last.get(i, (np.nan, -1))
                in_buffer = None if at < 0 else bool(t - at <= buffer_size)
                key = (agent, seed, t // w * w + 1, bool(optimal[k, r, t] == 1),
                       None if np.isnan(paid) else float(paid), in_buffer)
                shown, eaten = counts.get(key, (0, 0))
                counts[key] = (shown + 1, eaten + int(action[k, r, t] == 1))
                if action[k, r, t] == 1:
                    last[i] = (float(reward[k, r, t]), t)
    return counts


def test_memory_counts_equal_a_step_by_step_count():
    rng = np.random.default_rng(0)
    shape = (2, 3, 400)  # agents, seeds, steps
    item = rng.integers(0, 25, shape)
    edible = rng.random(25) < 0.5
    action = rng.integers(0, 2, shape)
    harm = rng.random(shape) < 0.5
    reward = np.where(action == 1, np.where(edible[item] | ~harm, 5.0, -35.0), 0.0)
    optimal = edible[item].astype(np.int64)
    f = memory_frame(["bbb", "greedy"], [0, 1, 2], action, reward, item, optimal, 30)
    assert list(f.columns) == MEMORY_COLUMNS
    assert f["shown"].sum() == action.size and f["eaten"].sum() == action.sum()
    got = {}
    for row in f.itertuples(index=False):
        paid = None if pd.isna(row.last_eaten_reward) else float(row.last_eaten_reward)
        in_buffer = None if pd.isna(row.in_buffer) else bool(row.in_buffer)
        got[(row.agent, row.seed, row.start, bool(row.edible), paid, in_buffer)] = (
            row.shown, row.eaten)
    assert got == _brute_force(["bbb", "greedy"], [0, 1, 2], action, reward, item,
                               optimal, 30)
    # a poisonous mushroom last seen paying -35 and one last seen paying +5 both occur
    poison = f[~f["edible"]]
    assert {-35.0, 5.0} <= set(poison["last_eaten_reward"].dropna())


def test_no_memory_record_without_items():
    a = np.zeros((1, 2, 10), dtype=np.int64)
    f = memory_frame(["x"], [0, 1], a, a * 1.0, np.full(a.shape, -1), a, 5)
    assert f.empty and list(f.columns) == MEMORY_COLUMNS


def _memorising_run(steps=3000, items=1000, seed=0):
    """An agent that eats a poisonous mushroom exactly when it last paid +5, never when it
    paid -35, and eats a never-eaten one half of the time."""
    rng = np.random.default_rng(seed)
    item = rng.integers(0, items, (1, 2, steps))
    edible = np.arange(items) % 2 == 0
    action = np.zeros(item.shape, dtype=np.int64)
    reward = np.zeros(item.shape)
    for r in range(2):
        last = {}
        for t in range(steps):
            i = int(item[0, r, t])
            eat = last.get(i, 5.0 if rng.random() < 0.5 else None) == 5.0
            action[0, r, t] = eat
            if eat:
                reward[0, r, t] = 5.0 if edible[i] or rng.random() < 0.5 else -35.0
                last[i] = reward[0, r, t]
    return item, edible[item].astype(np.int64), action, reward


def test_memorisation_puts_a_memorising_agents_bites_on_mushrooms_last_paying_high():
    from bandits.records.memory import memorisation, memorisation_summary

    item, optimal, action, reward = _memorising_run()
    memory = memory_frame(["greedy"], [0, 1], action, reward, item, optimal, 10_000)
    table = memorisation(memory, last=1000)
    poison = table[~table["edible"]].set_index("history")
    assert poison.loc["last paid 5", "mistake_rate"] == 1.0
    assert poison.loc["last paid -35", "mistake_rate"] == 0.0
    assert poison.loc["never eaten", "mistake_rate"] == pytest.approx(0.5, abs=0.1)
    share = poison.loc["last paid 5", "eaten"] / poison["eaten"].sum()  # greedy: all own
    assert poison.loc["last paid 5", "share_of_own_mistakes"] == pytest.approx(share)
    assert poison["shown"].sum() == ((optimal == 0)[..., -1000:]).sum()
    summary = memorisation_summary(table).set_index("agent")
    assert summary.loc["greedy", "own bites on last-paid-high"] == pytest.approx(share)
    assert summary.loc["greedy", "eats: last paid 5"] == 1.0


def test_memorisation_takes_random_exploration_out():
    from bandits.analysis.diagnose import memorisation

    # 5 % greedy eating 2.5 % of every category: all of it random exploration
    rows = [{"agent": "eps5", "seed": s, "start": 1, "end": 100, "edible": False,
             "last_eaten_reward": np.nan, "in_buffer": np.nan, "shown": 400, "eaten": 10}
            for s in (0, 1)]
    t = memorisation(pd.DataFrame(rows), last=100)
    assert t["mistake_rate"].iloc[0] == pytest.approx(0.025)
    assert t["own_mistake_rate"].iloc[0] == pytest.approx(0.0)


def test_diagnose_writes_the_memorisation_table_of_a_mushroom_run(tmp_path, mushroom_data_dir):
    from bandits.analysis import diagnose
    from bandits.run import main

    out = tmp_path / "run"
    assert main(["--agent", "greedy", "eps5", "--seeds", "2", "--steps", "300",
                 "--hidden", "16", "--updates-per-step", "2", "--no-progress",
                 "--data-dir", str(mushroom_data_dir), "--out", str(out)]) == 0
    memory = pd.read_csv(out / "memory.csv")
    assert memory["shown"].sum() == 2 * 2 * 300
    assert diagnose.main([str(out), "--last", "100"]) == 0
    table = pd.read_csv(out / "memorisation.csv")
    assert set(table["agent"]) == {"greedy", "eps5"}
    assert table["shown"].sum() == 2 * 2 * 100


def test_diagnose_refuses_a_memory_record_cut_short_and_never_reports_a_stale_table(
        tmp_path, mushroom_data_dir, capsys):
    import shutil

    from bandits.analysis import diagnose
    from bandits.run import main

    out = tmp_path / "run"
    assert main(["--agent", "greedy", "--seeds", "2", "--steps", "100", "--hidden", "8",
                 "--updates-per-step", "1", "--no-progress",
                 "--data-dir", str(mushroom_data_dir), "--out", str(out)]) == 0
    assert diagnose.main([str(out)]) == 0
    full = (out / "memory.csv").read_text()
    lines = full.splitlines(keepends=True)
    (out / "memory.csv").write_text("".join(lines[:-1]))  # cut at a line boundary
    capsys.readouterr()
    written = {n: (out / n).read_bytes() for n in ("diagnosis.csv", "diagnosis_seeds.csv",
                                                     "memorisation.csv")}
    (out / "diagnosis.csv").write_bytes(b"an earlier diagnosis\n")
    written["diagnosis.csv"] = b"an earlier diagnosis\n"
    assert diagnose.main([str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "memory.csv" in err and "cut short" in err and len(err.splitlines()) == 1
    # refused before anything was written
    assert {n: (out / n).read_bytes() for n in written} == written
    (out / "memory.csv").write_text(full)
    for gone in ("memory.csv", "config.json"):
        run = tmp_path / gone
        shutil.copytree(out, run)
        (run / gone).unlink()
        before = (run / "memorisation.csv").read_bytes()
        capsys.readouterr()
        assert diagnose.main([str(run)]) == 0
        printed = capsys.readouterr()
        assert "Poisonous" not in printed.out and "memorisation.csv" not in printed.out
        assert "earlier diagnosis" in printed.err and len(printed.err.splitlines()) == 1
        assert (run / "memorisation.csv").read_bytes() == before  # a file is never deleted


@pytest.mark.slow
def test_the_memory_record_is_the_same_bytes_for_any_workers_and_after_a_resume(
        tmp_path, mushroom_data_dir, monkeypatch):
    from bandits.run import main

    base = ["--agent", "bbb", "greedy", "--seeds", "2", "--hidden", "8", "--batch-size", "8",
            "--updates-per-step", "1", "--no-progress", "--data-dir", str(mushroom_data_dir)]
    one, two, cut = tmp_path / "one", tmp_path / "two", tmp_path / "cut"
    assert main([*base, "--steps", "120", "--workers", "1", "--out", str(one)]) == 0
    assert main([*base, "--steps", "120", "--workers", "2", "--out", str(two)]) == 0
    assert (one / "memory.csv").read_bytes() == (two / "memory.csv").read_bytes()
    assert main([*base, "--steps", "70", "--workers", "1", "--out", str(cut)]) == 0
    assert main(["--resume", str(cut), "--steps", "120", "--no-progress"]) == 0
    assert (cut / "memory.csv").read_bytes() == (one / "memory.csv").read_bytes()
    memory = pd.read_csv(one / "memory.csv")
    assert memory["shown"].sum() == 2 * 2 * 120
