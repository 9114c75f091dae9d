"""Load verl's own reward-score modules for parity tests, without importing the `verl` package.

`import verl` pulls in ray, torch and more; the reward-score files themselves need only the standard
library. We register a stand-in package whose `__path__` is verl's `utils/reward_score` directory, so
`verl_reward_score.gsm8k` etc. load straight from verl's files, and rebuild `default_compute_score`
from its source so the test also covers verl's data_source dispatch.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PACKAGE = "verl_reward_score"
VERL_VERSION = "0.9.1"
INSTALL_HINT = f".venv/bin/pip install --no-deps verl=={VERL_VERSION}"


def reward_score_dir() -> Path:
    spec = importlib.util.find_spec("verl")  # finds the package without executing verl/__init__.py
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"verl is not installed; parity tests need it: {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "utils" / "reward_score"


def _package() -> types.ModuleType:
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [str(reward_score_dir())]
        sys.modules[PACKAGE] = package
    return sys.modules[PACKAGE]


def _verl_utils_without_verl_init() -> None:
    """prime_math imports `verl.utils.py_functional`: make `verl` and `verl.utils` namespace-like packages
    over verl's own folders, so that file loads without running `verl/__init__.py` (ray, torch, ...)."""
    root = reward_score_dir().parent.parent
    for name, folder in (("verl", root), ("verl.utils", root / "utils")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]
            package.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            package.__spec__.submodule_search_locations = [str(folder)]
            sys.modules[name] = package


def module(name: str) -> types.ModuleType:
    """verl's `verl/utils/reward_score/<name>.py`."""
    _package()
    if name.startswith("prime_math"):
        _verl_utils_without_verl_init()
    return importlib.import_module(f"{PACKAGE}.{name}")


def default_compute_score() -> Callable[..., Any]:
    """verl's `default_compute_score`, compiled from its source with its relative imports intact."""
    _package()
    source_path = reward_score_dir() / "__init__.py"
    tree = ast.parse(source_path.read_text())
    functions: list[ast.stmt] = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "default_compute_score"
    ]
    if len(functions) != 1:
        raise RuntimeError(f"default_compute_score not found in {source_path}")
    namespace: dict[str, Any] = {"__name__": PACKAGE, "__package__": PACKAGE}
    exec(compile(ast.Module(body=functions, type_ignores=[]), str(source_path), "exec"), namespace)
    function: Callable[..., Any] = namespace["default_compute_score"]
    return function


def installed_version() -> str:
    from importlib.metadata import version

    return version("verl")


def dispatch_names() -> tuple[set[str], set[str]]:
    """The data_source names verl's `default_compute_score` compares against, read from its source:
    (exact names from `==` / `in [...]`, prefixes from `data_source.startswith(...)`)."""
    tree = ast.parse((reward_score_dir() / "__init__.py").read_text())
    function = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "default_compute_score"
    )
    exact: set[str] = set()
    prefixes: set[str] = set()
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Name)
            and node.left.id == "data_source"
        ):
            for comparator in node.comparators:
                for const in ast.walk(comparator):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str):
                        exact.add(const.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "data_source"
        ):
            prefixes.update(
                a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
            )
    return exact, prefixes
