"""How far a training update is from its floor: the time its own matrix products take.

One update of an agent (``agent.update(buffer, 1)``, what ``bandits.run`` does every
update) does a few matrix products (the forward pass, the backward pass) and much else:
the minibatch gather, the per-weight maths of BBB, the optimiser, and the Python and
dispatch between them. The products are the part no implementation can skip, so their
time at the same shapes, on the same host, is the update's floor. This module records the
products one update makes (every ``mm``, ``bmm``, ``addmm`` and ``baddbmm`` call, and
their ``out=`` forms, with their operands' shapes, strides and dtypes), replays them
alone on operands of the same layout, and times the update and the replay interleaved
over rounds in the same process (median CPU time), so that their ratio holds on a busy
machine as well as on an idle one.

The products' FLOP count (``2 m n k`` per product) over the replay's time is the host's
product rate at these shapes; the default command's FLOP count (each agent's products
per update, times its updates) at that rate is the default command's floor, set beside
its CPU seconds measured end to end (a subprocess, ``getrusage``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from agents import make_agent
from bandits.tools.bench_fused import CONTEXT_DIM, N_ACTIONS, full_buffer

_ATEN = torch.ops.aten
PRODUCTS = {op.default for op in (_ATEN.mm, _ATEN.bmm, _ATEN.addmm, _ATEN.baddbmm)} | {
    op.out for op in (_ATEN.mm, _ATEN.bmm, _ATEN.addmm, _ATEN.baddbmm)}
FLOOR_AGENTS = ("bbb", "greedy")
FLOOR_RUNS = (1, 3)


@dataclass(frozen=True)
class Product:
    """One matrix product of an update: its op, its arguments (a tensor argument as
    ``(shape, stride, dtype)``) and its keyword arguments."""

    op: Any
    args: tuple
    kwargs: tuple

    @property
    def flops(self) -> int:
        """``2 m n k`` (times the batch of a batched product)."""
        shapes = [a[0] for a in self.args if isinstance(a, _Operand)]
        a, b = shapes[-2], shapes[-1]  # the two factors (addmm / baddbmm: after the input)
        batch = a[0] if len(a) == 3 else 1
        m, k, n = a[-2], a[-1], b[-1]
        return 2 * batch * m * n * k


@dataclass(frozen=True)
class _Operand:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype

    def __getitem__(self, i: int) -> Any:  # shape at 0, as Product.flops reads it
        return (self.shape, self.stride, self.dtype)[i]

    def make(self, gen: torch.Generator) -> torch.Tensor:
        t = torch.empty_strided(self.shape, self.stride, dtype=self.dtype)
        return t.normal_(generator=gen) if t.is_floating_point() else t.zero_()


class _Recorder(TorchDispatchMode):
    """Records the matrix products dispatched while it is on."""

    def __init__(self) -> None:
        super().__init__()
        self.products: list[Product] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in PRODUCTS:
            def spec(a):
                return (_Operand(tuple(a.shape), tuple(a.stride()), a.dtype)
                        if isinstance(a, torch.Tensor) else a)
            self.products.append(Product(func, tuple(spec(a) for a in args),
                                         tuple((k, spec(v)) for k, v in sorted(kwargs.items()))))
        return func(*args, **kwargs)


def products_of(update: Callable[[], object]) -> list[Product]:
    """The matrix products one call of ``update`` makes, in order."""
    with _Recorder() as rec:
        update()
    return rec.products


def replay(products: Sequence[Product]) -> Callable[[], None]:
    """A function that makes ``products`` again, on fresh operands of the same layout."""
    gen = torch.Generator().manual_seed(0)
    def made(a):
        return a.make(gen) if isinstance(a, _Operand) else a
    calls = [(p.op, [made(a) for a in p.args], {k: made(v) for k, v in p.kwargs})
             for p in products]

    def run() -> None:
        for op, args, kwargs in calls:
            op(*args, **kwargs)
    return run


def _update_of(name: str, runs: int) -> Callable[[], object]:
    """One update of agent ``name`` with ``runs`` runs on a full Mushroom-shaped buffer,
    the way :mod:`bandits.tools.bench` builds it."""
    agent = make_agent(name, CONTEXT_DIM, N_ACTIONS, runs, [0, runs], device="cpu",
                       cuda_graph=False)
    buf = full_buffer(runs, "cpu")
    return lambda: agent.update(buf, 1)


def _median_seconds(fns: dict[str, Callable[[], object]], reps: int, rounds: int
                    ) -> dict[str, float]:
    """Each of ``fns`` timed ``reps`` calls at a time, interleaved over ``rounds`` rounds:
    the median CPU seconds of one call (CPU time, as the command's row counts it: on a
    shared machine the time this process was not running does not count)."""
    for fn in fns.values():  # warm-up
        for _ in range(reps):
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for key, fn in fns.items():
            tic = time.process_time()
            for _ in range(reps):
                fn()
            times[key].append((time.process_time() - tic) / reps)
    return {k: float(np.median(t)) for k, t in times.items()}


def floor_table(agents: Sequence[str] = FLOOR_AGENTS, runs: Sequence[int] = FLOOR_RUNS,
                rounds: int = 30, reps: int = 20, threads: int = 1) -> pd.DataFrame:
    """Per agent and run count: one update's microseconds, its products' microseconds
    replayed alone, their ratio, the products' count and MFLOP, and the product rate
    (GFLOP/s); on ``threads`` torch threads (one, as ``bandits.run`` trains by default)."""
    torch.set_num_threads(threads)
    fns: dict[str, Callable[[], object]] = {}
    found: dict[tuple[str, int], list[Product]] = {}
    for name in agents:
        for r in runs:
            update = _update_of(name, r)
            update()  # the first update builds what later ones reuse
            found[name, r] = products_of(update)
            fns[f"update {name} {r}"] = update
            fns[f"products {name} {r}"] = replay(found[name, r])
    seconds = _median_seconds(fns, reps, rounds)
    rows = []
    for (name, r), prods in found.items():
        up, floor = seconds[f"update {name} {r}"], seconds[f"products {name} {r}"]
        flops = sum(p.flops for p in prods)
        rows.append({"agent": name, "runs": r, "update_us": 1e6 * up,
                     "products_us": 1e6 * floor, "times_floor": up / floor,
                     "products": len(prods), "mflop": flops / 1e6,
                     "product_gflops": flops / floor / 1e9})
    return pd.DataFrame(rows)


def cpu_seconds_of(argv: Sequence[str]) -> tuple[float, float]:
    """``(CPU seconds, wall seconds)`` of the command ``argv`` (a child process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tic = time.perf_counter()
    subprocess.run(list(argv), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - tic
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall)


def updates_of(config: dict) -> int:
    """Updates each agent of a finished run made, from its ``config.json`` record: every
    ``train_every``-th step and every step up to ``train_always_until`` train, each with
    ``updates_per_step`` updates."""
    steps, every, until = config["steps"], config["train_every"], config["train_always_until"]
    training = sum(1 for t in range(1, steps + 1) if t % every == 0 or t <= until)
    return training * config["updates_per_step"]


def job_floor(table: pd.DataFrame, argv: Sequence[str], out: Path) -> dict[str, float]:
    """The run ``argv`` (a ``bandits.run`` command writing to ``out``): its CPU and wall
    seconds end to end, its products' TFLOP (each agent's products per update at the run's
    seeds, from ``table``, times its updates) and the seconds they take at the product rate
    ``table`` measured at that many runs. An agent without a row of its own counts as
    greedy, whose network and update it shares (the epsilon-greedy agents)."""
    cpu, wall = cpu_seconds_of(argv)
    config = json.loads((out / "config.json").read_text())
    at = table[table["runs"] == config["seeds"]].set_index("agent")
    if at.empty:
        raise ValueError(f"no floor measured at {config['seeds']} runs: add it to --runs")
    per_update = sum(float(at.loc[a if a in at.index else "greedy", "mflop"])
                     for a in config["agent"])
    rate = float(at["mflop"].sum()) * 1e6 / (float(at["products_us"].sum()) / 1e6)  # FLOP/s
    flop = per_update * 1e6 * updates_of(config)
    return {"agents": " ".join(config["agent"]), "seeds": config["seeds"],
            "steps": config["steps"], "updates_per_agent": updates_of(config),
            "cpu_seconds": cpu, "wall_seconds": wall, "tflop": flop / 1e12,
            "product_gflops": rate / 1e9, "floor_seconds": flop / rate,
            "times_floor": cpu / (flop / rate)}


DEFAULT_JOB = ("-m", "bandits.run", "--no-progress")
"""The README's default command (``python -m bandits.run``), without its progress bar."""


def floor(rounds: int, reps: int = 20, job: Sequence[str] | None = DEFAULT_JOB
          ) -> pd.DataFrame:
    """The floor table: a row per agent of :data:`FLOOR_AGENTS` and run count of
    :data:`FLOOR_RUNS` (one update, ``seconds``, against its products replayed alone,
    ``floor_seconds``), and, unless ``job`` is None, a row for the command ``python
    <job>`` run end to end into a temporary folder (its CPU seconds against its products'
    FLOP at the product rate measured at its seeds)."""
    table = floor_table(rounds=rounds, reps=reps)
    rows = [{"case": f"update {r.agent}", "runs": r.runs, "seconds": r.update_us / 1e6,
             "floor_seconds": r.products_us / 1e6, "times_floor": r.times_floor,
             "products": r.products, "mflop": r.mflop, "product_gflops": r.product_gflops}
            for r in table.itertuples()]
    if job is not None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            got = job_floor(table, [sys.executable, *job, "--out", str(out)], out)
        rows.append({"case": "default command", "runs": got["seeds"],
                     "seconds": got["cpu_seconds"], "floor_seconds": got["floor_seconds"],
                     "times_floor": got["times_floor"], "products": None,
                     "mflop": got["tflop"] * 1e6, "product_gflops": got["product_gflops"]})
    return pd.DataFrame(rows)


