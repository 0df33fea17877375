"""bandits.confirm: paired comparisons from joined run folders, and its sign-flip test."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bandits.analysis import confirm

ROOT = Path(__file__).parents[1]
SHIPPED = ROOT / "results" / "mushroom" / "memory-decay-0.3"


def test_the_exact_test_counts_every_sign_pattern():
    d = np.array([-3.0, -1.0, 2.0])
    means = [np.mean(np.array(s) * d) for s in itertools.product((1, -1), repeat=3)]
    assert confirm.sign_flip_p(d) == np.mean(np.array(means) <= d.mean() + 1e-12)
    assert confirm.sign_flip_p(np.full(10, -1.0)) == 1 / 2**10
    assert confirm.sign_flip_p(np.full(10, 1.0)) == 1.0


def test_the_random_test_agrees_with_the_exact_one_where_both_apply():
    rng = np.random.default_rng(3)
    d = rng.normal(-0.3, 1.0, size=16)
    exact = confirm.sign_flip_p(d)
    flipped = confirm.sign_flip_p(np.concatenate([d, [0.0]]), flips=400_000)  # 17: random
    assert abs(exact - flipped) < 0.01


def test_the_shipped_tuning_run_gives_the_numbers_the_issue_audit_found(tmp_path):
    # BBB - greedy over seeds 0-9 of results/mushroom/memory-decay-0.3: -597 +- 533,
    # BBB lower on 5 seeds, higher on 4, one tie
    seeds = confirm.per_seed([SHIPPED], 50_000, 40_001)
    paired = confirm.paired_table(seeds, "bbb").set_index(["measure", "other"])
    row = paired.loc[("final", "greedy")]
    assert round(row["mean_diff"]) == -597 and round(row["se"]) == 533
    assert (row["wins"], row["ties"], row["losses"]) == (5, 1, 4)
    assert not row["separated"]
    assert paired.loc[("final", "eps5"), "wins"] == 10


def _phases(agent: str, seeds: range, end: int = 4) -> pd.DataFrame:
    return pd.DataFrame([{"agent": agent, "seed": s, "start": start, "end": start + 1,
                          "regret": 5 * s + start, "expected_regret": s}
                         for s in seeds for start in range(1, end, 2)])


def _folder(tmp_path: Path, name: str, *frames: pd.DataFrame, env: str = "mushroom") -> Path:
    """A run folder: its ``phases.csv`` and the ``config.json`` that records its agents,
    seeds, steps and environment."""
    d = tmp_path / name
    d.mkdir()
    phases = pd.concat(frames)
    phases.to_csv(d / "phases.csv", index=False)
    seeds = sorted(phases["seed"].unique())
    (d / "config.json").write_text(json.dumps(
        {"agent": list(phases["agent"].unique()), "env": env, "seed": int(seeds[0]),
         "seeds": len(seeds), "steps": int(phases["end"].max()), "wheel_delta": 0.95}))
    return d


def test_the_resume_hint_of_a_short_run_pastes_back_with_a_space_in_the_folder(tmp_path):
    import shlex

    a = _folder(tmp_path, "run one", _phases("bbb", range(10, 14)))
    with pytest.raises(ValueError, match="ran 4 of 6 steps") as info:
        confirm.per_seed([a], 6, 3)
    hint = str(info.value).rpartition("(")[2].removesuffix(")")
    assert shlex.split(hint) == ["python", "-m", "bandits.run", "--resume", str(a), "--steps",
                                 "6"]
    record = json.loads((a / "config.json").read_text())
    (a / "config.json").write_text(json.dumps({**record, "exact": True}))
    with pytest.raises(ValueError) as info:  # an exact run resumes with --exact, or not at all
        confirm.per_seed([a], 6, 3)
    assert shlex.split(str(info.value).rpartition("(")[2].removesuffix(")"))[5:] == [
        "--exact", "--steps", "6"]


def test_folders_join_agent_by_agent_and_refuse_overlaps_and_short_runs(tmp_path):
    a = _folder(tmp_path, "a", _phases("bbb", range(10, 14)))
    b = _folder(tmp_path, "b", _phases("greedy", range(10, 14)))
    seeds = confirm.per_seed([a, b], 4, 3)
    assert len(seeds) == 8 and set(seeds["agent"]) == {"bbb", "greedy"}
    assert seeds.loc[0, "final"] == (5 * 10 + 1) + (5 * 10 + 3)
    assert seeds.loc[0, "late"] == 10 / 2
    with pytest.raises(ValueError, match="in two folders"):
        confirm.per_seed([a, a], 4, 3)
    with pytest.raises(ValueError, match="ran 4 of 6 steps"):
        confirm.per_seed([a], 6, 3)
    with pytest.raises(ValueError, match="no phase starts"):
        confirm.per_seed([a], 4, 2)


def test_the_command_writes_its_tables_and_refuses_a_missing_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert confirm.main([str(SHIPPED), "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {"seeds.csv", "agents.csv", "paired.csv",
                                               "tables.md", "analysis.json"}
    assert "-597 +- 533 | 5 / 1 / 4" in (out / "tables.md").read_text()
    assert confirm.main([str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no such folder" in err


HELDOUT = ROOT / "results" / "mushroom" / "heldout"
WHEEL = ROOT / "results" / "wheel" / "heldout"


def _same_as_shipped(made: Path, shipped: Path, names: tuple[str, ...]) -> None:
    for name in names:
        assert (made / name).read_bytes() == (shipped / name).read_bytes(), name


@pytest.mark.skipif(not (HELDOUT / "analysis").is_dir(), reason="the held-out runs are not in")
def test_the_shipped_heldout_analysis_is_what_its_runs_give(tmp_path):
    """The pre-registered analysis, rerun on the shipped blocks, gives the shipped files
    (its p-values included), and covers seeds 10-59 for every agent."""
    runs = sorted(p for p in (HELDOUT / "runs").iterdir() if p.is_dir())
    assert confirm.main([*map(str, runs), "--out", str(tmp_path)]) == 0
    _same_as_shipped(tmp_path, HELDOUT / "analysis", ("seeds.csv", "agents.csv",
                                                      "paired.csv", "tables.md"))
    seeds = pd.read_csv(tmp_path / "seeds.csv")
    assert {a: sorted(g["seed"]) for a, g in seeds.groupby("agent")} == {
        a: list(range(10, 60)) for a in ("bbb", "greedy", "eps1", "eps5")}


@pytest.mark.skipif(not (WHEEL / "analysis").is_dir(), reason="the Wheel runs are not in")
def test_the_shipped_wheel_analysis_is_what_its_seeds_give(tmp_path):
    """Per delta, the shipped per-seed values give the shipped tables, and each agent's
    mean final regret there is its run's own summary (the runs' phases are not shipped)."""
    from bandits.core.files import write_csv

    deltas = sorted(p.name for p in (WHEEL / "analysis").iterdir())
    assert deltas == ["d0.5", "d0.7", "d0.9", "d0.95", "d0.99"]
    for d in deltas:
        shipped = WHEEL / "analysis" / d
        seeds = pd.read_csv(shipped / "seeds.csv")
        assert sorted(seeds["seed"].unique()) == list(range(10, 60))
        # seeds.csv holds six significant digits: the tables agree to those
        for name, table in (("agents.csv", confirm.agents_table(seeds)),
                            ("paired.csv", confirm.paired_table(seeds, "bbb"))):
            write_csv(table, tmp_path / name)
            pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name),
                                          pd.read_csv(shipped / name), rtol=1e-3)
        summaries = pd.concat([pd.read_csv(WHEEL / "runs" / f"{run}-{d}" / "summary.csv")
                               for run in ("decay-0.3", "eps1")]).set_index("agent")
        means = seeds.groupby("agent")["final"].mean()
        assert set(means.index) == set(summaries.index)
        for agent, mean in means.items():
            assert mean == pytest.approx(summaries.loc[agent, "cumulative_regret_mean"],
                                         rel=1e-5), (d, agent)


@pytest.mark.parametrize("page, registered", [(HELDOUT, "8931314"), (WHEEL, "615b58e")])
def test_each_heldout_run_started_after_its_preregistration_as_its_page_says(page, registered):
    """Every run in a held-out page's table started and finished when its ``config.json``
    says, and after the commit that pre-registered it (where git can tell)."""
    import json
    import re
    import subprocess
    from datetime import datetime

    rows = re.findall(r"^\| `((?:runs|tuning)/[^`]+)` \|(?: [^|]+ \|)?? (\S+Z)[^|]*\| (\S+Z)",
                      (page / "README.md").read_text(), flags=re.M)
    assert len(rows) >= 10
    made = subprocess.run(["git", "show", "-s", "--format=%cI", registered], cwd=ROOT,
                          capture_output=True, text=True)
    for run, started, finished in rows:
        record = json.loads((page / run / "config.json").read_text())
        assert (record["started_utc"], record["finished_utc"]) == (started, finished), run
        if made.returncode == 0 and not run.startswith("tuning"):
            assert datetime.fromisoformat(started.replace("Z", "+00:00")) > \
                datetime.fromisoformat(made.stdout.strip()), run


def _refused(argv: list[str], capsys) -> str:
    """The command's one line for ``argv``: exit status 2, no traceback, nothing written."""
    assert confirm.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("bandits.confirm: error: "), err
    return err


def test_runs_of_other_lengths_or_environments_are_not_joined(tmp_path, capsys):
    # greedy from a run of 20 steps, 1 % greedy from one of 30: not one experiment
    short = _folder(tmp_path, "short", _phases("greedy", range(4), end=21))
    long = _folder(tmp_path, "long", _phases("eps1", range(4), end=31))
    out = str(tmp_path / "out")
    err = _refused([str(short), str(long), "--steps", "20", "--late-from", "11", "--out", out],
                   capsys)
    assert f"{short}: greedy ran 20 steps, {long}: eps1 30" in err and "one step count" in err
    assert "ran 30 steps, not the 20 of --steps" in _refused(
        [str(long), "--steps", "20", "--late-from", "11", "--out", out], capsys)
    wheel = _folder(tmp_path, "wheel", _phases("eps1", range(4), end=21), env="wheel")
    err = _refused([str(short), str(wheel), "--steps", "20", "--late-from", "11", "--out", out],
                   capsys)
    assert f"{short} is a run on mushroom, {wheel} one on wheel (wheel_delta 0.95)" in err
    assert not (tmp_path / "out").exists()


def _damaged(tmp_path: Path, damage) -> Path:
    """A copy of the shipped run's record and phases.csv, its phases damaged."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(SHIPPED / "config.json", run)
    phases = pd.read_csv(SHIPPED / "phases.csv")
    damage(phases).to_csv(run / "phases.csv", index=False)
    return run


def _cell(phases: pd.DataFrame, value) -> pd.DataFrame:
    phases["regret"] = phases["regret"].astype(object)
    phases.loc[7, "regret"] = value
    return phases


@pytest.mark.parametrize("damage, says", [
    (lambda p: pd.concat([p, p.iloc[[30]]]), "line 1002: agent bbb, seed 1, start 10001 is "
                                             "there twice (line 32 too)"),
    (lambda p: p.drop(index=30), "line 32: agent bbb, seed 1: a phase starts at step 12001, "
                                 "not at step 10001"),
    (lambda p: _cell(p, float("nan")), "line 9: regret is empty, not a finite number"),
    (lambda p: _cell(p, float("inf")), "line 9: regret is inf, not a finite number"),
    (lambda p: _cell(p, "lots"), "line 9: regret is 'lots', not a finite number"),
    (lambda p: p.drop(columns="regret"), "no column 'regret'"),
    (lambda p: p.assign(seed=p.seed + 100 * (p.agent == "greedy")),
     "seed 100 is not one of the seeds of the run's config.json"),
])
def test_a_damaged_phases_file_is_one_line_not_a_table(tmp_path, capsys, damage, says):
    run = _damaged(tmp_path, damage)
    err = _refused([str(run), "--out", str(tmp_path / "out")], capsys)
    assert f"{run / 'phases.csv'}: " in err and says in err
    assert not (tmp_path / "out").exists()


def test_too_few_sign_flips_are_refused(tmp_path, capsys):
    err = _refused([str(SHIPPED), "--flips", "10", "--out", str(tmp_path / "out")], capsys)
    assert "--flips must be in" in err
    assert confirm.main([str(SHIPPED), "--flips", "10000", "--out", str(tmp_path / "out")]) == 0


def test_out_holding_a_users_files_is_refused_and_overwrite_replaces_only_its_own(tmp_path,
                                                                                   capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "tables.md").write_text("my own notes\n")
    (out / "seeds.csv").write_text("a,b\n1,2\n")
    for overwrite in ([], ["--overwrite"]):
        err = _refused([str(SHIPPED), "--out", str(out), *overwrite], capsys)
        assert f"{out / 'seeds.csv'} was not written by bandits.confirm" in err
    assert (out / "tables.md").read_text() == "my own notes\n"
    assert (out / "seeds.csv").read_text() == "a,b\n1,2\n"
    mine = tmp_path / "mine"
    assert confirm.main([str(SHIPPED), "--out", str(mine)]) == 0
    (mine / "regret.png").write_bytes(b"a figure")
    assert "is not empty; pass --overwrite" in _refused([str(SHIPPED), "--out", str(mine)],
                                                        capsys)
    assert confirm.main([str(SHIPPED), "--out", str(mine), "--overwrite"]) == 0
    assert (mine / "regret.png").read_bytes() == b"a figure"
    assert {p.name for p in mine.iterdir()} == {*confirm.OUTPUTS, "regret.png"}
    for name, begins in confirm.OUTPUTS.items():  # as the command recognises its own files
        assert (mine / name).read_text().startswith(begins), name


DECAYS = {"0": HELDOUT / "tuning" / "decay-0", "0.3": ROOT / "results/mushroom/memory-decay-0.3",
          "1": ROOT / "results/mushroom/memory-horizon"}
"""The runs of the held-out page's table of each baseline's decay (seeds 0-9)."""


def test_the_heldout_pages_decay_table_is_what_its_runs_give():
    """Each cell of the hand-made table of the baselines' decays: the mean final regret
    (bold where lowest, the decay chosen) +- its standard error, rounded, from each run's
    summary.csv (greedy's medians from its phases.csv)."""
    import math

    from bandits.records import reader

    lines = (HELDOUT / "README.md").read_text().splitlines()
    summaries = {d: reader.read(run / "summary.csv").set_index("agent")
                 for d, run in DECAYS.items()}
    for agent, label in (("greedy", "greedy"), ("eps1", "1 % greedy"), ("eps5", "5 % greedy")):
        means = {d: s.loc[agent, "cumulative_regret_mean"] for d, s in summaries.items()}
        low = min(means, key=means.__getitem__)
        cells = []
        for d, s in summaries.items():
            se = s.loc[agent, "cumulative_regret_std"] / math.sqrt(s.loc[agent, "seeds"])
            mean = f"{means[d]:.0f}"
            cells.append(f"{f'**{mean}**' if d == low else mean} +- {round(se)}")
            if agent == "greedy":
                phases = reader.read(DECAYS[d] / "phases.csv")
                finals = phases[phases.agent == agent].groupby("seed")["regret"].sum()
                cells[-1] += f" (median {finals.median():.0f})"
        row = f"| {label} | " + " | ".join(cells) + f" | {low} |"
        assert row in lines, row
