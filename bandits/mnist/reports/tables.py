"""The report's tables, from its rows (:mod:`bandits.mnist.reports.rows`): Table 1 (and
``table1.csv``), the two priors seed by seed, the commands, the out-of-distribution
check, Table 2, pruning and the complexity cost of every BBB row, the paper's numbers,
and ``bench``'s speed table. Each table is a :class:`pandas.DataFrame` of text cells
rendered by :func:`bandits.mnist.evaluation.markdown.pipe_table`; each number over seeds is written
by :func:`bandits.mnist.evaluation.markdown.fmt`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bandits.mnist.evaluation.markdown import fmt, pipe_table
from bandits.mnist.models.classifiers import n_parameters
from bandits.mnist.models.config import lenet5_parameters
from bandits.mnist.reports.rows import PRIOR_SETTINGS, paired_difference, settings_key

# Blundell et al. (2015): Table 1 (test error, %) and Table 2 (BBB 2 x 1200, pruned).
PAPER_TABLE1: dict[tuple[str, int], float] = {
    ("sgd", 400): 1.83, ("sgd", 800): 1.84, ("sgd", 1200): 1.88,
    ("dropout", 400): 1.51, ("dropout", 800): 1.33, ("dropout", 1200): 1.36,
    ("bbb-gaussian", 400): 1.82, ("bbb-gaussian", 800): 1.99, ("bbb-gaussian", 1200): 2.04,
    ("bbb-mixture", 400): 1.36, ("bbb-mixture", 800): 1.34, ("bbb-mixture", 1200): 1.32,
}
PAPER_TABLE2: dict[float, tuple[str, float]] = {
    0.0: ("2.4m", 1.24), 0.5: ("1.2m", 1.24), 0.75: ("600k", 1.24),
    0.95: ("120k", 1.29), 0.98: ("48k", 1.39),
}
OOD_INPUTS = ("test", "rotated_30", "rotated_60", "rotated_90", "inverted", "noise")
NOTES = [
    "- 0.1 % is 10 of the 10,000 test images.",
    "- Figures: fig2_test_error.png (Figure 2; the row of each method chosen on "
    "validation), fig3_weights.png (Figure 3, the same rows; BBB: one "
    "sample of the weights), fig4_snr.png (Figure 4, the SNR 10 log10(|mu|/sigma) in "
    "dB of the first seed of the scale-mixture row chosen on validation, the paper's "
    "Table 2 network, beside the Gaussian row chosen on validation).",
]


def _models_of(models: pd.DataFrame, r: Any) -> pd.DataFrame:
    """The models of row ``r`` (by seed)."""
    return models[models["row"] == r]


def _method(row: pd.Series) -> str:
    """The method column: the kind, marked where the row is chosen on validation."""
    return row["kind"] + (" (chosen)" if row["chosen"] else "")


def _is_mlp(row: pd.Series) -> bool:
    return row["arch"] == "mlp"


def table1(rows: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """Table 1: the test error of each row, beside the paper's."""
    cells = []
    for r, row in rows.iterrows():
        m, st = _models_of(models, r), row["settings"]
        n_w = (lenet5_parameters() if st["arch"] == "lenet5"
               else n_parameters([st["hidden"]] * st["layers"]))
        paper = PAPER_TABLE1.get((row["kind"], st["hidden"])) if _is_mlp(row) else None
        cells.append([_method(row), row["name"],
                      st["hidden"] if _is_mlp(row) else "-", f"{n_w / 1000:.0f}k",
                      row["epochs"], row["seeds"], fmt(m["val"]),
                      fmt(m["test"], bold=row["chosen"]), fmt(m["sampled"]),
                      fmt(m["final.test_error_mean"]), paper if paper else "-"])
    table = pd.DataFrame(cells, columns=[
        "Method", "Run", "Units/layer", "# weights", "Epochs", "Seeds", "Validation",
        "Test error", "BBB sampled avg", "Last epoch", "Paper"])
    return ["## Table 1: MNIST test error (%)", "",
            "Ours: the test error at each model's epoch of lowest validation error (BBB: the "
            "posterior-mean network, and the average of sampled networks), and at the last "
            "epoch; mean +- standard deviation over seeds.", "",
            pipe_table(table, "ll" + "r" * 9)]


def table1_rows(rows: pd.DataFrame, models: pd.DataFrame) -> list[dict[str, Any]]:
    """Table 1 as data (``table1.csv``): per row, the test error at each model's epoch of
    lowest validation error, mean and standard deviation over seeds; ``chosen`` marks the
    row of each method (and network) with the lowest mean validation error; ``samples``,
    ``init_rho``, ``complexity``, ``kl_factor`` and ``kl_factor_final`` are a BBB row's
    Monte Carlo samples per step, initial rho, complexity cost ('mc' or the closed form
    'kl'), the factor on its KL weights (1: the ELBO) and, for a scheduled factor, its
    value at the last epoch (empty: constant)."""
    out = []
    for r, row in rows.iterrows():
        st, errs = row["settings"], _models_of(models, r)["test"].to_numpy()
        bbb = st["model"] == "bbb"
        out.append({"method": row["kind"], "run": row["name"], "arch": st["arch"],
                    "estimator": st["estimator"] if bbb else "",
                    "prior": st["prior"] if bbb else "",
                    "kl_weighting": st["kl_weighting"] if bbb else "",
                    "hidden": st["hidden"] if _is_mlp(row) else "",
                    "epochs": row["epochs"], "seeds": row["seeds"],
                    "test_error_mean": round(float(np.mean(errs)), 4),
                    "test_error_std": round(float(np.std(errs, ddof=1)), 4)
                    if len(errs) > 1 else 0.0,
                    "optimizer": st["optimizer"], "lr": st["lr"],
                    "prior_settings": prior_text(st) if bbb else "",
                    "val_error_mean": round(row["val_mean"], 4),
                    "chosen": bool(row["chosen"]),
                    "samples": st["samples"] if bbb else "",
                    "init_rho": st["init_rho"] if bbb else "",
                    "complexity": st["complexity"] if bbb else "",
                    "kl_factor": st["kl_factor"] if bbb else "",
                    "kl_factor_final": (st["kl_factor_final"] or "") if bbb else ""})
    return out


def prior_text(st: dict[str, Any]) -> str:
    """A BBB model's prior: ``pi=0.5 sigma1=e^-0 sigma2=e^-6`` or ``sigma=e^-0``."""
    if st["prior"] == "gaussian":
        return f"sigma=e^-{st['neg_log_prior_sigma']:g}"
    return (f"pi={st['pi']:g} sigma1=e^-{st['neg_log_sigma1']:g} "
            f"sigma2=e^-{st['neg_log_sigma2']:g}")


def weighting_text(st: dict[str, Any]) -> str:
    """A BBB row's KL weighting, with its factor and a closed-form cost where not the
    defaults: ``uniform``, ``uniform x 0.1``, ``uniform, closed form``."""
    text = st["kl_weighting"]
    if st["kl_factor_final"] is not None:
        text += f" x {st['kl_factor']:g} -> {st['kl_factor_final']:g}"
    elif st["kl_factor"] != 1.0:
        text += f" x {st['kl_factor']:g}"
    if st["complexity"] == "kl":
        text += ", closed form"
    return text


PAIR_COLUMNS = ["Seeds", "Mixture lower on", "Difference: mean", "Standard error",
                "95 % interval", "Validation difference"]


def _pair_cells(d: dict[str, float]) -> list[Any]:
    """The cells of one seed-by-seed comparison (see
    :func:`bandits.mnist.reports.rows.paired_difference`)."""
    return [d["seeds"], d["lower"], f"{d['mean']:+.3f}", f"{d['se']:.3f}",
            f"{d['low']:+.2f} .. {d['high']:+.2f}", f"{d['val_mean']:+.3f}"]


def prior_pairs(rows: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """The two priors' chosen rows compared seed by seed, then every pair of rows whose
    settings differ only in the prior."""
    bbb_mlp = rows[rows["kind"].str.startswith("bbb-") & (rows["arch"] == "mlp")]
    picked = {(row["kind"], row["hidden"]): r for r, row in bbb_mlp[bbb_mlp["chosen"]].iterrows()}
    cells = []
    for hidden in sorted({h for _, h in picked}):
        if ("bbb-mixture", hidden) not in picked or ("bbb-gaussian", hidden) not in picked:
            continue
        mix, gau = picked[("bbb-mixture", hidden)], picked[("bbb-gaussian", hidden)]
        d = paired_difference(_models_of(models, mix), _models_of(models, gau))
        if d is not None:
            cells.append([hidden, rows.at[mix, "name"], rows.at[gau, "name"], *_pair_cells(d)])
    lines: list[str] = []
    if cells:
        lines = ["", "## Scale mixture against Gaussian, seed by seed", "",
                 "The chosen rows of the two priors, test error of the mixture minus the "
                 "Gaussian's for each seed both trained (points; 95 % interval of the "
                 "mean difference by Student's t; the validation difference is the same "
                 "for the validation errors).", "",
                 pipe_table(pd.DataFrame(cells, columns=["Units/layer", "Mixture row",
                                                         "Gaussian row", *PAIR_COLUMNS]),
                            "rllrrrrlr")]
    return lines + _same_training_pairs(bbb_mlp, models)


def _same_training_pairs(bbb_mlp: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """Every scale-mixture row against every Gaussian row trained the same way (the same
    settings but the prior's), seed by seed."""
    training = bbb_mlp["settings"].map(lambda st: settings_key(st, PRIOR_SETTINGS))
    cells = []
    for _, same in bbb_mlp.groupby(training, sort=False):
        for mix, m in same[same["kind"] == "bbb-mixture"].iterrows():
            for gau, g in same[same["kind"] == "bbb-gaussian"].iterrows():
                d = paired_difference(_models_of(models, mix), _models_of(models, gau))
                if d is None:
                    continue
                st = m["settings"]
                cells.append([st["hidden"], m["name"], prior_text(st), g["name"],
                              prior_text(g["settings"]),
                              f"{st['optimizer']} {st['lr']:g}, {weighting_text(st)}, "
                              f"{st['epochs']} epochs", *_pair_cells(d)])
    if not cells:
        return []
    table = pd.DataFrame(cells, columns=["Units/layer", "Mixture row", "Mixture prior",
                                         "Gaussian row", "Gaussian prior", "Training",
                                         *PAIR_COLUMNS])
    return ["", "## Scale mixture against Gaussian under the same training, seed by seed", "",
            "Every pair of rows whose settings differ only in the prior, test error of the "
            "mixture minus the Gaussian's at each model's best-validation epoch, for each seed "
            "both trained (points; columns as above).", "",
            pipe_table(table, "rlllllrrrrlr")]


def commands(models: pd.DataFrame) -> list[str]:
    """Each command once (in the order of the rows): its models, machine and wall time."""
    lines = ["", "Commands, machine and time (training + evaluation of all the models "
             "of the command):", ""]
    for _, s0 in models.drop_duplicates("command").iterrows():
        mine = models[models["command"] == s0["command"]].sort_values("line")
        lines.append(f"- `{s0['command']}`: {len(mine)} model(s); {s0['machine']}; "
                     f"{time_text(mine)}; {s0['seconds_per_epoch']:.1f} s per training "
                     "epoch and model")
    return lines


def time_text(mine: pd.DataFrame) -> str:
    """The time one command took (its models, in file order). Its batches (the models
    that trained together share a ``batch_wall_seconds``) ran one after another in one
    process, so their times add up to the wall time; in several worker processes they
    ran side by side, so with no more batches than processes the wall time is the
    longest batch's."""
    batches: dict[float, float] = {}
    for key, wall in zip(mine["batch_wall_seconds"], mine["wall_seconds"], strict=True):
        batches[key] = batches.get(key, 0.0) + wall
    total = sum(batches.values()) / 60
    workers = min(int(mine["workers"].iloc[0]), len(batches))
    if workers <= 1:
        return f"wall time {total:.1f} min"
    if len(batches) <= workers:
        return (f"wall time {max(batches.values()) / 60:.1f} min ({len(batches)} batches "
                f"side by side in {workers} processes; {total:.1f} min of batch time in all)")
    return (f"{total:.1f} min of batch time in all ({len(batches)} batches in {workers} "
            "processes side by side)")


def ood_table(rows: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """The out-of-distribution check of each row: mean predictive entropy on test digits
    and on inputs ever further from them (a column a run made before its input was added
    is left empty)."""
    columns = [f"ood.entropy_{i}" for i in OOD_INPUTS] + ["ood.max_prob_noise"]
    cells = [[row["kind"], row["name"],
              *(fmt(_models_of(models, r).get(c, pd.Series([math.nan])), 3, spread=False)
                for c in columns)]
             for r, row in rows.iterrows()]
    table = pd.DataFrame(cells, columns=["Method", "Run", "Test", "Rot. 30", "Rot. 60",
                                         "Rot. 90", "Inverted", "Noise", "Top prob., noise"])
    return ["", "## Out-of-distribution check", "",
            f"Mean predictive entropy (nats; the maximum is log 10 = {math.log(10):.3f}) on "
            "test digits, digits rotated by 30, 60 and 90 degrees, inverted digits and "
            "uniform-noise images, and the mean top-class probability on noise (mean over "
            "seeds). BBB: the average of the sampled networks.", "",
            pipe_table(table, "ll" + "r" * (len(OOD_INPUTS) + 1))]


def network(st: dict[str, Any]) -> str:
    """``2 x 400`` for the MLP, ``LeNet-5`` for the convolutional network."""
    return "LeNet-5" if st["arch"] == "lenet5" else f"{st['layers']} x {st['hidden']}"


def table2(best: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """Table 2 (pruning by SNR) of each of the ``best`` rows, beside the paper's."""
    lines: list[str] = []
    for r, row in best.iterrows():
        pruning = list(_models_of(models, r)["pruning"])
        cells = []
        for i, p in enumerate(pruning[0]):
            pw, pe = PAPER_TABLE2.get(p["removed_pct"] / 100, ("-", "-"))
            cells.append([f"{p['removed_pct']:g}%", f"{int(p['weights_left']):,}",
                          fmt([s[i]["test_error_mean"] for s in pruning]),
                          fmt([s[i]["test_error_sampled"] for s in pruning]), pw, f"{pe}%"])
        table = pd.DataFrame(cells, columns=[
            "Proportion removed", "# weights (ours)", "Test error, mean net", "Sampled avg",
            "Paper (2x1200): # weights", "Paper test error"])
        lines += ["", f"## Table 2: pruning by signal-to-noise ratio ({row['name']}, "
                  f"{network(row['settings'])}, last epoch, {row['seeds']} seed(s))", "",
                  pipe_table(table, "rrrrrr")]
    return lines


def pruning_every_row(bbb: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """The pruned test error of every BBB row, when they all pruned the same fractions."""
    firsts = [_models_of(models, r)["pruning"].iloc[0] for r in bbb.index]
    fracs = [p["removed_pct"] for p in firsts[0]]
    if any([p["removed_pct"] for p in f] != fracs for f in firsts):
        return []
    cells = []
    for r, row in bbb.iterrows():
        pruning = list(_models_of(models, r)["pruning"])
        cells.append([row["kind"], row["name"], row["hidden"],
                      *(fmt([s[i]["test_error_mean"] for s in pruning])
                        for i in range(len(fracs)))])
    table = pd.DataFrame(cells, columns=["Method", "Run", "Units/layer",
                                         *(f"{f:g}% removed" for f in fracs)])
    return ["", "## Pruning, every BBB row (test error of the posterior-mean "
            "network, last epoch, mean +- std over seeds)", "",
            pipe_table(table, "llr" + "r" * len(fracs))]


def cost_table(bbb: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """Whether the complexity cost acted: per BBB row, the cost (nats: the Monte Carlo
    estimate of KL(q || p), or the closed form) after the first and the last epoch, their
    ratio, and the last epoch's training NLL per image (mean over seeds)."""
    cells = []
    for r, row in bbb.iterrows():
        m = _models_of(models, r)
        first, last = m["first_epoch.kl"].to_numpy(), m["last_epoch.kl"].to_numpy()
        if np.isnan(first).any() or np.isnan(last).any():
            continue  # a run of no epochs
        st = row["settings"]
        first_kl, last_kl = float(np.mean(first)), float(np.mean(last))
        cells.append([row["kind"], row["name"], f"{st['optimizer']} {st['lr']:g}",
                      weighting_text(st), f"{first_kl:,.0f}", f"{last_kl:,.0f}",
                      f"{last_kl / first_kl:.2f}",
                      f"{float(np.mean(m['last_epoch.nll'].to_numpy())):.4f}"])
    table = pd.DataFrame(cells, columns=[
        "Method", "Run", "Optimiser", "KL weighting", "Cost, epoch 1", "Cost, last epoch",
        "Last / first", "Training NLL, last epoch"])
    return ["", "## What the complexity cost did (mean over seeds)", "",
            pipe_table(table, "llllrrrr")]


def paper_note(widths: list[int]) -> str:
    """The paper's numbers the report sets beside ours, for the widths it holds."""
    names = {"sgd": "SGD", "dropout": "dropout", "bbb-gaussian": "BBB Gaussian",
             "bbb-mixture": "BBB scale mixture"}
    per_width = [f"2 x {w}: " + ", ".join(f"{names[k]} {PAPER_TABLE1[(k, w)]:.2f}"
                                          for k in names)
                 for w in widths if ("sgd", w) in PAPER_TABLE1]
    table1_text = f"Table 1 ({'; '.join(per_width)}) and " if per_width else ""
    table2_text = ", ".join(f"{err:.2f}" for _, err in PAPER_TABLE2.values())
    return (f"- Paper: Blundell et al. (2015), {table1_text}Table 2 (pruning of the 2 x 1200 "
            f"scale-mixture model: {table2_text}; the paper's own Table 1 gives "
            f"{PAPER_TABLE1[('bbb-mixture', 1200)]:.2f} for that model).")


def speed_markdown(sp: dict[str, Any]) -> str:
    """The numbers of ``speed.json`` (``bench``) as a markdown table."""
    sizes = list(sp["sizes"].values())
    table = pd.DataFrame({
        "Architecture": [v["architecture"] for v in sizes],
        "MLP s/epoch": [f"{v['seconds_per_epoch']['mlp']:.2f}" for v in sizes],
        "BBB s/epoch": [f"{v['seconds_per_epoch']['bbb']:.2f}" for v in sizes],
        "BBB / MLP": [f"**{v['ratio_bbb_over_mlp']:.2f}**" for v in sizes],
        "First version: BBB / MLP": [f"{v['ratio_bbb_over_mlp_autograd']:.2f}" for v in sizes],
        "BBB speed-up over the first version": [f"{v['bbb_speedup_over_autograd']:.2f}x"
                                                for v in sizes],
        "Batched: models": [v["batched_models"] for v in sizes],
        "Batched speed-up": [f"**{v['batched_speedup']:.2f}x**" for v in sizes]})
    lines = [pipe_table(table, "l" + "r" * 7)]
    compiled = [v for v in sizes if "ratio_bbb_compiled_over_mlp" in v]
    if compiled:
        parts = [f"{v['architecture']}: BBB {v['seconds_per_epoch']['bbb-compiled']:.2f} "
                 f"s/epoch, **{v['ratio_bbb_compiled_over_mlp']:.2f}** x the MLP"
                 for v in compiled]
        lines += ["", "With `--compile` (BBB's per-weight work fused by torch.compile): "
                  + "; ".join(parts) + "."]
    timed = ("whole epochs" if sp["batches_timed"] == sp["batches_per_epoch"] else
             f"{sp['batches_timed']} of the {sp['batches_per_epoch']} minibatches of an epoch, "
             "scaled to the epoch")
    lines += ["", f"Medians of {sp['rounds']} interleaved rounds ({timed}); batched speed-up: "
              "the time of that many single-model epochs one after another over the time of "
              f"one batched epoch. `{sp['command']}`; {sp['machine']}."]
    return "\n".join(lines)
