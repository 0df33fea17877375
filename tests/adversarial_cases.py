"""The table of the adversarial cases of :mod:`test_adversarial`: every command that reads
result files back or touches the repository, given a tampered copy of a shipped result or a
bad flag. Each case is (id, command, argv, setup, tamper, says): ``setup`` names the shipped
files copied into the test's folder (:data:`SETUPS`), ``tamper`` is (file, how, argument) or
None, and ``says`` the words the one line of the refusal must hold."""

from __future__ import annotations

from typing import NamedTuple

import adversarial_tampering as t


class Case(NamedTuple):
    id: str
    command: str
    argv: tuple[str, ...]
    setup: str = "none"
    tamper: tuple | None = None
    says: tuple[str, ...] = ()
    xfail: str | None = None


SETUPS = {
    "none": {},
    "heldout": {"my runs/bbb-10": "results/mushroom/heldout/runs/bbb-10",
                "my runs/greedy-10": "results/mushroom/heldout/runs/greedy-10"},
    "quick": {"my run": "results/mushroom/quick"},
    "wheel": {"my run": "results/wheel/heldout/runs/eps1-d0.5"},
    "mnist": {"my report/models.jsonl": "results/mnist/2x400/models.jsonl"},
    "users": {"my runs/bbb-10": "results/mushroom/heldout/runs/bbb-10",
              "my runs/greedy-10": "results/mushroom/heldout/runs/greedy-10",
              "users/tables.md": "README.md"},  # a user's own tables.md where --out goes
    "docs": {},  # the files doc_tables reads, copied by the test (test_doc_tables._copy)
}

CONFIRM = ("{tmp}/my runs/bbb-10", "{tmp}/my runs/greedy-10", "--out", "{tmp}/out",
           "--flips", "10000")
PLOT = ("{tmp}/my run", "--out", "{tmp}/fig.png")
DIAGNOSE = ("{tmp}/my run",)
REPORT = ("report", "{tmp}/my report")
DOCS = ("--check", "--root", "{tmp}")

# how a CSV file is tampered with: (name, function, argument, words said besides its name)
CSV_KINDS = [
    ("text", t.cell, None, ("line 4",)),  # the column is filled in per file
    ("inf", t.cell, "inf", ("line 4",)),
    ("nan", t.cell, "nan", ("line 4",)),
    ("empty-cell", t.cell, "", ("line 4",)),
    ("column-removed", t.drop_column, None, ()),
    ("column-renamed", t.rename_column, None, ()),
    ("row-twice", t.duplicate_row, None, ()),
    ("row-removed", t.remove_row, None, ()),
    ("seeds-renumbered", t.renumber_seeds, None, ()),
    ("agent-renamed", t.rename_agent, None, ()),
    ("truncated", t.truncate, None, ()),
    ("empty-file", t.empty, None, ()),
    ("binary", t.garbage, None, ()),
    ("missing", t.missing, None, ()),
    ("directory", t.directory, None, ()),
]


def _csv_cases(command: str, argv: tuple, setup: str, rel: str, column: str, agent: str,
               skip: tuple = (), xfail: dict | None = None) -> list[Case]:
    name = rel.rsplit("/", 1)[-1]
    out = []
    for kind, how, arg, words in CSV_KINDS:
        if kind in skip:
            continue
        if how is t.cell:
            arg = (column, "abc" if arg is None else arg)
        elif how in (t.drop_column, t.rename_column):
            arg = column
        elif how is t.rename_agent:
            arg = agent
        which = {t.cell: column, t.drop_column: column, t.rename_column: column,
                 t.rename_agent: agent}.get(how)
        tag = f"{kind}-{which}" if which else kind
        out.append(Case(f"{command}-{rel}-{tag}", command, argv, setup, (rel, how, arg),
                        (name, *words), (xfail or {}).get(kind)))
    return out


def _json_cases(command: str, argv: tuple, setup: str, rel: str,
                xfail: dict | None = None) -> list[Case]:
    name = rel.rsplit("/", 1)[-1]
    kinds = [("invalid-json", t.text, '{"steps": 50000,'),
             ("a-list", t.text, "[1, 2]"),
             ("empty-file", t.empty, None),
             ("binary", t.garbage, None),
             ("directory", t.directory, None),
             ("no-steps", t.json_set, ("steps", ...)),
             ("no-seeds", t.json_set, ("seeds", ...)),
             ("no-agent", t.json_set, ("agent", ...)),
             ("steps-a-string", t.json_set, ("steps", "many")),
             ("seeds-a-string", t.json_set, ("seeds", "ten")),
             ("steps-mismatched", t.json_set, ("steps", 40000)),
             ("agent-a-number", t.json_set, ("agent", 7))]
    return [Case(f"{command}-{rel}-{kind}", command, argv, setup, (rel, how, arg), (name,),
                 (xfail or {}).get(kind)) for kind, how, arg in kinds]


def _flag(command: str, argv: tuple, says: tuple, setup: str = "none", tag: str = "",
          xfail: str | None = None) -> Case:
    tag = tag or " ".join(argv).replace("{tmp}/", "")
    return Case(f"{command}-flags-{tag}", command, argv, setup, None, says,
                xfail)


def confirm_cases() -> list[Case]:
    c = "confirm"
    cases = _csv_cases(c, CONFIRM, "heldout", "my runs/bbb-10/phases.csv", "regret", "bbb")
    cases += _csv_cases(c, CONFIRM, "heldout", "my runs/greedy-10/phases.csv", "start",
                        "greedy", skip=("inf", "nan", "truncated", "binary", "directory"))
    cases += _json_cases(c, CONFIRM, "heldout", "my runs/bbb-10/config.json")
    runs = ("{tmp}/my runs/bbb-10", "{tmp}/my runs/greedy-10")
    out = ("--out", "{tmp}/out")
    for flag, value in [("--steps", "0"), ("--steps", "-5"), ("--steps", "abc"),
                        ("--steps", "1.5"), ("--steps", "40000"), ("--late-from", "0"),
                        ("--late-from", "60000"), ("--late-from", "x"), ("--flips", "5"),
                        ("--flips", "1000000000"), ("--flips", "abc")]:
        cases.append(_flag(c, (*runs, *out, flag, value), (flag,), "heldout"))
    for value in ("nosuchagent", ""):
        cases.append(_flag(c, (*runs, *out, "--reference", value),
                           (f"reference agent {value!r}",), "heldout"))
    cases += [
        _flag(c, (*runs, *out, "--frobnicate"), ("--frobnicate",), "heldout"),
        _flag(c, ("--out", "{tmp}/out"), ("dirs",), tag="no-dirs"),
        _flag(c, ("{tmp}/no such run", *out), ("no such run",), tag="dir-missing"),
        _flag(c, ("{tmp}/my runs/bbb-10/summary.csv", *out), ("summary.csv",), "heldout",
              tag="dir-is-a-file"),
        _flag(c, (runs[0], runs[0], *out), ("bbb-10",), "heldout", tag="same-dir-twice"),
        _flag(c, (runs[0], *out), ("greedy",), "heldout", tag="one-agent-only"),
        _flag(c, (*runs, "--out", "{tmp}/my runs/bbb-10/config.json"), ("config.json",),
              "heldout", tag="out-is-a-file"),
        _flag(c, (*runs, "--out", "{tmp}/my runs"), ("my runs",), "heldout",
              tag="out-holds-users-files"),
        _flag(c, (*runs, "--out", "{tmp}/users", "--overwrite"), ("tables.md",), "users",
              tag="overwrite-keeps-a-users-tables"),
        _flag(c, (*runs, "--out", "{tmp}/users/tables.md/x"), ("tables.md",), "users",
              tag="out-below-a-file"),
    ]
    return cases


def plot_cases() -> list[Case]:
    c = "plot"
    cases = _csv_cases(c, PLOT, "quick", "my run/metrics.csv", "cumulative_regret", "eps5",
                       skip=("row-twice", "row-removed"))
    cases += _csv_cases(c, PLOT, "quick", "my run/metrics.csv", "step", "bbb",
                        skip=("inf", "nan", "truncated", "empty-file", "binary", "missing",
                              "directory", "seeds-renumbered"))
    cases += _json_cases(c, PLOT, "quick", "my run/config.json")
    run = "{tmp}/my run"
    cases += [
        _flag(c, (run, "--titles", "a", "--out", "{tmp}/f.png"), ("--titles",), "quick",
              tag="titles-without-panels"),
        _flag(c, (run, run, "--panels", "--titles", "a", "--out", "{tmp}/f.png"),
              ("--titles",), "quick", tag="titles-fewer-than-dirs"),
        _flag(c, (run, "--out", "{tmp}/no such folder/f.png"), ("no such folder",), "quick",
              tag="out-folder-missing"),
        _flag(c, (run, "--out", "{tmp}/my run"), ("my run",), "quick", tag="out-is-a-folder"),
        _flag(c, (run, "--out", "{tmp}/fig.xyz"), ("fig.xyz",), "quick",
              tag="out-unknown-format"),
        _flag(c, (run, "--out", "{tmp}/my run/metrics.csv"), ("metrics.csv",), "quick",
              tag="out-is-the-runs-own-file"),
        _flag(c, (run, "--frobnicate"), ("--frobnicate",), "quick"),
        _flag(c, (), ("dirs",), tag="no-dirs"),
        _flag(c, ("{tmp}/no such run", "--out", "{tmp}/f.png"), ("no such run",),
              tag="dir-missing"),
        _flag(c, ("{tmp}/my run/config.json", "--out", "{tmp}/f.png"), ("config.json",),
              "quick", tag="dir-is-a-file"),
    ]
    return cases


def diagnose_cases() -> list[Case]:
    c = "diagnose"
    cases = _csv_cases(c, DIAGNOSE, "quick", "my run/phases.csv", "expected_regret", "eps5")
    cases += _csv_cases(c, DIAGNOSE, "quick", "my run/probes.csv", "predicted_std", "bbb",
                        skip=("nan", "row-removed", "missing", "truncated"))
    cases += [Case("diagnose-my run/probes.csv-text-predicted_mean", c, DIAGNOSE, "quick",
                   ("my run/probes.csv", t.cell, ("predicted_mean", "abc")),
                   ("probes.csv", "line 4"))]
    cases += _csv_cases(c, DIAGNOSE, "quick", "my run/memory.csv", "shown", "bbb",
                        skip=("nan", "row-removed", "missing", "truncated", "column-renamed"))
    cases += _json_cases(c, DIAGNOSE, "quick", "my run/config.json")
    run = "{tmp}/my run"
    for value in ("0", "-1", "abc", "1.5", "1000000000"):
        cases.append(_flag(c, (run, "--last", value), ("--last",), "quick"))
    cases += [
        _flag(c, (run, "--frobnicate"), ("--frobnicate",), "quick"),
        _flag(c, (), ("dir",), tag="no-dir"),
        _flag(c, ("{tmp}/no such run",), ("no such run",), tag="dir-missing"),
        _flag(c, ("{tmp}/my run/config.json",), ("config.json",), "quick",
              tag="dir-is-a-file"),
        _flag(c, (run, run), ("unrecognized",), "quick", tag="two-dirs"),
        _flag(c, ("{tmp}/my run",), ("phases.csv",), "wheel", tag="run-without-phases"),
    ]
    return cases


def report_cases() -> list[Case]:
    c = "report"
    rel = "my report/models.jsonl"
    kinds = [("line-binary", t.jsonl, ("line", "\x00\x01\x02\n")),
             ("line-a-list", t.jsonl, ("line", "[1, 2]\n")),
             ("line-empty", t.jsonl, ("line", "\n")),
             ("infinity", t.jsonl, ("best_validation.test_error_mean", float("inf"))),
             ("error-a-string", t.jsonl, ("best_validation.test_error_mean", "low")),
             ("error-negative", t.jsonl, ("best_validation.test_error_mean", -5.0)),
             ("no-model-key", t.jsonl, ("model", ...)),
             ("no-settings", t.jsonl, ("settings", ...)),
             ("settings-a-string", t.jsonl, ("settings", "none")),
             ("no-final", t.jsonl, ("final", ...)),
             ("final-a-list", t.jsonl, ("final", [1])),
             ("best-validation-a-number", t.jsonl, ("best_validation", 5)),
             ("no-seed", t.jsonl, ("settings.seed", ...)),
             ("model-a-number", t.jsonl, ("model", 3)),
             ("empty-file", t.empty, None),
             ("binary", t.garbage, None),
             ("directory", t.directory, None)]
    cases = [Case(f"report-{kind}", c, REPORT, "mnist", (rel, how, arg), ("models.jsonl",))
             for kind, how, arg in kinds]
    cases += [
        _flag(c, ("report",), ("dir",), tag="no-dir"),
        _flag(c, ("report", "{tmp}/no such report"), ("no such report",), tag="dir-missing"),
        _flag(c, ("report", "{tmp}/my report/models.jsonl"), ("models.jsonl",), "mnist",
              tag="dir-is-a-file"),
        _flag(c, ("report", "{tmp}/my report", "--frobnicate"), ("--frobnicate",), "mnist"),
        _flag(c, ("report", "{tmp}/my report", "{tmp}"), ("unrecognized",), "mnist",
              tag="two-dirs"),
    ]
    return cases


def docs_cases() -> list[Case]:
    c = "doc_tables"
    phases = "results/mushroom/heldout/runs/bbb-10/phases.csv"
    cases = _csv_cases(c, DOCS, "docs", phases, "regret", "bbb",
                       skip=("inf", "empty-cell", "row-removed", "binary", "directory"))
    cases += _csv_cases(c, DOCS, "docs", "results/mnist/2x400/table1.csv", "test_error_mean",
                        "x", skip=("inf", "nan", "row-twice", "row-removed", "missing",
                                   "seeds-renumbered", "agent-renamed", "binary"))
    cases += _csv_cases(c, DOCS, "docs", "results/regression/regression.csv", "rmse_inside",
                        "x", skip=("nan", "row-twice", "row-removed", "missing", "empty-cell",
                                   "seeds-renumbered", "agent-renamed", "binary",
                                   "column-renamed"))
    cases += [Case(f"doc_tables-quick-config-{k}", c, DOCS, "docs",
                   ("results/mushroom/quick/config.json", how, arg), ("config.json",))
              for k, how, arg in [("invalid-json", t.text, "{"),
                                  ("no-seeds", t.json_set, ("seeds", ...)),
                                  ("steps-a-string", t.json_set, ("steps", "many")),
                                  ("a-list", t.text, "[]")]]
    cases += [Case(f"doc_tables-against-{k}", c, DOCS, "docs", (rel, how, arg), (name,))
              for k, rel, name, how, arg in [
                  ("json-invalid", "results/bench/against/against.json", "against.json",
                   t.text, "{"),
                  ("csv-empty", "results/bench/against/against.csv", "against.csv", t.empty,
                   None)]]
    cases += [
        _flag(c, ("--root", "{tmp}/no such root"), ("no such root",), tag="root-missing"),
        _flag(c, ("--root", "{tmp}/file.txt"), ("file.txt",), tag="root-is-a-file"),
        _flag(c, ("--frobnicate",), ("--frobnicate",)),
        _flag(c, ("--check", "extra"), ("unrecognized",), tag="positional"),
    ]
    return cases


def other_cases() -> list[Case]:
    cases = [
        _flag("figures", ("--frobnicate",), ("--frobnicate",)),
        _flag("figures", ("extra",), ("unrecognized",), tag="positional"),
        _flag("figures", ("--check=yes",), ("--check",), tag="check-with-a-value"),
    ]
    s = "same_bytes"
    for argv, says in [(("--checks", "nosuch"), "--checks"), (("--checks",), "--checks"),
                       (("--mkl-cbwr", "FAST"), "--mkl-cbwr"),
                       (("--mkl-cbwr", "AVX2,LOOSE"), "--mkl-cbwr"),
                       (("--mkl-cbwr", ""), "--mkl-cbwr"),
                       (("--frobnicate",), "--frobnicate")]:
        cases.append(_flag(s, (*argv, "--out", "{tmp}/o"), (says,)))
    # refused for the missing emulator first where there is none (the words: either's)
    cases += [
        _flag(s, ("--out", "{tmp}/my run/config.json"), (), "quick", tag="out-is-a-file"),
        _flag(s, ("--out", "{tmp}/my run"), (), "quick", tag="out-holds-users-files"),
        _flag(s, ("--data-dir", "{tmp}/no such data", "--checks", "bandit", "--out",
                  "{tmp}/o"), (), tag="data-dir-missing"),
    ]
    for rev in ["HEAD:README.md", "HEAD:bandits", "results", "HEAD..HEAD~1",
                "refs/heads/no-such-branch", "HEAD@{100000}", "a b", "\n", "--all", "-p",
                "HEAD^{blob}", "deadbeef", "HEAD~1~100000", "..", "@{u}x"]:
        cases.append(Case(f"bench-against-{rev!r}", "bench",
                          (f"--against={rev}", "--out", "{tmp}/bench out"), "none", None,
                          (f"--against {rev!r} is not a commit",)))
    return cases


CASES = [*confirm_cases(), *plot_cases(), *diagnose_cases(), *report_cases(), *docs_cases(),
         *other_cases()]

XFAIL: dict[str, str] = {}
"""The cases that fail today, by id: what goes wrong, in one line (for the next round)."""
