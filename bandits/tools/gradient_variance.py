"""How noisy is each estimator's gradient? ``python -m bandits.gradient_variance``.

For one fixed MNIST minibatch and one fixed posterior, the gradient of the data term
(the minibatch's mean negative log-likelihood) with respect to every posterior mean is
drawn ``--draws`` times under each estimator of :data:`bandits.bayes.ESTIMATORS`:
``reparam`` (one weight sample for the minibatch), ``lrt`` (the local
reparameterisation trick) and ``flipout`` (Wen et al. 2018). Per layer, the variance
over the draws of each weight's gradient, averaged over the layer's weights, for the
2 x 400 MLP of the paper and for LeNet-5, at initialisation (means as
``torch.nn.Linear``/``Conv2d``, posterior sigma ``--init-sigma``) on the first
``--batch`` training images. Writes ``gradient_variance.csv`` and ``.json`` (command,
machine, wall time) to ``--out`` (default: a new directory under ``runs/``).
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from bandits.bayes import ESTIMATORS, MLP, GaussianPrior, LeNet5, make_lenet5, make_mlp
from bandits.core import kernels
from bandits.core.command_line import build_parser, first_paragraph
from bandits.core.config import BIG, COUNT, SIGMA, UsageError, check_ranges, setting
from bandits.core.files import machine, package_versions, write_csv, write_json
from bandits.core.idx import load_mnist, preprocess
from bandits.core.outputs import OutputDirError, output_dir, release_dir


def _model(arch: str, estimator: str, init_sigma: float) -> MLP | LeNet5:
    torch.manual_seed(0)  # the same means for every estimator
    prior = GaussianPrior(1.0)
    if arch == "lenet5":
        return make_lenet5(prior=prior, init_sigma=init_sigma, estimator=estimator)
    model = make_mlp(784, [400, 400], 10, prior=prior, init_sigma=init_sigma)
    for layer in model.bayes_layers():
        layer.estimator = estimator
    return model


def layer_variances(arch: str, estimator: str, x: torch.Tensor, y: torch.Tensor,
                    draws: int, init_sigma: float) -> list[dict]:
    """Per layer: the mean over its weights of the variance of d NLL / d mu over draws."""
    model = _model(arch, estimator, init_sigma)
    torch.manual_seed(1)
    if arch == "mlp":
        x = x.flatten(1)
    layers = model.bayes_layers()
    grads: list[list[torch.Tensor]] = [[] for _ in layers]
    for _ in range(draws):
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        for g, layer in zip(grads, layers):
            grad = layer.weight_mu.grad
            assert grad is not None  # backward() reached every mean
            g.append(grad.detach().clone())
    rows = []
    for i, (g, layer) in enumerate(zip(grads, layers)):
        stack = torch.stack(g)
        rows.append({"arch": arch, "layer": i + 1, "kind": type(layer).__name__,
                     "weights": layer.weight_mu.numel(), "estimator": estimator,
                     "draws": draws, "gradient_variance": float(stack.var(0).mean()),
                     "gradient_mean_square": float(stack.mean(0).square().mean())})
    return rows


@dataclass
class Settings:
    """The benchmark's settings; each field is a CLI flag (``--kebab-case``)."""

    draws: int = setting(200, "gradient draws per estimator", range=(2, BIG))
    batch: int = setting(128, "images in the minibatch", range=COUNT)
    init_sigma: float = setting(0.05, "posterior sigma of every weight", range=SIGMA)
    data_dir: Path | None = setting(None, "directory holding mnist/*.gz (else "
                                          "$BANDITS_DATA_DIR, the cache)", type=Path)
    out: Path | None = setting(None, "output directory (default: a new directory under "
                                     "runs/)", type=Path)
    overwrite: bool = setting(False, "allow writing into an existing non-empty --out (its "
                                     "earlier gradient_variance files are replaced)")
    exact: bool = setting(False, kernels.EXACT_HELP)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = Settings(**vars(build_parser(Settings, "python -m bandits.gradient_variance",
                                            first_paragraph(__doc__)).parse_args(argv)))
        check_ranges(args)
        args.exact = kernels.settle(args.exact)
        argv = kernels.recorded(argv, args.exact)
    except (UsageError, ValueError) as e:
        print(f"bandits.gradient_variance: error: {e}", file=sys.stderr)
        return 2
    data = load_mnist(args.data_dir)  # bad data: one line (bandits.core.startup.Command)
    torch.set_num_threads(1)
    x = torch.as_tensor(preprocess(data.train_images[: args.batch])).reshape(-1, 1, 28, 28)
    y = torch.as_tensor(data.train_labels[: args.batch]).long()
    start = time.perf_counter()
    rows = [r for arch in ("mlp", "lenet5") for est in ESTIMATORS
            for r in layer_variances(arch, est, x, y, args.draws, args.init_sigma)]
    table = pd.DataFrame(rows)
    base = table[table["estimator"] == "reparam"].set_index(["arch", "layer"])
    table["relative_to_reparam"] = [
        r.gradient_variance / base.loc[(r.arch, r.layer), "gradient_variance"]
        for r in table.itertuples()]
    try:
        args.out = output_dir(args.out, "gradient-variance", args.overwrite,
                              ("gradient_variance.csv", "gradient_variance.json"),
                              kind="bandits.gradient_variance")
    except OutputDirError as e:
        print(f"bandits.gradient_variance: error: {e}", file=sys.stderr)
        return 2
    write_csv(table, args.out / "gradient_variance.csv")
    write_json({"command": "python -m bandits.gradient_variance " + shlex.join(argv),
                "machine": machine(), "versions": package_versions(),
                "wall_seconds": round(time.perf_counter() - start, 1)},
               args.out / "gradient_variance.json")
    release_dir(args.out)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"outputs in {args.out}")
    return 0

