"""The import graph of tests/ and bench/: bench imports nothing from tests (what both run is in
bench/harness/), nothing imports a conftest (shared helpers are plain modules: tests/support/,
bench/harness/), and no two modules import each other, directly or around a loop. Read from the source
(every import statement, top-level or inside a function), so it holds for any layout."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.harness.processes import REPO_ROOT

FOLDERS = ("tests", "bench")


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module under the folders (a package by its `__init__.py`)."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def imports(root: Path) -> dict[str, set[str]]:
    """Each module's imports of other modules under the folders (`from a import b` counts `a` and `a.b`)."""
    mods = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        graph[name] = {t for t in targets if t in mods and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def problems(root: Path) -> list[str]:
    graph = imports(root)
    found = [f"{m} imports {t}" for m, ts in graph.items() if m.startswith("bench") for t in sorted(ts)
             if t.startswith("tests")]  # fmt: skip
    found += [f"{m} imports {t}" for m, ts in graph.items() for t in sorted(ts) if t.endswith(".conftest")]
    found += [f"import cycle: {' <-> '.join(c)}" for c in cycles(graph)]
    return sorted(found)


def test_bench_and_tests_import_in_one_direction_without_cycles() -> None:
    assert problems(REPO_ROOT) == []


def test_the_check_finds_each_kind_of_problem(tmp_path: Path) -> None:
    files = {
        "tests/__init__.py": "",
        "tests/conftest.py": "X = 1\n",
        "tests/helper.py": "from tests.conftest import X\n",
        "bench/__init__.py": "",
        "bench/a.py": "def f():\n    from bench import b\n",
        "bench/b.py": "from bench.a import f\nimport tests.helper\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert problems(tmp_path) == [
        "bench.b imports tests.helper",
        "import cycle: bench.a <-> bench.b",
        "tests.helper imports tests.conftest",
    ]
