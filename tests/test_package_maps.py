"""Each package's map (its `__init__` docstring) holds to its files: every module and subpackage is named, and
nothing it names as a file, a list entry or a table row is missing.

Read from the filesystem, so it holds for any layout: a module added, moved or removed without its package's
map fails here, naming the package and what to add or remove.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT

SOURCE_ROOTS = ("services", "router", "reward_fns")

# `name.py` or `name/` (optionally under folders: `features/group_store.py`) anywhere in the text.
PATH_TOKEN = re.compile(r"(?<![\w./$-])((?:[A-Za-z_]\w*/)*[A-Za-z_]\w*(?:\.py|/))(?![\w:])")
# A list entry naming a child: "- `name`: what it is".
BULLET = re.compile(r"^\s*- `([A-Za-z_]\w*)`:", re.MULTILINE)
# A table row naming a child: "    name.py      what it is" (at most 4 spaces in, two or more after the name).
ROW = re.compile(r"^ {0,4}([A-Za-z_]\w*)(?:\.py|/)?\s{2,}\S", re.MULTILINE)


def packages() -> list[Path]:
    found = []
    for root in SOURCE_ROOTS:
        found += sorted(
            p.parent for p in (REPO_ROOT / root).rglob("__init__.py") if "__pycache__" not in p.parts
        )
    return found


def children(package: Path) -> set[str]:
    """The package's modules (without `.py`) and subpackages, dunder files left out."""
    names = {p.stem for p in package.glob("*.py") if not p.name.startswith("__")}
    names |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return names


def docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def unnamed(package: Path, text: str) -> list[str]:
    """Children the map does not name (as `name`, `name.py`, `name/` or a plain word)."""
    return sorted(n for n in children(package) if not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text))


def named_but_missing(package: Path, text: str, root: Path = REPO_ROOT) -> list[str]:
    """What the map names as a file, a list entry or a table row, and the filesystem does not hold.

    A path resolves against the package or any folder above it up to the repository (a map may point at a
    sibling package's file: `features/group_store.py`)."""
    bases = [package, *package.parents]
    bases = bases[: bases.index(root) + 1]
    missing = []
    for token in PATH_TOKEN.findall(text):
        if not any((base / token).exists() for base in bases):
            missing.append(token)
    kids = children(package)
    for name in BULLET.findall(text) + ROW.findall(text):
        if name not in kids:
            missing.append(name)
    return sorted(set(missing))


def test_every_source_root_has_packages() -> None:
    assert {p.relative_to(REPO_ROOT).parts[0] for p in packages()} == set(SOURCE_ROOTS)


@pytest.mark.parametrize("package", packages(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_the_map_names_every_module(package: Path) -> None:
    text = docstring(package)
    assert text, f"{package.relative_to(REPO_ROOT)}/__init__.py has no docstring"
    missing = unnamed(package, text)
    assert not missing, f"{package.relative_to(REPO_ROOT)}/__init__.py: add {missing} to its map"


@pytest.mark.parametrize("package", packages(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_the_map_names_nothing_that_is_gone(package: Path) -> None:
    text = docstring(package)
    gone = named_but_missing(package, text)
    assert not gone, f"{package.relative_to(REPO_ROOT)}/__init__.py names {gone}, which do not exist"


def test_the_checks_catch_drift(tmp_path: Path) -> None:
    """The two checks on a package made here: a module left out, and a listed module, row and path gone."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for name in ("__init__.py", "kept.py", "forgotten.py", "sub/__init__.py"):
        (pkg / name).write_text("")
    text = "kept.py  a module\nsub/  a package\n- `routes`: gone\n    old      a row\nsee gone/file.py"
    assert unnamed(pkg, text) == ["forgotten"]
    assert named_but_missing(pkg, text, root=tmp_path) == ["gone/file.py", "old", "routes"]
