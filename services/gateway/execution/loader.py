"""Loading user code: the one place that turns `module:attr` or `file.py:attr` into a Python object.

A module given by name is imported normally (installed code: the built-in package, `mod.name:fn` entries).
A file given by path is loaded without touching `sys.path` (so a user's `math.py` cannot shadow the standard
library), under a module name derived from the file's path *and content*: an edited file is a new module, so
a hot reload imports it afresh in the gateway and in every worker, while calls already running keep the old
module.

Pure standard library: worker processes import this before any reward function.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class FunctionRef:
    """Where a reward function lives, in a form that pickles: `module` is an importable module name, or,
    when `file` is set, the unique name under which that file is loaded by path."""

    module: str
    attr: str
    file: str | None = None


def load_module(module: str, file: str | None) -> ModuleType:
    """Import a module by name, or load a file by path without touching `sys.path` (so a user's `math.py`
    cannot shadow the standard library)."""
    if file is None:
        return importlib.import_module(module)
    cached = sys.modules.get(module)
    if cached is not None:
        return cached
    spec = importlib.util.spec_from_file_location(module, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file} as a Python module")
    mod = importlib.util.module_from_spec(spec)
    # Registered before exec, as importlib recommends, so dataclasses/pickling inside the file work.
    sys.modules[module] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(module, None)
        raise
    return mod


def load_ref(ref: FunctionRef) -> Callable[..., Any]:
    fn: object = getattr(load_module(ref.module, ref.file), ref.attr)
    if not callable(fn):
        raise TypeError(f"{ref.module}:{ref.attr} is not callable")
    return fn
