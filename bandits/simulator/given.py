"""What a run's command line gives beyond its flags' own values: a worker's settings file
(the run's settings as they are, written by :mod:`bandits.simulator.parallel`), and the
settings another setting's value leaves without effect, refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bandits.core.config import UsageError, convert, flag

# what a worker's own command line gives; every other setting comes from the run's
# settings file (--settings-file)
WORKER_OWN = frozenset({"agent", "out", "overwrite", "no_progress", "progress_file", "workers",
                        "settings_file", "resume"})


def read_settings_file(path: Path, cls: type) -> dict[str, Any]:
    """The settings of the run in the JSON file ``path`` (every field of ``cls`` but
    :data:`WORKER_OWN`), converted as the command line converts them; one line
    (:class:`UsageError`) where it cannot be read."""
    try:
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--settings-file {path}: cannot be read ({e})") from None
    return convert(cls, {k: v for k, v in saved.items() if k not in WORKER_OWN and v is not None})


# settings that act only under another setting's value: (the setting, the condition under
# which it acts, what to add for it to act)
CONDITIONAL: tuple[tuple[str, Any, str], ...] = (
    ("compile", lambda c: any(a in ("bbb", "bbb-lrt") for a in c["agent"]),
     "add --agent bbb (it fuses BBB's training step)"),
    ("no_cuda_graph", lambda c: c["device"] == "cuda", "add --device cuda"),
    ("fit_tolerance", lambda c: c["fit"] == "epochs", "add --fit epochs"),
    ("prior_pi", lambda c: c["prior"] == "mixture", "add --prior mixture"),
    ("prior_sigma1", lambda c: c["prior"] == "mixture", "add --prior mixture"),
    ("prior_sigma2", lambda c: c["prior"] == "mixture", "add --prior mixture"),
    ("prior_sigma", lambda c: c["prior"] == "gaussian", "use --prior gaussian"),
)


def refuse_settings_without_effect(cfg: dict[str, Any], defaults: dict[str, Any],
                                   preset: dict[str, Any]) -> None:
    """One line naming a setting given away from its default where another setting's
    value leaves it without effect (``--prior-pi`` with the Gaussian prior, ``--compile``
    without BBB, ``--no-cuda-graph`` on the CPU, ``--fit-tolerance`` without ``--fit
    epochs``): it would change nothing, and was surely meant otherwise."""
    for name, acts, fix in CONDITIONAL:
        value = cfg[name]
        if value != defaults[name] and value != preset.get(name) \
                and not acts(cfg):
            shown = "" if isinstance(value, bool) else f" {value:g}" \
                if isinstance(value, float) else f" {value}"
            raise UsageError(f"{flag(name)}{shown} has no effect in this run; {fix}, or "
                             f"leave {flag(name)} out")
