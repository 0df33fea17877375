"""The optimiser step without Optimizer.step's Python (agents.neural.fused_adam_step): the
same kernels with the same arguments, so the same bytes, and the usual step where it does
not apply."""

import pytest
import torch

from agents.neural import fused_adam_step


def _pair(cls, **group):
    torch.manual_seed(0)
    a = [torch.nn.Parameter(torch.randn(5, 7)), torch.nn.Parameter(torch.randn(5, 3))]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]

    def make(ps):
        return cls([{"params": [ps[0]], **group}, {"params": [ps[1]], "weight_decay": 0.0}],
                   lr=1e-2, fused=True)
    return (a, make(a)), (b, make(b))


@pytest.mark.parametrize("cls, group", [(torch.optim.Adam, {}),
                                        (torch.optim.AdamW, {"weight_decay": 0.3})])
def test_it_steps_to_the_same_bytes_as_the_optimiser(cls, group):
    (a, usual), (b, direct) = _pair(cls, **group)
    took = []
    for i in range(40):
        grads = [torch.randn(5, 7), torch.randn(5, 3)]
        for p, q, g in zip(a, b, grads):
            p.grad, q.grad = g.clone(), g.clone()
        if i == 20:  # a changed decay is read at each step (--weight-decay-per-datum)
            usual.param_groups[0]["weight_decay"] = direct.param_groups[0]["weight_decay"] = 0.1
        usual.step()
        took.append(fused_adam_step(direct))
        if not took[-1]:
            direct.step()
    assert took == [True] * 40  # the first step too: it makes the state as step() does
    for p, q in zip(a, b):
        assert torch.equal(p, q)
        assert list(usual.state[p]) == list(direct.state[q]) == ["step", "exp_avg", "exp_avg_sq"]
        for key in ("step", "exp_avg", "exp_avg_sq"):
            s, d = usual.state[p][key], direct.state[q][key]
            assert torch.equal(s, d)
            assert (s.dtype, s.device, s.shape) == (d.dtype, d.device, d.shape)
    saved, mine = usual.state_dict(), direct.state_dict()
    assert saved["param_groups"] == mine["param_groups"]
    assert saved["state"].keys() == mine["state"].keys()


def test_a_run_that_compiles_nothing_never_imports_dynamo(tmp_path):
    import subprocess
    import sys
    code = ("import sys, torch\nfrom agents.neural import skip_dynamo_import\n"
            "skip_dynamo_import()\np = torch.nn.Parameter(torch.ones(3))\n"
            "opt = torch.optim.Adam([p], fused=True)\nopt.zero_grad()\n"
            "opt.load_state_dict(opt.state_dict())\nprint('torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.stdout.strip() == "False", done.stderr


def test_it_leaves_other_optimisers_and_options_to_the_usual_step():
    p = torch.nn.Parameter(torch.randn(3))
    p.grad = torch.ones(3)
    for opt in (torch.optim.SGD([p], lr=0.1), torch.optim.Adam([p], fused=True, amsgrad=True),
                torch.optim.Adam([p]), torch.optim.Adam([p], fused=True, maximize=True)):
        opt.step()  # its state made
        before = p.detach().clone()
        assert fused_adam_step(opt) is False
        assert torch.equal(p, before)
    opt = torch.optim.Adam([p], fused=True)
    opt.step()
    p.grad = None  # the usual step skips a parameter without a gradient
    assert fused_adam_step(opt) is False
