"""SGLang 0.5.23's model classes as its source declares them: `EntryClass` lists, poolers and heads.

`srt/models/*.py` import CUDA-only packages, so they are read with `ast`, never imported. A class's
attributes are the `self.<name> = <expr>` assignments of its `__init__`, its bases' first (bases are found
in the same file or through `from sglang.srt.models.<module> import <Base>`), as Python would set them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache

from tests.sglang_conformance.sglang_source import package_dir, source

# The classes a reward/classification family is: anything that classifies sequences or scores them.
FAMILY_NAME = re.compile(r"For\w*Classification|ForRewardModel")


@dataclass
class ModelClass:
    name: str
    file: str  # srt/models/<file>
    node: ast.ClassDef
    init: dict[str, ast.expr] = field(default_factory=dict)  # self.<attr> = <expr>, bases' first
    calls: set[str] = field(default_factory=set)  # names called anywhere in the class and its bases

    def attr(self, name: str) -> str | None:
        value = self.init.get(name)
        return ast.unparse(value) if value is not None else None


def _models_file(relpath: str) -> ast.Module:
    return source(f"srt/models/{relpath}")


@cache
def model_files() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in (package_dir() / "srt/models").glob("*.py")))


def entry_classes(file: str) -> list[str]:
    """The names in the file's `EntryClass` (a list, a tuple or one name)."""
    for node in _models_file(file).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets
        ):
            value = node.value
            items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            return [item.id for item in items if isinstance(item, ast.Name)]
    return []


def _class_node(file: str, name: str) -> tuple[str, ast.ClassDef] | None:
    module = _models_file(file)
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return file, node
    for node in module.body:  # imported from a sibling model file
        if (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("sglang.srt.models.")
            and any(alias.name == name for alias in node.names)
        ):
            other = (node.module or "").rsplit(".", 1)[1] + ".py"
            return _class_node(other, name)
    return None


@cache
def model_class(file: str, name: str) -> ModelClass:
    found = _class_node(file, name)
    if found is None:
        raise AssertionError(f"class {name} not found from srt/models/{file}")
    where, node = found
    cls = ModelClass(name, where, node)
    for base in node.bases:
        if isinstance(base, ast.Name) and _class_node(where, base.id) is not None:
            parent = model_class(where, base.id)
            cls.init.update(parent.init)
            cls.calls |= parent.calls
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            for stmt in ast.walk(item):
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                        ):
                            cls.init[target.attr] = stmt.value
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            cls.calls.add(sub.func.id)
    return cls


def reward_families() -> dict[str, str]:
    """Every reward/classification class in any `EntryClass` list -> its file."""
    out: dict[str, str] = {}
    for file in model_files():
        for name in entry_classes(file):
            if FAMILY_NAME.search(name):
                out[name] = file
    return out


def function_source(relpath: str, name: str) -> str:
    for node in ast.walk(source(relpath)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.unparse(node)
    raise AssertionError(f"{name} not found in {relpath}")


def class_source(relpath: str, name: str) -> str:
    for node in ast.walk(source(relpath)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.unparse(node)
    raise AssertionError(f"class {name} not found in {relpath}")
