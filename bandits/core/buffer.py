"""A preallocated circular replay buffer with a runs dimension.

It holds the last ``capacity`` interactions ``(context, action, reward)`` of each
of ``runs`` independent runs (Blundell et al. 2015, section 5.3: the last 4096).
All runs are written together, one interaction each per :meth:`ReplayBuffer.add`,
so they always hold the same number of items. Storage is torch tensors on the
learner's device, allocated once (as in stable-baselines3's buffers): nothing
grows per step. The number of items is kept on the device as well (``size``), so a
training step can draw minibatch indices without asking the host how full the buffer is
(nothing in a step waits for the device, and a captured CUDA graph stays valid as the
buffer fills).

Where every context is a row of a fixed table (the Mushroom data set's 8124 one-hot
mushrooms), the buffer is given that ``table`` and keeps each interaction's row index
instead of its context (4 bytes instead of 468 on Mushroom), with the actions as single
bytes where the actions fit: a minibatch's contexts are the table's rows, the same
floats, so the results are the same bytes; memory and checkpoints are a small fraction.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor


class Batch(NamedTuple):
    """A minibatch per run."""

    contexts: Tensor  # (runs, batch, context_dim)
    actions: Tensor  # (runs, batch) int64
    rewards: Tensor  # (runs, batch)


class ReplayBuffer:
    """Circular buffer of the last ``capacity`` interactions of ``runs`` runs.

    Args:
        capacity: Interactions kept per run; older ones are overwritten.
        runs: Number of independent runs stored side by side.
        context_dim: Size of a context vector.
        device: Where the storage (and sampled batches) live.
        dtype: Floating dtype of contexts and rewards.
    """

    def __init__(
        self,
        capacity: int,
        runs: int,
        context_dim: int,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        table: Tensor | np.ndarray | None = None,
        n_actions: int | None = None,
    ) -> None:
        for name, v in (("capacity", capacity), ("runs", runs), ("context_dim", context_dim)):
            if not isinstance(v, (int, np.integer)) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.capacity, self.runs, self.context_dim = int(capacity), int(runs), int(context_dim)
        self.device = torch.device(device)
        self.table: Tensor | None = None
        if table is not None:
            self.table = torch.tensor(np.asarray(table), dtype=dtype, device=self.device)
            if self.table.ndim != 2 or self.table.shape[1] != context_dim:
                raise ValueError(f"table must be (items, {context_dim}), got "
                                 f"{tuple(self.table.shape)}")
            # row indices of the table instead of contexts; the actions as bytes if they fit
            self.items = torch.zeros(runs, capacity, dtype=torch.int32, device=self.device)
            small = n_actions is not None and n_actions <= 256
            self.actions = torch.zeros(runs, capacity, dtype=torch.uint8 if small else
                                       torch.int64, device=self.device)
        else:
            self.contexts = torch.zeros(runs, capacity, context_dim, dtype=dtype,
                                        device=self.device)
            self.actions = torch.zeros(runs, capacity, dtype=torch.int64, device=self.device)
        self.rewards = torch.zeros(runs, capacity, dtype=dtype, device=self.device)
        self.pos = 0  # next slot to write
        self.full = False
        self.added = 0  # interactions ever added (older ones may be overwritten)
        # first row of each run in the flattened storage, (runs, 1)
        self._run_offset = torch.arange(runs, device=self.device).unsqueeze(1) * self.capacity
        self.size = torch.zeros((), dtype=torch.int64, device=self.device)  # len(self)
        self.seen = torch.zeros((), dtype=torch.int64, device=self.device)  # self.added

    @property
    def compact(self) -> bool:
        """Whether the buffer keeps row indices of its ``table`` instead of contexts."""
        return self.table is not None

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add(self, contexts, actions, rewards, items=None) -> None:
        """Store one interaction per run: ``contexts (runs, d)``, ``actions (runs,)``,
        ``rewards (runs,)`` (numpy arrays or tensors); a compact buffer takes the contexts'
        rows of its table, ``items (runs,)``, instead of reading ``contexts``."""
        a = torch.as_tensor(actions, dtype=torch.int64, device=self.device)
        r = torch.as_tensor(rewards, dtype=self.rewards.dtype, device=self.device)
        want_c: tuple[int, ...]
        if self.compact:
            if items is None:
                raise ValueError("this buffer keeps rows of its table: add needs items, the "
                                 "row of each run's context")
            c = torch.as_tensor(np.asarray(items), dtype=torch.int64, device=self.device)
            shape_c, want_c = tuple(c.shape), (self.runs,)
        else:
            c = torch.as_tensor(contexts, dtype=self.contexts.dtype, device=self.device)
            shape_c, want_c = tuple(c.shape), (self.runs, self.context_dim)
        if shape_c != want_c or a.shape != (self.runs,) or r.shape != (self.runs,):
            what = "items" if self.compact else "contexts"
            raise ValueError(
                f"add expects {what} {want_c}, actions ({self.runs},) "
                f"and rewards ({self.runs},); got {shape_c}, {tuple(a.shape)}, "
                f"{tuple(r.shape)}"
            )
        if self.compact:
            self.items[:, self.pos] = c.to(torch.int32)
        else:
            self.contexts[:, self.pos] = c
        self.actions[:, self.pos] = a.to(self.actions.dtype)
        self.rewards[:, self.pos] = r
        self.pos += 1
        self.added += 1
        if self.pos == self.capacity:
            self.pos, self.full = 0, True
        self.size.fill_(len(self))
        self.seen.fill_(self.added)

    def state_dict(self) -> dict:
        """The stored items and the write position (for checkpoints): only the slots
        written so far, and a compact buffer's row indices, never the table (its
        environment gives it again)."""
        n = len(self)  # the slots written: the first n until the buffer is full
        stored = ({"items": self.items[:, :n].clone()} if self.compact  # a copy: a view
                  else {"contexts": self.contexts[:, :n].clone()})  # saves all storage
        return {**stored, "actions": self.actions[:, :n].clone(),
                "rewards": self.rewards[:, :n].clone(),
                "pos": self.pos, "full": self.full, "added": self.added}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned, into this buffer's storage (a compact
        buffer also takes a full one's contexts, each found in its table)."""
        n = state["rewards"].shape[1]  # slots written (earlier checkpoints: every slot)
        if self.compact:
            self.items[:, :n].copy_(state["items"] if "items" in state
                                    else self._rows_of(state["contexts"]))
        else:
            if "contexts" not in state:
                raise ValueError("this checkpoint's buffer keeps rows of a table, which "
                                 "this buffer has not been given")
            self.contexts[:, :n].copy_(state["contexts"])
        self.actions[:, :n].copy_(state["actions"].to(self.actions.dtype))
        self.rewards[:, :n].copy_(state["rewards"])
        self.pos, self.full = int(state["pos"]), bool(state["full"])
        self.added = int(state["added"])
        self.size.fill_(len(self))
        self.seen.fill_(self.added)

    def _rows_of(self, contexts: Tensor) -> Tensor:
        """The table's row of each stored context ``(runs, capacity, d)`` (a checkpoint
        written before the buffer kept rows); a slot never written is row 0."""
        assert self.table is not None  # a compact buffer's
        table = self.table.cpu().numpy()
        rows = {row.tobytes(): i for i, row in reversed(list(enumerate(table)))}
        flat = contexts.detach().cpu().numpy().astype(table.dtype, copy=False)
        flat = flat.reshape(-1, self.context_dim)
        out = np.zeros(flat.shape[0], dtype=np.int32)
        zero = np.zeros(self.context_dim, dtype=table.dtype).tobytes()
        for i, row in enumerate(flat):
            key = row.tobytes()
            if key in rows:
                out[i] = rows[key]
            elif key != zero:
                raise ValueError("the checkpoint's buffer holds a context that is not a row "
                                 "of the data set (was the data set changed?)")
        return torch.from_numpy(out.reshape(contexts.shape[:2])).to(self.device)

    def positions_since(self, seen: int, who: str = "this agent") -> list[int]:
        """Storage positions of the interactions added after the first ``seen`` (oldest
        first), for learners that must see every interaction once.

        Raises:
            ValueError: Some of them were already overwritten (more than ``capacity`` were
                added since).
        """
        if self.added - seen > self.capacity:
            raise ValueError(f"{who} must see every interaction: train at least once per "
                             "buffer capacity (--train-every <= --buffer-size)")
        return [i % self.capacity for i in range(seen, self.added)]

    def slot(self, pos: int) -> Batch:
        """Every run's interaction at storage position ``pos``: contexts ``(runs, d)``,
        actions ``(runs,)`` int64, rewards ``(runs,)``."""
        contexts = (self.table.index_select(0, self.items[:, pos]) if self.table is not None
                    else self.contexts[:, pos])
        return Batch(contexts, self.actions[:, pos].to(torch.int64), self.rewards[:, pos])

    def indices(self, u: Tensor) -> Tensor:
        """Uniform draws ``u (runs, batch)`` in ``[0, 1)`` -> item indices ``floor(u * len)``.

        Uniform over the items held (up to the float32 resolution of ``u``, 2^-24), with
        the length read on the device.
        """
        idx = (u * self.size).to(torch.int64)
        return torch.minimum(idx, self.size - 1)  # u * len can round up to len

    def gather(self, idx: Tensor) -> Batch:
        """The items ``idx (runs, batch)`` of each run (each run indexes its own items)."""
        rows = idx + self._run_offset  # (runs, batch) rows of the flattened storage
        flat = rows.reshape(-1)
        if self.table is not None:  # compact: the very floats a full buffer would hold
            items = self.items.view(-1).index_select(0, flat)
            contexts = self.table.index_select(0, items)
        else:
            contexts = self.contexts.view(-1, self.context_dim).index_select(0, flat)
        actions = self.actions.view(-1).index_select(0, flat).view(idx.shape)
        return Batch(
            contexts.view(*idx.shape, self.context_dim),  # (runs, batch, d)
            actions if actions.dtype == torch.int64 else actions.to(torch.int64),
            self.rewards.view(-1).index_select(0, flat).view(idx.shape),  # (runs, batch)
        )

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Batch:
        """Draw ``batch_size`` items per run, uniformly with replacement.

        Each run draws its own indices; ``generator`` (on the buffer's device)
        makes the draw reproducible.
        """
        if len(self) == 0:
            raise ValueError("cannot sample from an empty replay buffer: add interactions first")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        u = torch.rand((self.runs, batch_size), generator=generator, device=self.device)
        return self.gather(self.indices(u))
