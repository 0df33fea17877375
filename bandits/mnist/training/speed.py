"""``python -m bandits.mnist bench``: seconds per training epoch of BBB against the plain
MLP, of the batched trainer against one model trained with autograd (the baseline of
:mod:`bandits.mnist.training.autograd_baseline`), and of ``R`` models batched against ``R``
single ones; writes ``speed.csv`` and ``speed.json``."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from bandits.core import kernels
from bandits.core.files import machine, write_csv, write_json
from bandits.core.outputs import output_dir, release_dir
from bandits.mnist.data.splits import load_splits
from bandits.mnist.evaluation.evaluate import build_model, seed_everything
from bandits.mnist.evaluation.model_files import command_line
from bandits.mnist.models.config import BenchConfig, one
from bandits.mnist.models.priors import make_prior
from bandits.mnist.reports.tables import speed_markdown
from bandits.mnist.training.autograd_baseline import train_epoch
from bandits.mnist.training.train import build_classifiers


def bench(cfg: BenchConfig, argv: Sequence[str] = ()) -> dict[str, Any]:
    """Seconds per training epoch: BBB against the plain MLP, and R models batched.

    For each ``--bench-hidden`` size, in one process on the same data, alternating model by
    model (``--bench-rounds`` rounds) so that all see the same machine load:

    * ``mlp`` and ``bbb``: one model of the batched trainer
      (:mod:`bandits.mnist.models.classifiers`); their ratio is the cost of Bayes by Backprop
      over a plain network;
    * ``autograd-mlp`` and ``autograd-bbb``: one model trained with autograd
      (:func:`bandits.mnist.training.autograd_baseline.train_epoch`), the baseline;
    * ``bbb-batched``: ``--bench-runs`` BBB models (seeds) in one batched model, against
      as many single-model ``bbb`` epochs one after another.

    ``--bench-batches N`` times N minibatches and scales to a whole epoch (0: whole
    epochs). Medians over the rounds. Writes ``speed.csv`` and ``speed.json``.
    """
    splits = load_splits(cfg)  # before the output directory is made: the data may be missing
    out = output_dir(cfg.out, "mnist-bench", cfg.overwrite, ("speed.csv", "speed.json"),
                     kind="bandits.mnist")
    seed_everything(cfg.seed)
    train = splits["train"]
    n_batches = math.ceil(len(train.y) / cfg.batch_size)
    stop = n_batches if cfg.bench_batches <= 0 else min(cfg.bench_batches, n_batches)
    rows: list[dict[str, Any]] = []
    res: dict[str, Any] = {"sizes": {}}
    for hidden in cfg.bench_sizes():
        c = dataclasses.replace(cfg, hidden=hidden, seeds=1, compile=False)
        single = {kind: build_classifiers(dataclasses.replace(c, model=kind), [c])
                  for kind in ("sgd", "bbb")}
        many = [dataclasses.replace(c, seed=c.seed + k) for k in range(cfg.bench_runs)]
        batched = build_classifiers(c, many)
        autograd = {}
        for kind in ("sgd", "bbb"):
            ck = dataclasses.replace(c, model=kind)
            m = build_model(ck, torch.Generator(device=c.device).manual_seed(c.seed + 1)
                            if kind == "bbb" else None)
            autograd[kind] = (ck, m, torch.optim.Adam(m.parameters(), lr=c.lr))
        shuffle = torch.Generator().manual_seed(c.seed + 2)

        jobs: dict[str, Callable[[], object]] = {
            "mlp": partial(single["sgd"].train_epoch, train.x, train.y, c.batch_size,
                           ["uniform"], max_batches=stop),
            "bbb": partial(single["bbb"].train_epoch, train.x, train.y, c.batch_size,
                           [one(c.kl_weighting)], max_batches=stop),
            "autograd-mlp": partial(train_epoch, *autograd["sgd"][1:], train, autograd["sgd"][0],
                                    shuffle, max_batches=stop),
            "autograd-bbb": partial(train_epoch, *autograd["bbb"][1:], train, autograd["bbb"][0],
                                    shuffle, max_batches=stop),
            "bbb-batched": partial(batched.train_epoch, train.x, train.y, c.batch_size,
                                   [one(c.kl_weighting)] * len(many), max_batches=stop),
        }
        if cfg.compile:  # --compile: the single BBB model with its per-weight work fused
            fused = build_classifiers(dataclasses.replace(c, compile=True), [c])
            jobs["bbb-compiled"] = partial(fused.train_epoch, train.x, train.y, c.batch_size,
                                           [one(c.kl_weighting)], max_batches=stop)
        for r in range(cfg.bench_rounds + 1):  # round 0 warms up and is not recorded
            for name, job in jobs.items():
                _sync(c.device)
                t0 = time.perf_counter()
                job()
                _sync(c.device)
                dt = time.perf_counter() - t0
                if r == 0:
                    continue
                rows.append({"round": r, "hidden": hidden, "model": name,
                             "models": len(many) if name == "bbb-batched" else 1,
                             "batches": stop, "seconds": dt,
                             "seconds_per_epoch": dt * n_batches / stop})
                print(rows[-1], flush=True)
        med = {name: float(np.median([x["seconds_per_epoch"] for x in rows
                                      if x["model"] == name and x["hidden"] == hidden]))
               for name in jobs}
        res["sizes"][str(hidden)] = {
            "architecture": f"784-{'-'.join([str(hidden)] * c.layers)}-10",
            "seconds_per_epoch": med,
            "ratio_bbb_over_mlp": med["bbb"] / med["mlp"],
            "ratio_bbb_over_mlp_autograd": med["autograd-bbb"] / med["autograd-mlp"],
            "bbb_speedup_over_autograd": med["autograd-bbb"] / med["bbb"],
            "batched_models": len(many),
            "batched_speedup": len(many) * med["bbb"] / med["bbb-batched"]}
        if "bbb-compiled" in med:
            res["sizes"][str(hidden)]["ratio_bbb_compiled_over_mlp"] = (med["bbb-compiled"]
                                                                        / med["mlp"])
    write_csv(rows, out / "speed.csv")
    res.update({"rounds": cfg.bench_rounds, "batches_timed": stop, "batches_per_epoch": n_batches,
                "prior": str(make_prior(cfg)), "samples": cfg.samples,
                "batch_size": cfg.batch_size, "train_images": len(train.y),
                "optimiser": f"Adam lr={cfg.lr}", "device": cfg.device,
                "machine": machine(cfg.device), "kernels": kernels.record(),
                "command": command_line(argv)})
    write_json(res, out / "speed.json")
    release_dir(out)
    cfg.out = str(out)
    print(speed_markdown(res))
    return res


def _sync(device: str) -> None:
    """Wait for the GPU's queued work (timings)."""
    if device == "cuda":
        torch.cuda.synchronize()
