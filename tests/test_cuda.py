"""The training step on a GPU: the captured CUDA graph against the eager step.

Skipped where torch has no CUDA device (as in CI); run on a GPU with
``python -m pytest tests/test_cuda.py``.
"""

import numpy as np
import pytest
import torch

from agents import AgentConfig, make_agent
from bandits.core.buffer import ReplayBuffer
from bandits.run import main

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")

D, A, R = 6, 2, 3


def _train(name: str, cuda_graph: bool, steps: int = 6, updates: int = 5):
    agent = make_agent(name, D, A, R, 0, AgentConfig(hidden=(16, 16), batch_size=8),
                       device="cuda", cuda_graph=cuda_graph)
    assert (agent.captured is not None) == cuda_graph  # applied by make_agent, not the agent
    buf = ReplayBuffer(64, R, D, device="cuda")
    rng = np.random.default_rng(0)
    actions, losses = [], []
    for _ in range(steps):
        c = rng.random((R, D), dtype=np.float32)
        a = agent.act(c)
        assert a.device.type == "cuda"
        buf.add(c, a, rng.normal(size=R))
        losses.append(agent.update(buf, updates).clone())
        actions.append(a.cpu().numpy())
    params = [p.detach().cpu() for p in agent.model.parameters()]
    return np.stack(actions), torch.stack(losses).cpu(), params


@pytest.mark.parametrize("name", ["bbb", "bbb-lrt", "greedy", "dropout", "bootstrap",
                                  "neurallinear"])
def test_graph_replay_is_deterministic_and_matches_the_eager_step(name):
    a1, l1, p1 = _train(name, cuda_graph=True)
    a2, l2, p2 = _train(name, cuda_graph=True)
    assert np.array_equal(a1, a2) and torch.equal(l1, l2)
    assert all(torch.equal(x, y) for x, y in zip(p1, p2))
    # graph-safe generators give a replay the numbers the eager step would draw
    a3, l3, p3 = _train(name, cuda_graph=False)
    torch.testing.assert_close(l1, l3, rtol=1e-4, atol=1e-4)
    for x, y in zip(p1, p3):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)


def test_cuda_matches_cpu_within_float_tolerance_for_greedy():
    # No noise in the greedy network's training: only the minibatch indices are random,
    # and CPU and CUDA generators differ, so compare one update on the same minibatch.
    cpu = make_agent("greedy", D, A, R, 0, AgentConfig(hidden=(16,)))
    gpu = make_agent("greedy", D, A, R, 0, AgentConfig(hidden=(16,)), device="cuda")
    for p, q in zip(cpu.model.parameters(), gpu.model.parameters()):
        torch.testing.assert_close(p.detach(), q.detach().cpu())
    x, y = torch.randn(R, 8, D + A), torch.randn(R, 8)
    (g_cpu,), _ = cpu.gradients(x, y, torch.tensor(8), False)
    (g_gpu,), _ = gpu.gradients(x.cuda(), y.cuda(), torch.tensor(8, device="cuda"), False)
    torch.testing.assert_close(g_cpu, g_gpu.cpu(), rtol=1e-4, atol=1e-5)


def test_disjoint_blocks_on_cuda_match_the_grouped_path_on_the_cpu():
    # the accelerator takes the dense path (every block on every row), the host's
    # processor the grouped one: gradients and NeuralUCB's widths agree
    d, arms = 5, 4
    cfg = AgentConfig(hidden=(16,), encoding="disjoint")
    cpu = make_agent("neuralucb", d, arms, R, 0, cfg)
    gpu = make_agent("neuralucb", d, arms, R, 0, cfg, device="cuda")
    x = torch.cat([torch.rand(R, 12, d),
                   torch.nn.functional.one_hot(torch.randint(arms, (R, 12)), arms).float()], -1)
    y = torch.rand(R, 12)
    (g_cpu,), _ = cpu.gradients(x, y, torch.tensor(12), False)
    (g_gpu,), _ = gpu.gradients(x.cuda(), y.cuda(), torch.tensor(12, device="cuda"), False)
    torch.testing.assert_close(g_cpu, g_gpu.cpu(), rtol=1e-4, atol=1e-5)
    contexts = np.random.default_rng(0).random((R, d), dtype=np.float32)
    f_cpu, s_cpu, _ = cpu.scores_widths_and_kept(cpu.all_action_inputs(contexts))
    f_gpu, s_gpu, _ = gpu.scores_widths_and_kept(gpu.all_action_inputs(contexts))
    torch.testing.assert_close(f_cpu, f_gpu.cpu(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(s_cpu, s_gpu.cpu(), rtol=1e-4, atol=1e-5)


def test_runner_on_cuda(tmp_path):
    out = tmp_path / "r"
    assert main(["--env", "wheel", "--agent", "bbb", "greedy", "eps5", "linfullpost",
                 "neurallinear", "dropout", "bootstrap", "--steps", "20",
                 "--seeds", "2", "--hidden", "8", "--batch-size", "8",
                 "--updates-per-step", "3", "--device", "cuda", "--no-progress",
                 "--out", str(out)]) == 0
    assert (out / "metrics.csv").is_file()


@pytest.mark.parametrize("kind", ["bbb", "dropout"])
def test_batched_classifiers_on_cuda_equal_separate_runs(kind):
    from bandits.bayes import GaussianPrior, ScaleMixturePrior
    from bandits.mnist.models.classifiers import BatchedClassifiers, RunSpec

    g = torch.Generator().manual_seed(0)
    x = (torch.rand(200, 784, generator=g) * 2).cuda()
    y = torch.randint(0, 10, (200,), generator=g).cuda()
    # each run's KL weighting is its spec's, in the batch and alone
    specs = [RunSpec(0, ScaleMixturePrior(0.5, 1.0, 0.0025), "uniform"),
             RunSpec(1, GaussianPrior(0.5), "blundell")]
    together = BatchedClassifiers(kind, [32], specs, device="cuda")
    stats = together.train_epoch(x, y, 50, [s.kl_weighting for s in specs])
    assert stats["nll"].device.type == "cpu" and torch.isfinite(stats["nll"]).all()
    for r, spec in enumerate(specs):
        alone = BatchedClassifiers(kind, [32], [spec], device="cuda")
        alone.train_epoch(x, y, 50, [spec.kl_weighting])
        torch.testing.assert_close(together.params()["mu"][r], alone.params()["mu"][0],
                                   rtol=1e-4, atol=1e-5)


def test_mnist_cli_on_cuda(tmp_path, mnist_data_dir):
    import json

    from bandits import mnist

    out = tmp_path / "m"
    argv = ["--device", "cuda", "--data-dir", str(mnist_data_dir), "--train-size", "500",
            "--test-size", "200", "--hidden", "32",
            "--epochs", "2", "--seeds", "2", "--eval-samples", "2", "--ood-images", "50",
            "--no-progress", "--out", str(out)]
    assert mnist.main(argv) == 0
    s = json.loads((out / "seed=1" / "summary.json").read_text())
    assert s["device"] == "cuda" and s["batched_models"] == 2
