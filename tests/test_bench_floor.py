"""The floor benchmark (bandits.tools.bench_floor): what it counts as an update's products,
and that its replay makes those products and nothing else."""

import torch

from bandits.tools import bench_floor
from bandits.tools.bench_floor import Product, products_of, replay, updates_of


def test_a_product_counts_two_m_n_k_per_batch_entry():
    a, b = torch.ones(3, 4, 5), torch.ones(3, 5, 6)
    (p,) = products_of(lambda: torch.bmm(a, b))
    assert p.flops == 2 * 3 * 4 * 5 * 6
    x, w, bias = torch.ones(7, 8), torch.ones(8, 9), torch.ones(9)
    (q,) = products_of(lambda: torch.addmm(bias, x, w))
    assert q.flops == 2 * 7 * 8 * 9
    assert products_of(lambda: a + 1) == []


def test_an_update_of_the_paper_network_makes_its_eight_products():
    # 119 inputs (117 features, 2 actions), 2 x 100 ReLU, one output: 3 products forward,
    # 5 backward (3 weight gradients, 2 input gradients; none for the data)
    for name in ("bbb", "greedy"):
        update = bench_floor._update_of(name, 1)
        update()
        prods = products_of(update)
        assert len(prods) == 8, name
        layers = 119 * 100 + 100 * 100 + 100 * 1
        forward = weight_grads = 2 * 64 * layers
        input_grads = 2 * 64 * (100 * 100 + 100 * 1)  # not into the first layer's input
        assert sum(p.flops for p in prods) == forward + weight_grads + input_grads


def test_the_replay_makes_the_same_products_on_operands_of_the_same_layout():
    a = torch.ones(2, 6, 3).transpose(1, 2)  # (2, 3, 6), not contiguous
    b = torch.ones(2, 6, 4)
    out = torch.empty(2, 3, 4)
    recorded = products_of(lambda: torch.bmm(a, b, out=out))
    again = products_of(replay(recorded))
    assert [(p.op, p.args, p.kwargs) for p in again] == \
        [(p.op, p.args, p.kwargs) for p in recorded]
    assert isinstance(recorded[0], Product) and recorded[0].args[0].stride == a.stride()


def test_the_updates_of_a_run_follow_its_training_schedule():
    assert updates_of({"steps": 2000, "train_every": 1, "train_always_until": 0,
                       "updates_per_step": 16}) == 32_000
    assert updates_of({"steps": 100, "train_every": 20, "train_always_until": 0,
                       "updates_per_step": 100}) == 500
    # every step up to 10 trains, then every 20th
    assert updates_of({"steps": 100, "train_every": 20, "train_always_until": 10,
                       "updates_per_step": 2}) == 2 * (10 + 5)
