"""``R`` independent MLPs with every parameter in one flat tensor, trained without autograd.

A population holds ``R`` independent MLPs, one per run (the seeds of one agent, or the
settings of a grid). Their parameters live in ``(R, P)``
tensors, one row per run, each row the layers' weights and biases one after another:
the per-weight work of a training step (sampling ``w = mu + sigma * eps`` with
:func:`sample_weights`, the softplus, the complexity cost's gradient with
:func:`bandits.bayes.cost.posterior_grads`, Adam) is then a handful of whole-tensor
operations however many layers the network has, and a forward pass is one batched matmul
per layer on views of the row.

The networks are built by :func:`bandits.bayes.mlp.make_mlp` (its initialisation,
priors and layer shapes) and copied in, so a population of several models starts from
exactly the weights each model would have alone. Each model may have its own prior: the
complexity cost's constants are then ``(R, 1)`` columns
(:func:`bandits.bayes.priors.runs_prior_consts`).

Used by the bandit agents (:mod:`agents.neural`) and the MNIST classifiers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bandits.bayes.layers import BayesLinear, RunsLinear, batched_linear
from bandits.bayes.mlp import MLP
from bandits.bayes.priors import Prior, map_consts, runs_prior_consts


def _affine(x: Tensor, layer: tuple[Tensor, Tensor]) -> Tensor:
    return batched_linear(x, *layer)


class FlatMLP(nn.Module):
    """``R`` MLPs ``in -> hidden -> out`` with ReLU, parameters as ``(R, P)`` rows.

    A Bayesian network has posterior means ``mu`` and ``rho`` (``sigma = softplus(rho)``);
    a deterministic one has only ``mu`` (its weights).

    **Disjoint inputs** (``arms = K > 0``): the NeuralUCB and NeuralTS papers give arm
    ``a`` the input ``x_a = (0, ..., x, ..., 0)``, the context ``x (d)`` in the ``a``-th
    of ``K`` blocks (``d K`` inputs). The first layer of such a network (``W (h, d K)``)
    only ever meets one block, so it is kept as per-arm blocks ``W_a (h, d)``, stored as
    one ``(K h, d)`` weight with the bias ``(h)`` shared: an input row is the context and
    a one-hot of its arm (``d + K``, what every agent feeds), and the layer gives
    ``W_a x + b`` without building the ``d K`` vector. ``models`` are then built for
    ``d K`` inputs (their first layer is the dense one, initialised as such) and reshaped.

    Args:
        models: MLPs with a runs dimension (from :func:`bandits.bayes.mlp.make_mlp`),
            all of the same shape and kind; their runs are stacked in order.
        arms: ``K`` for disjoint inputs, else 0.
    """

    def __init__(self, models: Sequence[MLP], arms: int = 0) -> None:
        super().__init__()
        first = models[0]
        kinds = {type(layer) for m in models for layer in m.layers}
        if len(kinds) != 1 or not kinds <= {BayesLinear, RunsLinear}:
            raise ValueError("FlatMLP needs MLPs of BayesLinear or of RunsLinear layers alone")
        if any(not isinstance(m.act, nn.ReLU) or not isinstance(m.drop, nn.Identity)
               for m in models):
            raise ValueError("FlatMLP supports ReLU networks without dropout")
        self.bayesian = kinds == {BayesLinear}
        self.arms = arms
        layers = cast("list[BayesLinear | RunsLinear]", list(first.layers))  # checked above
        if arms and layers[0].in_features % arms:
            raise ValueError(f"disjoint inputs: the first layer's {layers[0].in_features} "
                             f"inputs are not {arms} blocks")
        # (rows and columns of the weight, offset of the weight, offset of the bias, bias
        # size) of every layer; a disjoint first layer's weight is (arms * out, in / arms)
        self.layout: list[tuple[int, int, int, int, int]] = []
        offset = 0
        for k, layer in enumerate(layers):
            o, i = layer.out_features, layer.in_features
            wo, wi = (o * arms, i // arms) if arms and k == 0 else (o, i)
            self.layout.append((wo, wi, offset, offset + o * i, o))
            offset += o * i + o
        self.n_params = offset
        self.in_features = (layers[0].in_features // arms + arms if arms
                            else layers[0].in_features)
        if self.bayesian:
            priors: list[Prior] = []
            for m in models:
                bayes = m.bayes_layers()  # all of its layers
                p = bayes[0].prior
                if any(layer.prior is not p and repr(layer.prior) != repr(p) for layer in bayes):
                    raise ValueError("all layers of one MLP in a FlatMLP share one prior")
                priors += [p] * (bayes[0].runs or 1)
            self.priors = priors  # one per run
            self.prior_consts = runs_prior_consts(priors)
            self.mu = nn.Parameter(self._stack(models, "weight_mu", "bias_mu", arms))
            self.rho: nn.Parameter | None = nn.Parameter(
                self._stack(models, "weight_rho", "bias_rho", arms))
        else:
            self.mu = nn.Parameter(self._stack(models, "weight", "bias", arms))
            self.rho = None
        self.runs = self.mu.shape[0]
        self._work: dict[str, Tensor] = {}  # work_buffer's tensors
        self._views: dict[int, tuple[Tensor, int, list[tuple[Tensor, Tensor]]]] = {}  # split's

    def _apply(self, fn, *args, **kwargs):  # .to(device) etc. move per-run prior columns too
        super()._apply(fn, *args, **kwargs)
        self._work = {k: fn(b) for k, b in self._work.items()}
        self._views = {}  # the views were of the tensors before
        if self.bayesian:
            self.prior_consts = map_consts(self.prior_consts, fn)
        return self

    @staticmethod
    def _stack(models: Sequence[MLP], weight: str, bias: str, arms: int) -> Tensor:
        rows = []
        for m in models:
            parts = []
            for k, layer in enumerate(m.layers):
                w, b = getattr(layer, weight), getattr(layer, bias)
                if w.dim() != 3 or b is None:
                    raise ValueError("FlatMLP needs layers with a runs dimension and a bias")
                w = w.detach()
                if arms and k == 0:  # (R, h, K d) -> the blocks W_a (h, d), arm by arm
                    r, h, kd = w.shape
                    w = w.view(r, h, arms, kd // arms).transpose(1, 2)
                parts += [w.reshape(w.shape[0], -1), b.detach()]
            rows.append(torch.cat(parts, dim=1))
        return torch.cat(rows, dim=0).contiguous()  # (R, P)

    @property
    def sigma(self) -> Tensor:
        """Posterior standard deviation of every parameter, ``(R, P)``."""
        assert self.rho is not None, "a deterministic network has no sigma"
        return F.softplus(self.rho)

    def split(self, flat: Tensor) -> list[tuple[Tensor, Tensor]]:
        """Views ``(weight (R, out, in), bias (R, out))`` of each layer in ``flat (R, P)``:
        made once for the network's own tensors (``mu``, ``rho`` and its
        :meth:`work_buffer`), whose storage stays, and afresh for any other."""
        kept = self._views.get(id(flat))
        if kept is not None and kept[0] is flat and kept[1] == flat.data_ptr():
            return kept[2]
        r = flat.shape[0]
        views = [(flat[:, ow:ob].view(r, wo, wi), flat[:, ob:ob + o])
                 for wo, wi, ow, ob, o in self.layout]
        if flat is self.mu or flat is self.rho or any(flat is b for b in self._work.values()):
            self._views[id(flat)] = (flat, flat.data_ptr(), views)
        return views

    def work_buffer(self, name: str) -> Tensor:
        """The tensor ``name``, shaped as the parameters, ``(R, P)``, that the network
        keeps (made on first use) for weights written afresh at every update, such as a
        drawn sample: its layers' views are made once."""
        buf = self._work.get(name)
        if buf is None:
            buf = self._work[name] = torch.empty_like(self.mu.detach())
        return buf

    def first_layer(self, x: Tensor, layer: tuple[Tensor, Tensor],
                    linear: Callable[[Tensor, Any], Tensor] = _affine) -> Tensor:
        """The first layer's pre-activations ``(R, N, hidden)`` of ``x (R, N, in)``: with
        disjoint inputs, the block of each row's arm (the one-hot after the context)."""
        if not self.arms:
            return linear(x, layer)
        if linear is not _affine:
            raise ValueError("disjoint inputs take the plain weights of the first layer "
                             "(not the local reparameterisation)")
        w, b = layer
        d = w.shape[-1]
        return self.blocks(w, x[..., :d], x[..., d:]) + b.unsqueeze(1)

    def blocks(self, w: Tensor, x: Tensor, onehot: Tensor) -> Tensor:
        """``W_a x`` for each row ``x (R, N, d)`` of arm ``a`` (``onehot (R, N, K)``), with
        ``w (R, K h, d)`` the per-arm blocks -> ``(R, N, h)``: grouped by arm where
        :func:`_grouped` allows it, else every block on every row and the row's one picked."""
        if _grouped(x, w):
            return block_rows(w, x, ArmGroups(onehot))
        every = torch.bmm(x, w.transpose(1, 2))  # (R, N, K h): each arm's W_a x
        r, n, _ = every.shape
        return (every.view(r, n, self.arms, -1) * onehot.unsqueeze(-1)).sum(2)  # (R, N, h)

    def apply_layers(self, x: Tensor, layers: Sequence[Any],
                     keep: list[Tensor] | None = None,
                     masks: Sequence[Tensor] | None = None,
                     linear: Callable[[Tensor, Any], Tensor] = _affine) -> Tensor:
        """``x (R, N, in)`` through the layers -> ``(R, N, out)``, ReLU between layers.

        ``layers[k]`` is what ``linear(h, layers[k])`` needs to give layer ``k``'s
        pre-activations ``(R, N, out)`` from its input ``h``; by default it is the layer's
        ``(weight, bias)`` (as from :meth:`split`) and ``linear`` is
        :func:`bandits.bayes.layers.batched_linear`. ``keep``, if given, receives each
        layer's input (what :meth:`backward` needs); ``masks``, if given, multiply each
        hidden layer's activations (dropout: 0 or 1 / (1 - p), shaped to broadcast against
        ``(R, N, hidden)``).
        """
        last = len(layers) - 1
        for k, layer in enumerate(layers):
            if keep is not None:
                keep.append(x)
            x = self.first_layer(x, layer, linear) if k == 0 else linear(x, layer)  # (R, N, out)
            if k < last:
                x = torch.relu(x)
                if masks is not None:
                    x = x * masks[k]
        return x

    def backward(self, inputs: Sequence[Tensor], flat: Tensor, d_out: Tensor, out: Tensor,
                 masks: Sequence[Tensor] | None = None) -> Tensor:
        """The gradient of a loss with respect to the weights ``flat (R, P)``, into ``out``.

        ``inputs`` are the layer inputs kept by :meth:`apply_layers` with weights ``flat``
        (and the same ``masks``) and ``d_out (R, N, out)`` the loss's gradient with respect
        to the network's output. Written by hand (no autograd): each layer's weight and bias
        gradients go straight into their place in ``out (R, P)``, and the input of the first
        layer (data) gets none.
        """
        d = d_out
        layers, grads = self.split(flat), self.split(out)
        for k in range(len(layers) - 1, -1, -1):
            h = inputs[k]  # (R, N, in): the layer's input, relu (and mask) of the previous
            gw, gb = grads[k]
            if k == 0 and self.arms:  # only the row's arm's block: d spread by the one-hot
                c = gw.shape[-1]
                if _grouped(h, gw):
                    block_outer_sums(d, h[..., :c], ArmGroups(h[..., c:]), out=gw)
                else:
                    spread = d.unsqueeze(2) * h[..., c:, None]  # (R, N, K, out)
                    torch.bmm(spread.flatten(2).transpose(1, 2), h[..., :c], out=gw)
            else:
                torch.bmm(d.transpose(1, 2), h, out=gw)  # (R, out, in)
            torch.sum(d, dim=1, out=gb)  # (R, out)
            if k > 0:
                d = torch.bmm(d, layers[k][0])  # (R, N, in): gradient at the layer's input
                if masks is not None:
                    d = d * masks[k - 1]
                d = torch.ops.aten.threshold_backward(d, h, 0.0)  # relu: 0 where h <= 0
        return out

    def weighted_square_norms(self, inputs: Sequence[Tensor], flat: Tensor, d_out: Tensor,
                              weights: Tensor) -> Tensor:
        """``sum_p weights_p g_np^2`` for each row ``n`` -> ``(R, N)``, where ``g_n`` is the
        gradient of row ``n``'s output, weighted by its row of ``d_out (R, N, out)``, with
        respect to the weights ``flat (R, P)`` (``inputs`` kept by :meth:`apply_layers`).

        Without forming any ``g_n``: a layer's gradient for one row is the outer product
        ``delta h^T`` of the gradient at its pre-activations and its input, so its weighted
        square norm is ``(delta^2)^T W (h^2)`` for the layer's part ``W`` of ``weights``,
        one matrix product per layer (NeuralUCB's and NeuralTS's ``g^T U^-1 g`` with the
        diagonal design, ``weights = 1 / U``).
        """
        d = d_out
        layers, ws = self.split(flat), self.split(weights)
        total = d_out.new_zeros(d_out.shape[:2])
        for k in range(len(layers) - 1, -1, -1):
            h = inputs[k]  # (R, N, in)
            ww, wb = ws[k]
            if k == 0 and self.arms:
                c = ww.shape[-1]
                wh = self.blocks(ww, h[..., :c].square(), h[..., c:])  # (R, N, out)
            else:
                wh = torch.bmm(h.square(), ww.transpose(1, 2))  # (R, N, out)
            total += (d.square() * (wh + wb.unsqueeze(1))).sum(-1)
            if k > 0:
                d = torch.bmm(d, layers[k][0])  # (R, N, in)
                d = torch.ops.aten.threshold_backward(d, h, 0.0)
        return total

    def forward(self, x: Tensor, flat: Tensor | None = None) -> Tensor:
        """``x (R, N, in)`` through the weights ``flat`` (default: the means) -> ``(R, N, out)``."""
        return self.apply_layers(x, self.split(self.mu if flat is None else flat))

    def sample(self, eps: Tensor, out: Tensor | None = None) -> Tensor:
        """Weights ``mu + sigma * eps`` for noise ``eps (R, P)`` (Bayesian networks), into
        ``out`` if given (a :meth:`work_buffer`: its views are made once)."""
        return torch.addcmul(self.mu, self.sigma, eps, out=out)


class ArmGroups:
    """The rows of ``(R, N, ...)`` inputs grouped by their arm, for the per-arm blocks of a
    disjoint first layer: each row's place ``slot (R, N)`` in a zero-padded ``(R, K m)``
    layout whose ``k``-th stretch of ``m`` (the largest group) holds arm ``k``'s rows.

    Built from the one-hot part ``onehot (R, N, K)`` of the inputs (rows are exactly
    one-hot, as every agent feeds them). Reading ``m`` waits for the values, so the grouped
    layout serves the host's processor; an accelerator takes the dense path (see
    :func:`_grouped`).
    """

    def __init__(self, onehot: Tensor) -> None:
        self.runs, self.rows, self.arms = onehot.shape
        arm = onehot.argmax(-1)  # (R, N)
        rank = (onehot.cumsum(1) * onehot).sum(-1).long() - 1  # (R, N): earlier rows of its arm
        self.m = max(int(rank.max()) + 1, 1) if self.rows else 1
        self.slot = arm * self.m + rank  # (R, N)

    def spread(self, v: Tensor) -> Tensor:
        """Rows ``v (R, N, c)`` into the padded layout ``(R, K m, c)``, zeros elsewhere."""
        out = v.new_zeros(self.runs, self.arms * self.m, v.shape[-1])
        return out.scatter_(1, self.slot.unsqueeze(-1).expand_as(v), v)

    def pick(self, v: Tensor) -> Tensor:
        """Each row's entry ``(R, N, c)`` of ``v (R, K m, c)`` in the padded layout."""
        return v.gather(1, self.slot.unsqueeze(-1).expand(-1, -1, v.shape[-1]))


def _grouped(x: Tensor, w: Tensor) -> bool:
    """Whether the per-arm blocks take the grouped path (:func:`block_rows`): on the host's
    processor, outside autograd. On an accelerator the dense path does ``K`` times the
    work without waiting for the group sizes (and keeps every shape fixed, as a captured
    graph needs); with autograd recording, the dense path is the differentiable one."""
    return (x.device.type == "cpu"
            and not (torch.is_grad_enabled() and (x.requires_grad or w.requires_grad)))


def block_rows(blocks: Tensor, x: Tensor, groups: ArmGroups) -> Tensor:
    """``B_a x`` for each row ``x (R, N, d)`` of arm ``a``, with ``blocks (R, K h, d)`` the
    per-arm blocks ``B_k (h, d)`` -> ``(R, N, h)``: one batched matmul per run over the
    arms' padded groups, the work of ``K m`` rows (``m`` the largest group) instead of the
    ``K N`` of every block on every row."""
    r, kh, d = blocks.shape
    k, m = groups.arms, groups.m
    h = kh // k
    xs = groups.spread(x)  # (R, K m, d)
    out = x.new_empty(r, k * m, h)
    for i in range(r):
        torch.bmm(xs[i].view(k, m, d), blocks[i].view(k, h, d).transpose(1, 2),
                  out=out[i].view(k, m, h))
    return groups.pick(out)


def block_outer_sums(u: Tensor, x: Tensor, groups: ArmGroups, out: Tensor) -> Tensor:
    """Into ``out (R, K h, d)``: for each arm ``k``, the sum of ``u_n x_n^T`` over its rows
    (``u (R, N, h)``, ``x (R, N, d)``): the per-arm blocks' weight gradient, zero for an
    arm without rows."""
    r, kh, d = out.shape
    k, m = groups.arms, groups.m
    h = kh // k
    us, xs = groups.spread(u), groups.spread(x)  # (R, K m, h), (R, K m, d)
    for i in range(r):
        torch.bmm(us[i].view(k, m, h).transpose(1, 2), xs[i].view(k, m, d),
                  out=out[i].view(k, h, d))
    return out


def sample_weights(mu: Tensor, rho: Tensor, eps: Tensor, out: Tensor | None = None
                   ) -> tuple[Tensor, Tensor]:
    """``sigma = softplus(rho)`` and the weights ``w = mu + sigma * eps`` (into ``out``
    if given: the same kernel, the same bytes)."""
    sigma = F.softplus(rho)
    return sigma, torch.addcmul(mu, sigma, eps, out=out)
