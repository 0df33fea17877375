"""The README's and the docs' result tables are the ones their shipped files give."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from pinned import needs_recorded_torch

from bandits.tools import doc_tables, neural_tables

REPO = Path(__file__).resolve().parents[1]

def test_every_generated_table_matches_its_files(capsys):
    assert doc_tables.main(["--check"]) == 0, capsys.readouterr().err


def test_every_file_with_results_has_its_blocks():
    names = {m["name"] for f in doc_tables.FILES
             for m in doc_tables.BLOCK.finditer((REPO / f).read_text(encoding="utf-8"))}
    assert names == set(doc_tables.GENERATORS)


def _copy(tmp_path: Path) -> Path:
    """The pages and every shipped result file, under ``tmp_path``: what the tables and
    the pages' values are written from."""
    shutil.copytree(REPO / "results", tmp_path / "results")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    return tmp_path


@pytest.mark.slow
def test_a_changed_number_is_caught_and_rewritten(tmp_path, capsys):
    root = _copy(tmp_path)
    metrics = root / "results/mushroom/quick/metrics.csv"
    m = pd.read_csv(metrics)
    m.loc[(m.agent == "eps5") & (m.step == m.step.max()), "cumulative_regret"] = 99999
    m.to_csv(metrics, index=False)
    assert doc_tables.main(["--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "docs/bandit-results.md: quick" in err and "quick-detail" in err
    before = (root / "docs/bandit-results.md").read_text()
    assert "99999" not in before  # --check writes nothing
    assert doc_tables.main(["--root", str(root)]) == 0
    assert "99999" in (root / "docs/bandit-results.md").read_text()
    assert doc_tables.main(["--check", "--root", str(root)]) == 0


def _one_line_error(root: Path, capsys) -> str:
    before = {f: (root / f).read_bytes() for f in doc_tables.FILES}
    for check in (["--check"], []):
        assert doc_tables.main([*check, "--root", str(root)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert {f: (root / f).read_bytes() for f in doc_tables.FILES} == before  # nothing written
    return err


def test_a_missing_value_in_a_file_is_an_error_not_a_row_of_fewer_seeds(tmp_path, capsys):
    root = _copy(tmp_path)
    path = root / "results/mushroom/paper-horizon/diagnosis_seeds.csv"
    t = pd.read_csv(path)
    t.loc[3, "cumulative_regret"] = float("nan")
    t.to_csv(path, index=False)
    assert "diagnosis_seeds.csv" in _one_line_error(root, capsys)


@pytest.mark.parametrize("damage", ["cut", "garbage", "missing"])
def test_a_damaged_or_missing_source_file_is_one_line(tmp_path, capsys, damage):
    root = _copy(tmp_path)
    files = {"cut": "results/mushroom/paper-horizon/diagnosis_seeds.csv",
             "garbage": "results/regression/regression.csv",
             "missing": "results/mushroom/quick/summary.csv"}
    path = root / files[damage]
    if damage == "cut":
        path.write_text(path.read_text()[:-40])
    elif damage == "garbage":
        path.write_bytes(bytes(range(256)) * 8)
    else:
        path.unlink()
    assert path.name in _one_line_error(root, capsys)


def test_broken_end_markers_are_an_error_not_a_match(tmp_path, capsys):
    root = _copy(tmp_path)
    readme = root / "README.md"
    readme.write_text(readme.read_text().replace("<!-- end generated -->",
                                                 "<!-- end generatd -->"))
    assert "README.md" in _one_line_error(root, capsys)


def test_an_unknown_block_name_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown generated table 'nope'"):
        doc_tables.regenerate("<!-- generated: nope -->\nx\n<!-- end generated -->\n", tmp_path)


def _pinned_or_skip(shipped: Path) -> None:
    """The byte-for-byte promise (docs/simulator.md, "Same bytes: what is promised"): the
    same bytes under the pinned kernels (bandits.core.kernels) on any x86-64 processor with
    AVX2, with the torch version the result was made with. Skipped, saying so, only where
    the promise does not reach; the shipped result must have been made under the pin as it
    is now, and this process (conftest.py pins before torch loads) must run under it."""
    import json

    from bandits.core import kernels

    if not kernels.applies():
        pytest.skip("the same bytes are promised under the pinned kernels on x86-64 only "
                    "(not in exact mode, or another processor)")
    if not _has_avx2():
        pytest.skip("the same bytes are promised on x86-64 processors with AVX2; this one "
                    "has none")
    versions = json.loads(shipped.read_text()).get("versions", {})
    made = versions.get("kernels", {})
    assert made.get("pinned") is True, f"{shipped} was not made under the pinned kernels"
    assert {k: made.get(k) for k in kernels.PIN} == kernels.PIN, \
        f"{shipped} was made under another pin than bandits.core.kernels.PIN: make it again"
    needs_recorded_torch(shipped)  # else a skip naming both versions (tests/pinned.py)
    assert kernels.in_force(), "the tests run without the pinned kernels (see conftest.py)"


def _has_avx2() -> bool:
    try:
        return " avx2 " in f" {Path('/proc/cpuinfo').read_text().split(chr(10) * 2)[0]} "
    except OSError:  # no /proc: let torch tell
        import torch

        return torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


@pytest.mark.slow
def test_the_shipped_regression_reruns_to_the_same_numbers(tmp_path):
    from bandits.tools.regression import main as regression

    _pinned_or_skip(REPO / "results/regression/config.json")
    assert regression(["--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "regression.csv").read_bytes() == \
        (REPO / "results/regression/regression.csv").read_bytes()


@pytest.mark.slow
def test_the_default_command_reruns_to_the_shipped_quick_result(tmp_path, mushroom_data_dir):
    from bandits.simulator.run import main as run

    _pinned_or_skip(REPO / "results/mushroom/quick/config.json")
    out = tmp_path / "quick"
    assert run(["--out", str(out), "--log-points", "500", "--no-progress",
                "--data-dir", str(mushroom_data_dir)]) == 0
    for name in ("summary.csv", "metrics.csv", "phases.csv"):
        assert (out / name).read_bytes() == \
            (REPO / "results/mushroom/quick" / name).read_bytes(), name


def test_a_table_whose_markers_were_deleted_is_an_error(tmp_path):
    import shutil

    from bandits.tools import doc_tables

    for name in doc_tables.FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "results", tmp_path / "results", dirs_exist_ok=True)
    readme = tmp_path / "README.md"
    text = readme.read_text().replace("<!-- generated: table2 -->\n", "", 1)
    readme.write_text(text.replace("| 1.37 +- 0.07 |", "| 1.00 +- 0.07 |"))
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 2


def test_a_figure6_table_with_a_seed_missing_is_an_error(tmp_path):
    import shutil

    import pandas as pd

    from bandits.tools import memory_tables
    from bandits.tools.table_cells import TableError

    run = tmp_path / "results/mushroom/memory-decay-0.3"
    shutil.copytree(REPO / "results/mushroom/memory-decay-0.3", run)
    phases = pd.read_csv(run / "phases.csv")
    phases[~((phases.agent == "greedy") & (phases.seed == 9))].to_csv(run / "phases.csv",
                                                                       index=False)
    with pytest.raises(TableError, match="no rows of agent greedy, seed 9"):
        memory_tables.figure6_preset(tmp_path)


def test_the_heldout_table_joins_runs_agent_by_agent(tmp_path):
    """Mushroom's held-out table reads every block's folder, each holding some agents:
    the tuning run split agent by agent gives the same rows as the run itself."""
    import json

    from bandits.tools import heldout_tables, memory_tables

    whole = REPO / memory_tables.PRESET_RUN
    phases = pd.read_csv(whole / "phases.csv")
    record = json.loads((whole / "config.json").read_text())
    runs = tmp_path / heldout_tables.HELDOUT_RUNS
    for name, agents in (("bbb-0", ["bbb"]), ("greedy-0", ["greedy"]),
                         ("eps1-eps5-0", ["eps1", "eps5"])):
        (runs / name).mkdir(parents=True)
        phases[phases.agent.isin(agents)].to_csv(runs / name / "phases.csv", index=False)
        (runs / name / "config.json").write_text(json.dumps({**record, "agent": agents}))
    (runs / "a-run-without-phases").mkdir()  # a folder still running: not read
    joined = heldout_tables.figure6_heldout(tmp_path).splitlines()
    alone = memory_tables.figure6_preset(REPO).splitlines()
    assert joined[0] == alone[0] and joined[3:] == alone[3:]
    assert joined[2].split("|")[2:] == alone[2].split("|")[2:]
    assert "held-out seeds, each baseline at its own decay, 10 seeds" in joined[2]


def test_the_wheel_heldout_table_says_where_bbb_is_below_greedy(tmp_path):
    """One row per delta, in the deltas' order, from bandits.confirm's per-seed values;
    "yes" only where the one-sided p is below 1 %."""
    import numpy as np

    from bandits.tools import heldout_tables

    rng = np.random.default_rng(0)
    for delta, gap in (("0.9", 0.0), ("0.5", -300.0)):
        rows = [{"agent": a, "seed": s, "final": 1000 + rng.normal(0, 50)
                 + (gap if a == "bbb" else 0), "late": 0.1}
                for a in heldout_tables.WHEEL_AGENTS for s in range(10, 30)]
        seeds = pd.DataFrame(rows)
        out = tmp_path / heldout_tables.WHEEL_ANALYSIS / f"d{delta}"
        out.mkdir(parents=True)
        seeds.to_csv(out / "seeds.csv", index=False)
    lines = heldout_tables.wheel_heldout(tmp_path).splitlines()
    assert [line.split("|")[1].strip() for line in lines[2:]] == ["0.5", "0.9"]
    assert lines[2].rstrip(" |").endswith("yes") and lines[3].rstrip(" |").endswith("no")
    assert "**" in lines[2].split("|")[3]  # BBB lowest at delta 0.5, in bold


def _cell(path: Path, row, column: str, value) -> None:
    t = pd.read_csv(path)
    t[column] = t[column].astype(object)
    t.loc[row, column] = value
    t.to_csv(path, index=False)


PRESET_PHASES = "results/mushroom/memory-decay-0.3/phases.csv"


def _greedy_seed_9_twice(path: Path) -> None:
    t = pd.read_csv(path)
    pd.concat([t, t[(t.agent == "greedy") & (t.seed == 9)]]).to_csv(path, index=False)


def _greedy_seeds_renumbered(path: Path) -> None:
    t = pd.read_csv(path)
    t.loc[t.agent == "greedy", "seed"] += 100
    t.to_csv(path, index=False)


@pytest.mark.parametrize("rel, damage, says", [
    (PRESET_PHASES, lambda p: _cell(p, 5, "regret", float("inf")),
     "line 7: regret is inf, not a finite number"),
    (PRESET_PHASES, lambda p: _cell(p, 5, "regret", "lots"),
     "line 7: regret is 'lots', not a finite number"),
    (PRESET_PHASES, _greedy_seed_9_twice, "agent greedy, seed 9, start 1 is there twice"),
    ("results/mushroom/paper-horizon/diagnosis_seeds.csv", _greedy_seeds_renumbered,
     "seed 100 is not one of the seeds of the run's config.json"),
    ("results/mushroom/paper-horizon/phases.csv", _greedy_seeds_renumbered,
     "seed 100 is not one of the seeds of the run's config.json"),
    ("results/mushroom/paper-horizon/diagnosis_seeds.csv",
     lambda p: _cell(p, 2, "expected_regret_per_step_last", "--"),
     "line 4: expected_regret_per_step_last is '--', not a finite number"),
    ("results/mushroom/quick/summary.csv", lambda p: _cell(p, 1, "steps", "many"),
     "line 3: steps is 'many', not a finite number"),
    ("results/mushroom/quick/summary.csv",
     lambda p: _cell(p, 1, "cumulative_expected_regret_mean", "x"),
     "line 3: cumulative_expected_regret_mean is 'x', not a finite number"),
    ("results/mushroom/quick/metrics.csv", lambda p: _cell(p, 9, "cumulative_regret", "-inf"),
     "line 11: cumulative_regret is -inf, not a finite number"),
])
def test_a_tampered_run_file_is_one_line_and_no_page_is_written(tmp_path, capsys, rel, damage,
                                                                says):
    """Each file a table is read from is checked against what its writer wrote
    (bandits.records.reader): a non-finite or non-numeric cell, a row twice, seeds other
    than the run's are one line naming the file and the line, with --check and without."""
    root = _copy(tmp_path)
    damage(root / rel)
    err = _one_line_error(root, capsys)
    assert f"{root / rel}: " in err and says in err, err


def test_every_printed_standard_error_is_its_value_rounded(monkeypatch):
    """Every s.e. a generated table prints is the value its files give, rounded to the
    digits shown (399.66 is 400, never 399 by truncation): each "+- s" of every table is
    printed by table_cells.se_text from the value computed, and se_text rounds. (The
    ranking's "X +- Y lower than" and Table 2, copied from the MNIST report's tables.md,
    are printed elsewhere.)"""
    import re
    from collections import Counter

    from bandits.tools import heldout_tables, memory_tables, table_cells

    real = table_cells.se_text
    assert [real(v, d) for v, d in ((399.66, 0), (399.4, 0), (0.0026, 3), (3.96, 1))] == \
        ["400", "399", "0.003", "4.0"]
    printed: list[tuple[float, int, str]] = []

    def recording(se: float, digits: int) -> str:
        printed.append((se, digits, real(se, digits)))
        return printed[-1][2]

    for module in (table_cells, doc_tables, memory_tables, heldout_tables, neural_tables):
        if hasattr(module, "se_text"):
            monkeypatch.setattr(module, "se_text", recording)
    for name, generate in doc_tables.GENERATORS.items():
        printed.clear()
        text = re.sub(r"\S+ \+- \S+ lower than", "", generate(REPO))
        shown = Counter(re.findall(r"\+- (-?[\d.]+\d)", text))
        if name == "table2":
            continue
        assert "+- nan" not in text and shown <= Counter(t for _, _, t in printed), name
        for se, digits, t in printed:
            assert float(t) == round(se, digits) and abs(float(t) - se) <= 0.5 * 10**-digits, \
                (name, se, t)
