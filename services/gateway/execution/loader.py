"""Loading user code: the one place that turns `module:attr` or `file.py:attr` into a Python object.

A module given by name is imported normally (installed code: the built-in package, `mod.name:fn` entries).
A file given by path is loaded without touching `sys.path` (so a user's `math.py` cannot shadow the standard
library), under a module name derived from the file's path *and content* (`file_module_name`): an edited file
is a new module, so a hot reload imports it afresh in the gateway and in every worker, while calls already
running keep the old module. Reward functions, group functions and Python graders are all resolved here
(`resolve`), so all of them follow an edit on reload.

A file is loaded as a top-level module of its own. A file of a drop-in folder (`root`, a `reward_fns_dirs`
entry) can also import the modules and packages beside it by their plain names (dropin.py); its module name
then also covers the folder's digest, so an edited helper re-imports the reward files that use it.

Pure standard library: worker processes import this before any reward function.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from rewardfleet.services.gateway.execution import dropin

USER_MODULE_PREFIX = "rewardfleet_user"


@dataclass(frozen=True)
class FunctionRef:
    """Where a reward function lives, in a form that pickles: `module` is an importable module name, or,
    when `file` is set, the unique name under which that file is loaded by path."""

    module: str
    attr: str
    file: str | None = None
    root: str | None = None  # the drop-in folder whose modules the file may import by plain name


def load_module(module: str, file: str | None, root: str | None = None) -> ModuleType:
    """Import a module by name, or load a file by path without touching `sys.path` (so a user's `math.py`
    cannot shadow the standard library); with `root`, the file's sibling imports resolve in that folder."""
    if file is None:
        return importlib.import_module(module)
    if root is not None:
        dropin.finder().use(Path(root))  # before the cache check: a changed folder drops its old helpers
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


def file_module_name(path: Path, root: Path | None = None) -> str:
    """`rewardfleet_user_<digest>_<stem>`, the digest covering the path, the content and, for a file of a
    drop-in folder, every `.py` of that folder: a new name whenever the file or one of its helpers changes."""
    folder = dropin.folder_digest(root).encode() if root is not None else b""
    digest = hashlib.sha256(str(path).encode() + b"\0" + path.read_bytes() + b"\0" + folder).hexdigest()[:10]
    return f"{USER_MODULE_PREFIX}_{digest}_{path.stem}"


def file_ref(path: Path, attr: str, root: Path | None = None) -> FunctionRef:
    """The ref of `attr` in the file at `path` (resolved to an absolute path; it must exist); `root`: the
    drop-in folder it belongs to."""
    path = path.resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file {path}")
    folder = root.resolve() if root is not None else None
    return FunctionRef(file_module_name(path, folder), attr, str(path), str(folder) if folder else None)


def is_file_target(target: str) -> bool:
    return target.endswith(".py") or "/" in target


def parse_ref(spec: str) -> FunctionRef:
    """`'package.module:attr'` or `'/dir/file.py:attr'` → its ref (a file's module: `file_module_name`)."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr.isidentifier():
        raise ValueError(f"{spec!r} must look like 'module.name:function' or 'file.py:function'")
    if is_file_target(target):
        return file_ref(Path(target), attr)
    return FunctionRef(target, attr)


def resolve(spec: str) -> tuple[FunctionRef, ModuleType, Callable[..., Any]]:
    """Parse and load `spec` (see `parse_ref`): its ref, its module and the callable it names."""
    ref = parse_ref(spec)
    module = load_module(ref.module, ref.file)
    fn = getattr(module, ref.attr, None)
    if fn is None or not callable(fn):
        target = ref.file or ref.module
        raise AttributeError(f"{target} defines no callable {ref.attr!r}")
    return ref, module, fn


def load_ref(ref: FunctionRef) -> Callable[..., Any]:
    fn: object = getattr(load_module(ref.module, ref.file, ref.root), ref.attr)
    if not callable(fn):
        raise TypeError(f"{ref.module}:{ref.attr} is not callable")
    return fn
