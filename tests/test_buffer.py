import numpy as np
import pytest
import torch

from bandits.core.buffer import ReplayBuffer


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


def _pair(capacity=5, runs=3, items=40, d=6, actions=2, seed=0):
    """A full buffer and a compact one (rows of a table) fed the same interactions."""
    rng = np.random.default_rng(seed)
    table = (rng.random((items, d)) < 0.5).astype(np.float32)
    full = ReplayBuffer(capacity, runs, d)
    compact = ReplayBuffer(capacity, runs, d, table=table, n_actions=actions)
    for _ in range(8):  # wraps around
        rows = rng.integers(0, items, runs)
        a, r = rng.integers(0, actions, runs), rng.normal(size=runs)
        full.add(table[rows], a, r)
        compact.add(table[rows], a, r, items=rows)
    return full, compact


def test_a_checkpointed_buffer_keeps_only_its_written_slots_and_restores_them():
    buf = ReplayBuffer(capacity=1000, runs=2, context_dim=3)
    _fill(buf, 0, 7)
    state = buf.state_dict()
    assert state["contexts"].shape == (2, 7, 3) and state["rewards"].shape == (2, 7)
    assert state["rewards"].untyped_storage().size() == 2 * 7 * 4  # a copy, not a view
    again = ReplayBuffer(capacity=1000, runs=2, context_dim=3)
    again.load_state_dict(state)
    assert len(again) == 7 and torch.equal(again.contexts, buf.contexts)
    _fill(buf, 7, 3)
    _fill(again, 7, 3)  # it goes on writing where the first left off
    assert torch.equal(again.rewards, buf.rewards)
    older = {**state, "contexts": buf.contexts.clone(), "actions": buf.actions.clone(),
             "rewards": buf.rewards.clone(), "pos": 10, "added": 10}
    full_state = ReplayBuffer(capacity=1000, runs=2, context_dim=3)
    full_state.load_state_dict(older)  # a checkpoint written with every slot
    assert torch.equal(full_state.rewards, buf.rewards)


def test_a_compact_buffer_gives_the_same_minibatches_and_slots_as_a_full_one():
    full, compact = _pair()
    assert compact.compact and not full.compact
    idx = torch.tensor([[0, 4, 2], [1, 1, 3], [4, 0, 0]])
    for got, want in zip(compact.gather(idx), full.gather(idx)):
        assert got.dtype == want.dtype and torch.equal(got, want)
    for pos in range(5):
        for got, want in zip(compact.slot(pos), full.slot(pos)):
            assert got.dtype == want.dtype and torch.equal(got, want)
    assert compact.actions.dtype == torch.uint8  # two actions fit a byte


def test_a_compact_buffers_state_keeps_rows_and_takes_an_older_full_state():
    full, compact = _pair()
    state = compact.state_dict()
    assert "contexts" not in state and state["items"].dtype == torch.int32
    again = ReplayBuffer(5, 3, 6, table=compact.table, n_actions=2)
    again.load_state_dict(state)
    idx = torch.tensor([[0, 1, 2, 3, 4]] * 3)
    assert all(torch.equal(a, b) for a, b in zip(again.gather(idx), full.gather(idx)))
    older = ReplayBuffer(5, 3, 6, table=compact.table, n_actions=2)
    older.load_state_dict(full.state_dict())  # a checkpoint written with contexts
    assert all(torch.equal(a, b) for a, b in zip(older.gather(idx), full.gather(idx)))
    with pytest.raises(ValueError, match="table"):  # a full buffer cannot take rows
        ReplayBuffer(5, 3, 6).load_state_dict(state)


def test_a_compact_buffer_refuses_a_context_outside_its_table_and_a_missing_item():
    full, compact = _pair()
    state = full.state_dict()
    state["contexts"] = state["contexts"].clone()
    state["contexts"][0, 0] = 0.5  # not a row of the table
    with pytest.raises(ValueError, match="not a row of the data set"):
        ReplayBuffer(5, 3, 6, table=compact.table, n_actions=2).load_state_dict(state)
    with pytest.raises(ValueError, match="needs items"):
        compact.add(np.zeros((3, 6)), [0, 1, 0], [1.0, 2.0, 3.0])


def test_a_mushroom_run_keeps_rows_in_its_buffer_and_its_checkpoint(mushroom_data_dir,
                                                                     tmp_path):
    from bandits.core import checkpoint
    from bandits.run import main

    out = tmp_path / "run"
    assert main(["--agent", "greedy", "--seeds", "2", "--steps", "20", "--hidden", "8",
                 "--workers", "1", "--no-progress", "--data-dir", str(mushroom_data_dir),
                 "--out", str(out)]) == 0
    state = checkpoint.load(out / "checkpoint.pt", "bandits.run")
    buffer = state["populations"][0]["buffer"]
    assert "contexts" not in buffer and buffer["items"].dtype == torch.int32
