"""Settings that act only under another setting's value (each declares
``acts_when=(condition, fix)`` in its :func:`bandits.core.config.setting`): given where they
would change nothing, they are refused in one line, as another agent's flag is."""

from __future__ import annotations

import dataclasses
from typing import Any

from bandits.core.config import UsageError, flag


def refuse_settings_without_effect(cls: type, values: dict[str, Any],
                                   preset: dict[str, Any] | None = None) -> None:
    """One line (:class:`UsageError`) naming a setting of the dataclass ``cls`` given away
    from its default (and from ``preset``'s value) where ``values`` (the settings as a
    dict) leave it without effect: ``--prior-pi`` with the Gaussian prior, ``--compile``
    without BBB, ``--no-cuda-graph`` on the CPU, MNIST's ``--dropout`` with ``--model
    bbb``. It would change nothing, and was surely meant otherwise."""
    for f in dataclasses.fields(cls):
        if "acts_when" not in f.metadata:
            continue
        name, (acts, fix) = f.name, f.metadata["acts_when"]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING \
            else f.default  # a list setting's default is its factory's
        value = values[name]
        if value != default and value != (preset or {}).get(name, default) \
                and not acts(values):
            shown = "" if isinstance(value, bool) else f" {value:g}" \
                if isinstance(value, float) else " " + " ".join(map(str, value)) \
                if isinstance(value, list) else f" {value}"
            raise UsageError(f"{flag(name)}{shown} has no effect in this run; {fix}, or "
                             f"leave {flag(name)} out")
