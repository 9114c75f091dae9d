"""Drop-in folders: a reward file imports the modules and packages next to it by their plain names.

Like an Airflow DAGs folder, a `reward_fns_dirs` folder may hold helpers beside the reward files:
`my_helpers.py` (`from my_helpers import parse`) or a package `verl_rewards/` (`from verl_rewards import
gsm8k`; with or without `__init__.py`). A helper without `compute_score` is not a reward function, and
sub-folders are never scanned for reward files.

How: one `DropInFinder` per process (the gateway and each worker) sits at the *end* of `sys.meta_path`, so the
standard library and installed packages always win — a folder's `math.py` never shadows `math` (it is then
not importable by that name, and the gateway warns) — and `sys.path` is not touched. It answers only
top-level names that are a `.py` file or a package directory in one of its folders, first folder first.

Reload: a folder's digest covers its helpers (every `.py` under it but the top-level files that define
`compute_score`). `use(folder)` notices a changed digest and drops the
modules it had imported from that folder from `sys.modules`, so the next import reads them afresh; the reward
files' module names include the digest (loader.file_module_name), so they are imported afresh too, and calls
already running keep the old modules. Helper names share one namespace per process, as on one `sys.path`:
two folders with the same helper name get the first folder's (the gateway warns).

Pure standard library: worker processes import this before any reward function.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import re
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

logger = logging.getLogger(__name__)


# A top-level file that defines compute_score is a reward file, not a helper (read from the text: the digest
# is needed before anything is imported, and must not change when another reward file is edited — a worker
# that has not yet imported a function would otherwise import it afresh, from whatever is on disk now).
_DEFINES_ENTRY_POINT = re.compile(rb"^(async\s+def|def)\s+compute_score\b|^compute_score\s*=", re.M)


def _helper_files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).parts
        if any(part == "__pycache__" or part.startswith(".") for part in rel):
            continue
        if len(rel) == 1 and _DEFINES_ENTRY_POINT.search(path.read_bytes()):
            continue
        yield path


def folder_digest(folder: Path) -> str:
    """A digest of the folder's helpers (every `.py` under it but its reward files): names and bytes."""
    h = hashlib.sha256()
    for path in _helper_files(folder):
        for part in (str(path.relative_to(folder)).encode(), path.read_bytes()):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()[:10]


def _top_level_names(folder: Path) -> list[str]:
    names = [p.stem for p in folder.glob("*.py") if p.stem.isidentifier()]
    names += [
        p.name for p in folder.iterdir() if p.is_dir() and p.name.isidentifier() and any(p.rglob("*.py"))
    ]
    return sorted(set(names))


class DropInFinder(importlib.abc.MetaPathFinder):
    """Finds top-level modules in the registered folders (see the module docstring)."""

    def __init__(self) -> None:
        self._folders: dict[Path, str] = {}  # folder -> digest of its files when last used
        self._owned: dict[str, Path] = {}  # top-level module name -> the folder it was imported from
        self._lock = threading.Lock()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or "." in fullname:
            return None  # submodules are found through their package's __path__, by the normal finders
        for folder in list(self._folders):
            spec = _spec_in(folder, fullname)
            if spec is not None:
                self._owned[fullname] = folder
                return spec
        return None

    def use(self, folder: Path) -> None:
        """Make `folder`'s modules importable by plain name; if it changed, re-import them on next use."""
        folder = folder.resolve()
        current = folder_digest(folder)
        with self._lock:
            known = self._folders.get(folder)
            if known == current:
                return
            if known is None:
                self._warn_unreachable(folder)
            else:
                self._evict(folder)
            self._folders[folder] = current
        importlib.invalidate_caches()

    def _evict(self, folder: Path) -> None:
        for name in [n for n, owner in self._owned.items() if owner == folder]:
            del self._owned[name]
            for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                sys.modules.pop(module, None)

    def _warn_unreachable(self, folder: Path) -> None:
        for name in _top_level_names(folder):
            spec = importlib.util.find_spec(name) if name not in sys.modules else sys.modules[name].__spec__
            if spec is not None:
                logger.warning(
                    "%s: a sibling import of %r gets %s, not this folder's %s (rename it to import it)",
                    folder,
                    name,
                    spec.origin or "an installed package",
                    name,
                )


def _spec_in(folder: Path, name: str) -> importlib.machinery.ModuleSpec | None:
    package = folder / name
    init = package / "__init__.py"
    if init.is_file():
        return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(package)])
    module = folder / f"{name}.py"
    if module.is_file():
        return importlib.util.spec_from_file_location(name, module)
    if package.is_dir() and any(package.rglob("*.py")):
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)  # a namespace package
        spec.submodule_search_locations = [str(package)]
        return spec
    return None


_finder: DropInFinder | None = None


def finder() -> DropInFinder:
    """This process's finder, appended to `sys.meta_path` on first use."""
    global _finder
    if _finder is None:
        _finder = DropInFinder()
        sys.meta_path.append(_finder)
    return _finder
