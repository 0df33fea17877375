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
    ) -> None:
        for name, v in (("capacity", capacity), ("runs", runs), ("context_dim", context_dim)):
            if not isinstance(v, (int, np.integer)) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.capacity, self.runs, self.context_dim = int(capacity), int(runs), int(context_dim)
        self.device = torch.device(device)
        self.contexts = torch.zeros(runs, capacity, context_dim, dtype=dtype, device=self.device)
        self.actions = torch.zeros(runs, capacity, dtype=torch.int64, device=self.device)
        self.rewards = torch.zeros(runs, capacity, dtype=dtype, device=self.device)
        self.pos = 0  # next slot to write
        self.full = False
        self.added = 0  # interactions ever added (older ones may be overwritten)
        # first row of each run in the flattened storage, (runs, 1)
        self._run_offset = torch.arange(runs, device=self.device).unsqueeze(1) * self.capacity
        self.size = torch.zeros((), dtype=torch.int64, device=self.device)  # len(self)
        self.seen = torch.zeros((), dtype=torch.int64, device=self.device)  # self.added

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add(self, contexts, actions, rewards) -> None:
        """Store one interaction per run: ``contexts (runs, d)``, ``actions (runs,)``,
        ``rewards (runs,)`` (numpy arrays or tensors)."""
        c = torch.as_tensor(contexts, dtype=self.contexts.dtype, device=self.device)
        a = torch.as_tensor(actions, dtype=torch.int64, device=self.device)
        r = torch.as_tensor(rewards, dtype=self.rewards.dtype, device=self.device)
        if c.shape != (self.runs, self.context_dim) or a.shape != (self.runs,) or r.shape != (
            self.runs,
        ):
            raise ValueError(
                f"add expects contexts ({self.runs}, {self.context_dim}), actions ({self.runs},) "
                f"and rewards ({self.runs},); got {tuple(c.shape)}, {tuple(a.shape)}, "
                f"{tuple(r.shape)}"
            )
        self.contexts[:, self.pos] = c
        self.actions[:, self.pos] = a
        self.rewards[:, self.pos] = r
        self.pos += 1
        self.added += 1
        if self.pos == self.capacity:
            self.pos, self.full = 0, True
        self.size.fill_(len(self))
        self.seen.fill_(self.added)

    def state_dict(self) -> dict:
        """The stored items and the write position (for checkpoints)."""
        return {"contexts": self.contexts, "actions": self.actions, "rewards": self.rewards,
                "pos": self.pos, "full": self.full, "added": self.added}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned, into this buffer's storage."""
        for name in ("contexts", "actions", "rewards"):
            getattr(self, name).copy_(state[name])
        self.pos, self.full = int(state["pos"]), bool(state["full"])
        self.added = int(state["added"])
        self.size.fill_(len(self))
        self.seen.fill_(self.added)

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
        contexts = self.contexts.view(-1, self.context_dim).index_select(0, flat)
        return Batch(
            contexts.view(*idx.shape, self.context_dim),  # (runs, batch, d)
            self.actions.view(-1).index_select(0, flat).view(idx.shape),  # (runs, batch)
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
