"""The simulator from Python: :func:`simulate`, what ``python -m bandits.run`` does, with
its settings as keywords."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bandits.core import kernels

# exact mode where BANDITS_EXACT=1 asks for it, before torch loads (effective where nothing
# imported torch before)
kernels.pin(exact=kernels.requested([]))

import pandas as pd  # noqa: E402

from bandits.core.config import UsageError  # noqa: E402
from bandits.records.regret import ranking  # noqa: E402
from bandits.simulator.run import resume, start  # noqa: E402
from bandits.simulator.settings import config_from  # noqa: E402


def simulate(out: Path | str | None = None, **settings: Any):
    """Run agents on a bandit and return their ranking by cumulative regret.

    ``settings`` are the flags of ``python -m bandits.run`` as keywords, with their
    defaults for the rest: ``agent=["bbb", "greedy"]``, ``env="mushroom"``,
    ``steps=2000``, ``seeds=3``, ``data_dir=...`` (else ``$BANDITS_DATA_DIR``, the cache,
    a download). The run writes every output of the command into ``out`` (default: a new
    directory under ``runs/``) and runs in this process, without a progress bar unless
    ``no_progress=False``. ``resume=DIR`` continues the run in ``DIR`` from its
    checkpoint (with only the settings ``--resume`` takes beside it, ``steps=`` to extend
    it), as ``python -m bandits.run --resume DIR`` does. ``exact=True`` (exact mode: the
    same bytes on any x86-64 processor with AVX2) needs ``BANDITS_EXACT=1`` set before
    Python starts, which also makes it the default.

    Returns:
        A pandas DataFrame, one row per agent, lowest mean first: ``agent``, the mean,
        standard error, min and max of the final cumulative regret over the seeds, and
        ``next``, the paired difference to the next agent over the same seeds.

    Raises:
        bandits.core.config.UsageError: A bad setting (one line saying which and why).
        bandits.core.data.DataError: A data file missing, malformed or changed (one line
            naming it and what is wrong).
        RuntimeError: The run did not finish (its one line says why).
    """
    shown = ", ".join(f"{k}={v!r}" for k, v in settings.items())
    if settings.get("resume") is not None:  # continue a run from its checkpoint
        where = Path(settings["resume"])
        if out is not None and Path(out) != where:
            raise UsageError(f"resume={str(where)!r} continues the run in that folder; leave "
                             "out= out, or give it the same folder")
        changes = {"no_progress": True, **{k: v for k, v in settings.items() if k != "resume"}}
        outcome = resume(where, changes, f"bandits.simulate({shown})")
    else:
        given = {"no_progress": True, "workers": 1, **settings}
        if out is not None:
            given["out"] = out
        outcome = start(config_from(given), f"bandits.simulate({shown})")
    if outcome.status != 0 or outcome.out is None:
        raise RuntimeError(outcome.message or f"the run ended with status {outcome.status}")
    return ranking(pd.read_csv(outcome.out / "metrics.csv"))
