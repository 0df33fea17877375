import numpy as np
import pytest
import torch

from bandits.buffer import ReplayBuffer


def _fill(buf: ReplayBuffer, start: int, n: int) -> None:
    for i in range(start, start + n):
        c = np.full((buf.runs, buf.context_dim), i, dtype=np.float32)
        c[:, 0] += 1000 * np.arange(buf.runs)  # run r's items are distinguishable
        buf.add(c, np.full(buf.runs, i % 3), np.full(buf.runs, float(i)))


def test_len_and_wrap_around_keeps_the_last_capacity_items():
    buf = ReplayBuffer(capacity=5, runs=2, context_dim=3)
    assert len(buf) == 0
    _fill(buf, 0, 3)
    assert len(buf) == 3 and not buf.full
    _fill(buf, 3, 4)  # 7 items into 5 slots
    assert len(buf) == 5 and buf.full and buf.pos == 2
    assert sorted(buf.rewards[0].tolist()) == [2.0, 3.0, 4.0, 5.0, 6.0]
    # the oldest items (0, 1) were overwritten in place, at the start
    assert buf.rewards[0, :2].tolist() == [5.0, 6.0]


def test_sample_draws_only_stored_items_of_its_own_run():
    buf = ReplayBuffer(capacity=50, runs=3, context_dim=2)
    _fill(buf, 0, 7)
    g = torch.Generator().manual_seed(0)
    batch = buf.sample(200, g)
    assert batch.contexts.shape == (3, 200, 2)
    assert batch.actions.shape == (3, 200) and batch.actions.dtype == torch.int64
    assert batch.rewards.shape == (3, 200)
    assert set(batch.rewards.unique().tolist()) == {float(i) for i in range(7)}
    for r in range(3):
        # every sampled context belongs to run r and matches its reward and action
        assert torch.all(batch.contexts[r, :, 0] - batch.rewards[r] == 1000 * r)
        assert torch.all(batch.actions[r] == batch.rewards[r].long() % 3)
    # runs draw their own indices
    assert not torch.equal(batch.rewards[0], batch.rewards[1])


def test_sample_is_reproducible_with_a_generator():
    buf = ReplayBuffer(capacity=20, runs=2, context_dim=2)
    _fill(buf, 0, 20)
    a = buf.sample(16, torch.Generator().manual_seed(3))
    b = buf.sample(16, torch.Generator().manual_seed(3))
    c = buf.sample(16, torch.Generator().manual_seed(4))
    assert torch.equal(a.rewards, b.rewards)
    assert not torch.equal(a.rewards, c.rewards)


def test_bad_input():
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(0, 1, 2)
    buf = ReplayBuffer(4, 2, 3)
    with pytest.raises(ValueError, match="empty"):
        buf.sample(2)
    with pytest.raises(ValueError, match=r"contexts \(2, 3\)"):
        buf.add(np.zeros((3, 3)), np.zeros(2), np.zeros(2))
