"""Objects named by their import path, ``MODULE:CALLABLE`` (a run's ``--hook``): found
in this process or in a worker process alike."""

from __future__ import annotations

import importlib
from typing import Any


def hook_factory(path: str) -> Any:
    """The callable ``MODULE:CALLABLE`` names (imported)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def hook_problem(path: str) -> str | None:
    """Why ``path`` names no hook factory (one line), or None."""
    module, sep, name = path.partition(":")
    if not sep or not module or not name:
        return "write it as MODULE:CALLABLE (for example mypackage.hooks:LossRecorder)"
    try:
        factory = hook_factory(path)
    except ImportError as e:
        return (f"cannot import {module} ({e}); put it on the Python path (PYTHONPATH, "
                "or the current directory)")
    except SyntaxError as e:
        return f"{module} has a syntax error ({e.msg}, line {e.lineno}); fix it"
    except AttributeError:
        return f"module {module} has no {name}"
    except Exception as e:  # noqa: BLE001 - the user's module: any error is one line
        return f"importing {module} raised {type(e).__name__}: {e}"
    if not callable(factory):
        return f"{path} is not callable; name a class or a function"
    return None
