"""Denormal floats flushed to zero while the simulator runs, and the setting put back."""

import torch

from bandits.core import denormals


def test_flushed_turns_flushing_on_and_puts_the_earlier_setting_back():
    assert not denormals.flushing()  # torch's default
    with denormals.flushed():
        assert denormals.flushing()
        assert (torch.tensor([1e-39]) * 1.0).item() == 0.0
    assert not denormals.flushing()
    torch.set_flush_denormal(True)
    try:
        with denormals.flushed():
            pass
        assert denormals.flushing()  # on before, so on after
    finally:
        torch.set_flush_denormal(False)


def test_the_simulator_flushes_while_it_runs_and_only_then(tmp_path):
    from bandits.simulator.loop import simulate
    from bandits.simulator.settings import parse_config

    seen = []

    class Look:
        def after_step(self, populations, log, stopping):
            seen.append(denormals.flushing())

    cfg = parse_config(["--agent", "greedy", "--env", "wheel", "--steps", "3", "--seeds", "1",
                        "--no-progress", "--out", str(tmp_path / "run")])
    (tmp_path / "run").mkdir()
    assert simulate(cfg, tmp_path / "run", hooks=[Look()]).status == 0
    assert seen == [True, True, True] and not denormals.flushing()
