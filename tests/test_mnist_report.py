"""``python -m bandits.mnist report``: the models gathered into ``models.jsonl``, and the
shipped tables rebuilt from that file alone, byte for byte."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import urllib.request
from pathlib import Path

import pytest

from bandits import mnist
from bandits.core.files import write_csv
from bandits.mnist.evaluation.model_files import read_csv_rows
from bandits.mnist.reports.gather import MODELS_FILE, read_models
from bandits.mnist.reports.report import report

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "results" / "mnist"
# the experiments whose tables --report builds (tables.md, table1.csv)
REPORTED = ("2x400", "2x400-retrained", "2x1200", "lenet5")
TABLES = ("tables.md", "table1.csv")


def _models_only(src: Path, to: Path) -> Path:
    """A new directory ``to`` holding only a copy of ``src/models.jsonl`` (as a shipped
    experiment: no model's own files)."""
    to.mkdir(parents=True)
    shutil.copyfile(src / MODELS_FILE, to / MODELS_FILE)
    return to


def _explode(root: Path) -> None:
    """Write each line of ``root/models.jsonl`` back out as a model's own files, as a
    training run leaves them: ``summary.json``, ``config.json``, and an ``epochs.csv``
    holding the first and last epochs."""
    for r in read_models(root):
        d = root / r["model"]
        d.mkdir(parents=True, exist_ok=True)
        summary = {k: v for k, v in r.items()
                   if k not in ("model", "first_epoch", "last_epoch")}
        (d / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (d / "config.json").write_text(json.dumps(r["settings"], indent=2) + "\n")
        if r["first_epoch"] is not None:
            rows = [r["first_epoch"]]
            if r["last_epoch"]["epoch"] != r["first_epoch"]["epoch"]:
                rows.append(r["last_epoch"])
            write_csv(rows, d / "epochs.csv")


@pytest.mark.parametrize("name", REPORTED)
def test_the_shipped_tables_are_rebuilt_from_models_jsonl_alone(name, tmp_path, capsys):
    """The shipped ``models.jsonl`` alone (no model's own files) gives the shipped
    tables byte for byte; the figures, which need the models' histograms, are left out
    with a one-line note."""
    out = _models_only(SHIPPED / name, tmp_path / name)
    assert mnist.main(["report", str(out)]) == 0
    for table in TABLES:
        assert (out / table).read_bytes() == (SHIPPED / name / table).read_bytes(), table
    assert (out / MODELS_FILE).read_bytes() == (SHIPPED / name / MODELS_FILE
                                                     ).read_bytes()
    assert not list(out.glob("*.png"))
    [note] = [ln for ln in capsys.readouterr().err.splitlines() if "not drawn" in ln]
    assert "fig3_weights.png (from weights_hist.csv)" in note


def test_gathering_the_models_files_gives_the_same_file_and_tables(tmp_path):
    """Models' own directories (here written back from a shipped ``models.jsonl``) are
    gathered into the same ``models.jsonl``, byte for byte, and the tables built with
    the directories there are those built from the file alone."""
    out = _models_only(SHIPPED / "2x1200", tmp_path / "2x1200")
    _explode(out)
    (out / MODELS_FILE).unlink()
    report(out)
    assert (out / MODELS_FILE).read_bytes() == (SHIPPED / "2x1200" / MODELS_FILE
                                                     ).read_bytes()
    for table in TABLES:
        assert (out / table).read_bytes() == (SHIPPED / "2x1200" / table).read_bytes(), table


def test_a_new_run_beside_shipped_models_adds_to_them_and_a_rerun_replaces_its_own(tmp_path):
    """With a shipped ``models.jsonl`` and the files of some runs: a run whose directory
    is there replaces its models' lines, a new run adds its lines, every other line
    stays; the lines stay in the order of their directories."""
    out = _models_only(SHIPPED / "lenet5", tmp_path / "lenet5")
    shipped = {r["model"]: r for r in read_models(out)}
    _explode(out)
    for name in ("flipout", "lrt", "reparam"):  # shipped: only models.jsonl is kept
        shutil.rmtree(out / name)
    # a rerun of "sgd" with other numbers, and a new run "sgd-2"
    summary = json.loads((out / "sgd" / "summary.json").read_text())
    summary["best_validation"]["test_error_mean"] = 0.5
    (out / "sgd" / "summary.json").write_text(json.dumps(summary))
    shutil.copytree(out / "sgd", out / "sgd-2")
    report(out)
    records = read_models(out)
    assert [r["model"] for r in records] == ["flipout", "lrt", "reparam", "sgd", "sgd-2"]
    for r in records[:3]:
        assert r == shipped[r["model"]]
    assert records[3]["best_validation"]["test_error_mean"] == 0.5
    assert {k: v for k, v in records[4].items() if k != "model"} == {
        k: v for k, v in records[3].items() if k != "model"}
    # the new rows are in the tables; a run gone from the disk stays in models.jsonl
    rows = {r["run"]: r for r in read_csv_rows(out / "table1.csv")}
    assert float(rows["sgd"]["test_error_mean"]) == 0.5 and "sgd-2" in rows
    shutil.rmtree(out / "sgd-2")
    report(out)
    assert [r["model"] for r in read_models(out)][-1] == "sgd-2"


def test_a_directory_without_models_is_one_clear_error(tmp_path, capsys):
    assert mnist.main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no models there" in err


@pytest.mark.parametrize("name", ["tables.md", "table1.csv"])
def test_report_refuses_to_write_over_a_users_own_table(name, tmp_path, capsys):
    out = _models_only(SHIPPED / REPORTED[0], tmp_path / "m")
    mine = "my own notes, not a report's\n"
    (out / name).write_text(mine)
    assert mnist.main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{name} was not written by a report" in err
    assert (out / name).read_text() == mine and not (out / "fig2_test_error.png").exists()
    (out / name).unlink()  # once it is moved away, the report runs and may rerun
    assert mnist.main(["report", str(out)]) == 0 and mnist.main(["report", str(out)]) == 0


def test_the_grids_shipped_table_agrees_with_its_models():
    """The prior grid's ``settings.csv`` (written by its training command; one seed per
    setting) holds the numbers of its models in ``models.jsonl``."""
    grid = SHIPPED / "grid-2x400-20-epochs"
    with open(grid / "settings.csv") as f:
        settings = {r["setting"]: r for r in csv.DictReader(f)}
    records = read_models(grid)
    assert len(records) == len(settings) == 27
    for r in records:
        row = settings[r["model"].rsplit("__seed=", 1)[0]]
        bv = r["best_validation"]
        assert float(row["val_error_mean"]) == bv["val_error_mean"]
        assert float(row["test_error_mean"]) == bv["test_error_mean"]
        assert float(row["test_error_sampled_mean"]) == bv["test_error_sampled"]
        assert float(row["final_test_error_mean"]) == r["final"]["test_error_mean"]


def test_a_tiny_run_reports_the_same_from_its_files_and_from_models_jsonl(
        mnist_data_dir, tmp_path, monkeypatch):
    """A real run of two settings and two seeds: the tables built with the models' files
    there (figures drawn) are those built from ``models.jsonl`` alone."""
    def no_network(*args, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    exp = tmp_path / "exp"
    argv = ["--data-dir", str(mnist_data_dir), "--train-size", "300", "--test-size", "200",
            "--hidden", "16", "--batch-size", "50", "--eval-samples", "2",
            "--ood-images", "20", "--prune", "0,50", "--no-progress", "--epochs", "1",
            "--seeds", "2", "--prior", "mixture", "gaussian", "--out", str(exp / "grid")]
    assert mnist.main(argv) == 0
    assert not list(exp.rglob("*.png"))  # no per-model plots without --plots
    report(exp)
    assert all((exp / f).is_file() for f in ("fig2_test_error.png", "fig3_weights.png",
                                             "fig4_snr.png"))
    alone = _models_only(exp, tmp_path / "alone")
    report(alone)
    for name in (*TABLES, MODELS_FILE):
        assert (alone / name).read_bytes() == (exp / name).read_bytes(), name
    assert len(read_models(alone)) == 4


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("damage, message", [
    ("repeat", "again (first on line 1)"),
    ("garbage", "line 3: not a model's record"),
    ("cut", "not a model's record"),
    ("nan", "not a number"),
])
def test_a_damaged_models_file_is_one_line_naming_it(tmp_path, capsys, damage, message):
    out = _models_only(SHIPPED / "2x400", tmp_path / "2x400")
    lines = (out / MODELS_FILE).read_text().splitlines(keepends=True)
    if damage == "repeat":
        lines.append(lines[0])
    elif damage == "garbage":
        lines.insert(2, "this is not json\n")
    elif damage == "cut":
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    else:
        record = json.loads(lines[0])
        record["best_validation"]["test_error_mean"] = float("nan")
        lines[0] = json.dumps(record) + "\n"
    (out / MODELS_FILE).write_text("".join(lines))
    capsys.readouterr()
    assert mnist.main(["report", str(out)]) == 2
    err = _one_line(capsys)
    assert MODELS_FILE in err and message in err
    assert not (out / "tables.md").exists()


@pytest.mark.parametrize("damage", ["summary-cut", "epochs-gone"])
def test_a_damaged_models_directory_is_one_line_naming_the_file(tmp_path, capsys, damage):
    out = _models_only(SHIPPED / "2x400", tmp_path / "2x400")
    _explode(out)
    (out / MODELS_FILE).unlink()
    model = out / read_models(_models_only(SHIPPED / "2x400", tmp_path / "copy"))[1]["model"]
    if damage == "summary-cut":
        text = (model / "summary.json").read_text()
        (model / "summary.json").write_text(text[: len(text) // 2])
        name = "summary.json"
    else:
        (model / "epochs.csv").unlink()
        name = "epochs.csv"
    capsys.readouterr()
    assert mnist.main(["report", str(out)]) == 2
    assert str(model / name) in _one_line(capsys)


def test_redraw_refuses_another_models_weights_a_damaged_file_and_a_bandit_run(
        mnist_data_dir, tmp_path, capsys):
    import shutil

    base = ["--data-dir", str(mnist_data_dir), "--train-size", "64", "--test-size", "32",
            "--hidden", "8", "--epochs", "1", "--threads", "1", "--no-progress",
            "--ood-images", "10"]
    a, b = tmp_path / "a", tmp_path / "b"
    assert mnist.main([*base, "--seed", "1", "--out", str(a)]) == 0
    assert mnist.main([*base, "--seed", "2", "--out", str(b)]) == 0
    assert mnist.main(["redraw", str(b)]) == 0  # its own weights
    weights = (b / "raw" / "model.pt").read_bytes()
    shutil.copy(a / "raw" / "model.pt", b / "raw" / "model.pt")
    capsys.readouterr()
    assert mnist.main(["redraw", str(b)]) == 2
    assert "weights of another model" in _one_line(capsys)
    (b / "raw" / "model.pt").write_bytes(weights[:-50])
    assert mnist.main(["redraw", str(b)]) == 2
    assert "damaged or truncated" in _one_line(capsys)
    (b / "raw" / "model.pt").unlink()
    assert mnist.main(["redraw", str(b)]) == 2
    assert "stay out of git" in _one_line(capsys)
    run = tmp_path / "bandit"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"env": "mushroom", "agent": ["bbb"]}))
    assert mnist.main(["redraw", str(run)]) == 2
    assert "no MNIST model's settings" in _one_line(capsys)
    grid = tmp_path / "grid"
    assert mnist.main([*base, "--seeds", "2", "--out", str(grid)]) == 0
    capsys.readouterr()
    assert mnist.main(["redraw", str(grid)]) == 2
    assert "a grid's top directory" in _one_line(capsys)  # not "train the model again"


def test_train_overwrite_removes_an_earlier_reports_files(mnist_data_dir, tmp_path):
    out = tmp_path / "exp"
    argv = ["--data-dir", str(mnist_data_dir), "--train-size", "64", "--test-size", "32",
            "--hidden", "8", "--epochs", "1", "--threads", "1", "--no-progress",
            "--ood-images", "10", "--out", str(out)]
    assert mnist.main(argv) == 0
    report(out)
    assert (out / "tables.md").is_file() and (out / MODELS_FILE).is_file()
    (out / "my-notes.txt").write_text("mine")
    assert mnist.main([*argv, "--overwrite"]) == 0
    assert not (out / "tables.md").exists() and not (out / MODELS_FILE).exists()
    assert not (out / "table1.csv").exists()
    assert (out / "my-notes.txt").read_text() == "mine"


# what a model's settings hold besides its training: where it was written, and how the
# command was run
_NOT_TRAINING = {"out", "overwrite", "plots", "exact", "run_id", "workers", "resume",
                 "progress", "checkpoint_every"}


def training(record: dict) -> str:
    """A model's training settings and seed, as one key (what its record holds but where it
    was written and how its command was run)."""
    return json.dumps({k: v for k, v in record["settings"].items() if k not in _NOT_TRAINING},
                      sort_keys=True)


def retrained_errors() -> dict[str, tuple[list[float], list[float]]]:
    """Each row of results/mnist/2x400-retrained (its folder): the test errors at the
    best-validation epoch of its models and of Table 1's models of the same training,
    seed by seed."""
    table1 = {training(r): r for r in read_models(SHIPPED / "2x400")}
    rows: dict[str, tuple[list[float], list[float]]] = {}
    for r in sorted(read_models(SHIPPED / "2x400-retrained"),
                    key=lambda r: r["settings"]["seed"]):
        here, theirs = rows.setdefault(r["model"].split("/seed=")[0], ([], []))
        here.append(r["best_validation"]["test_error_mean"])
        theirs.append(table1[training(r)]["best_validation"]["test_error_mean"])
    return rows


def test_the_retrained_scale_mixtures_are_table_1s_models_and_the_other_rows_are_not():
    """results/mnist/2x400-retrained/README.md: each of its twelve models has the training
    settings and seed of one of Table 1's models; on this folder's Intel processor the
    three 300-epoch scale mixtures retrain to Table 1's own models (the same losses and
    errors, the same pruning), and the SGD, dropout and 2-sample Gaussian models do not."""
    retrained = read_models(SHIPPED / "2x400-retrained")
    shipped = read_models(SHIPPED / "2x400")

    def numbers(r):  # what a model's training gives, without its timings
        return [r["best_validation"], r["final"], r["ood"], r.get("pruning"),
                *({k: v for k, v in r[e].items() if "seconds" not in k}
                  for e in ("first_epoch", "last_epoch"))]

    table1 = {training(r): r for r in shipped}
    assert len(retrained) == 12 and len(table1) == len(shipped)
    same = {r["model"]: numbers(r) == numbers(table1[training(r)]) for r in retrained}
    assert {m for m, s in same.items() if s} == {f"mc-300/ramp/seed={s}" for s in range(3)}
    assert {m.split("/seed=")[0] for m in same} == {
        "sgd", "dropout", "adam-blundell-samples-2/gaussian", "mc-300/ramp"}
    # the page: trained on an Intel processor in the libraries' own kernels (AVX-512)
    assert {(r["kernels"]["mode"], r["kernels"]["aten"], "Intel" in r["kernels"]["processor"])
            for r in retrained} == {("native", "AVX512", True)}


def test_the_retrained_pages_table_is_what_the_two_sets_of_models_give():
    """The table of results/mnist/2x400-retrained/README.md: each row's test error at the
    best-validation epoch, retrained and in Table 1's records (seeds 0-2, mean +- std), and
    the paired difference with its range over the seeds."""
    import statistics

    rows = {"SGD, 60 epochs": "sgd", "dropout, 60 epochs": "dropout",
            "BBB, Gaussian, 2 samples, 60 epochs": "adam-blundell-samples-2/gaussian",
            "BBB, scale mixture, 300 epochs": "mc-300/ramp"}
    errors = retrained_errors()

    def cells(row: str) -> list[str]:
        a, b = errors[rows[row]]
        assert len(a) == 3
        d = [x - y for x, y in zip(a, b)]
        diff = ("0 (the same models)" if not any(d) else
                f"{statistics.mean(d):+.2f} ({min(d):+.2f} .. {max(d):+.2f})")
        return [f"{statistics.mean(v):.2f} +- {statistics.stdev(v):.2f}" for v in (a, b)] + [diff]

    text = (SHIPPED / "2x400-retrained" / "README.md").read_text()
    split = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
             if line.startswith("|")]
    shown = {cells_[0]: cells_[1:] for cells_ in split if cells_[0] in rows}
    assert shown == {row: cells(row) for row in rows}


def test_exact_and_default_mode_seeds_of_a_setting_share_its_row():
    """``exact`` decides the rounding, not the model: a record made before the setting
    existed, one made in the default mode and one in exact mode group together."""
    from bandits.mnist.models.config import Config
    from bandits.mnist.reports.rows import settings_key

    old = {k: v for k, v in dataclasses.asdict(Config()).items() if k != "exact"}
    keys = {settings_key(old), settings_key({**old, "exact": False}),
            settings_key({**old, "exact": True, "seed": 3})}
    assert len(keys) == 1
    assert settings_key({**old, "hidden": 1200}) not in keys
