"""One classifier as an ordinary :class:`bandits.bayes.MLP`: its predictions, test
error, predictive entropy on noise images, and test error after pruning the weights
with the lowest signal-to-noise ratio (the paper's Table 2)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from bandits.bayes import MLP, make_lenet5, make_mlp, prune_by_snr
from bandits.mnist.data.splits import PIXEL_SCALE, Split
from bandits.mnist.models.classifiers import CLASSES, IN_FEATURES, seed_streams
from bandits.mnist.models.config import Config
from bandits.mnist.models.priors import init_sigma, make_prior


def is_bayesian(model: MLP) -> bool:
    """Whether the model has Bayesian layers."""
    return bool(model.bayes_layers())


def build_model(cfg: Config, generator: torch.Generator | None = None) -> MLP:
    """The classifier of ``cfg.model``: ``784 -> hidden x layers -> 10``, or LeNet-5."""
    if cfg.arch == "lenet5":
        return make_lenet5(bayesian=cfg.model == "bbb", prior=make_prior(cfg),
                           init_sigma=init_sigma(cfg), estimator=cfg.estimator,
                           generator=generator).to(cfg.device)
    hidden = [cfg.hidden] * cfg.layers
    if cfg.model == "bbb":
        return make_mlp(IN_FEATURES, hidden, CLASSES, bayesian=True, prior=make_prior(cfg),
                        init_sigma=init_sigma(cfg), generator=generator, device=cfg.device,
                        estimator=cfg.estimator)
    drop = cfg.dropout if cfg.model == "dropout" else 0.0
    return make_mlp(IN_FEATURES, hidden, CLASSES, bayesian=False, dropout=drop,
                    device=cfg.device)


def seed_everything(seed: int) -> None:
    """Seed torch's and numpy's global generators (initial weights, dropout, samples)."""
    torch.manual_seed(seed)
    np.random.seed(seed)


@torch.no_grad()
def predict(model: MLP, x: Tensor, mode: str = "mean", samples: int = 1,
            chunk: int = 5000) -> Tensor:
    """Predictive class probabilities ``(n, 10)``.

    Args:
        model: The classifier.
        x: Images ``(n, 784)``.
        mode: BBB only: ``"mean"`` (the posterior-mean network) or ``"sample"``
            (the average of ``samples`` sampled networks; each network is one draw
            held for all images).
        samples: Networks averaged in ``"sample"`` mode.
        chunk: Images per forward call.
    """
    def probs() -> Tensor:
        return torch.cat([F.softmax(model(xc), -1) for xc in x.split(chunk)])

    model.eval()
    if not is_bayesian(model):
        return probs()
    if mode == "mean":
        with model.sampling("mean"):
            return probs()
    total = torch.zeros(len(x), CLASSES, device=x.device)
    with model.sampling("held"):
        for _ in range(samples):
            model.resample()  # one network for every image of this pass
            total += probs()
    return total / samples


def error_pct(probs: Tensor, y: Tensor) -> float:
    """Classification error in percent."""
    return 100.0 * (probs.argmax(-1) != y).float().mean().item()


def entropy(probs: Tensor) -> Tensor:
    """Entropy (nats) of each predictive distribution ``(n, classes) -> (n,)``."""
    return -(probs * probs.clamp_min(1e-12).log()).sum(-1)


def errors(model: MLP, split: Split, cfg: Config, sampled: bool) -> dict[str, float]:
    """Test error (%) of the mean network and, with ``sampled``, of the sampled average:
    ``{"mean": ..., "sampled": ...}``."""
    out = {"mean": error_pct(predict(model, split.x, "mean"), split.y)}
    if sampled and is_bayesian(model):
        out["sampled"] = error_pct(predict(model, split.x, "sample", cfg.eval_samples), split.y)
    return out


ROTATIONS = (30, 60, 90)  # degrees: the digits turned further and further from upright


def rotate(x: Tensor, degrees: float) -> Tensor:
    """Images ``(n, 784)`` turned by ``degrees`` about their centre (bilinear, zeros
    outside)."""
    a = math.radians(degrees)
    theta = torch.tensor([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0]],
                         dtype=x.dtype, device=x.device).expand(len(x), 2, 3)
    img = x.reshape(-1, 1, 28, 28)
    grid = F.affine_grid(theta, list(img.shape), align_corners=False)
    return F.grid_sample(img, grid, align_corners=False).reshape(len(x), -1)


def shifted_inputs(test: Split, cfg: Config) -> dict[str, Tensor]:
    """The test digits and inputs ever further from them: uniform-noise images
    (independent pixel values 0..255, scaled like the data), inverted digits (white
    background) and digits rotated by each of :data:`ROTATIONS`."""
    g = torch.Generator().manual_seed(seed_streams(cfg.seed)["ood"])
    noise = torch.randint(0, 256, (cfg.ood_images, IN_FEATURES), generator=g).float()
    x_in = test.x[: cfg.ood_images]
    return {"test": x_in, "noise": (noise / PIXEL_SCALE).to(test.x.device),
            "inverted": 255.0 / PIXEL_SCALE - x_in,
            **{f"rotated_{d}": rotate(x_in, d) for d in ROTATIONS}}


ENTROPY_BINS = np.linspace(0.0, math.log(CLASSES), 24)


def ood_check(model: MLP, test: Split, cfg: Config) -> tuple[dict[str, float], list[dict]]:
    """Mean predictive entropy on each of :func:`shifted_inputs`, and its histogram.

    A model that knows what it does not know has a high entropy on inputs unlike its
    training data (the maximum is ``log 10 = 2.303`` nats). For BBB the predictive
    distribution averages ``--eval-samples`` sampled networks (``mean_*``: the
    posterior-mean network alone). Returns the means (``summary.json``'s ``ood``) and
    the histogram rows (``ood_entropy.csv``: input, bin, count, of the predictive
    distribution used for the means).
    """
    res: dict[str, float] = {"max_entropy": math.log(CLASSES), "images": cfg.ood_images}
    hist: list[dict] = []
    inputs = shifted_inputs(test, cfg)
    for name, mode in (("", "sample"), ("mean_", "mean")):
        if name and not is_bayesian(model):
            continue
        for kind, x in inputs.items():
            p = predict(model, x, mode, cfg.eval_samples)
            h = entropy(p)
            res[f"{name}entropy_{kind}"] = h.mean().item()
            if kind == "noise":
                res[f"{name}max_prob_noise"] = p.max(-1).values.mean().item()
            if not name:
                counts, _ = np.histogram(h.cpu().numpy(), ENTROPY_BINS)
                hist += [{"input": kind, "entropy_left": float(a), "entropy_right": float(b),
                          "count": int(c)}
                         for a, b, c in zip(ENTROPY_BINS[:-1], ENTROPY_BINS[1:], counts)]
    return res, hist


def prune_table(model: MLP, test: Split, cfg: Config) -> list[dict[str, float]]:
    """Test error with the lowest-SNR fractions of the weights removed (Table 2)."""
    n_weights = sum(m.weight_mu.numel() for m in model.bayes_layers())
    rows = []
    for frac in cfg.prune_fractions():
        removed = prune_by_snr(model, frac)
        err = errors(model, test, cfg, sampled=True)
        rows.append({"removed_pct": 100 * frac, "weights_left": n_weights - removed,
                     "test_error_mean": err["mean"], "test_error_sampled": err["sampled"]})
    prune_by_snr(model, 0.0)  # back to the whole network
    return rows
