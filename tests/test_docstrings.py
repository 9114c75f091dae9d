"""Product docstrings say what a module is in one line, then only what a caller must know.

Every module of services/, router/ and reward_fns/ has a docstring whose first line is one sentence on its
own; none is over 25 lines; and no product file cites an issue number or a benchmark's figures (history and
measurements live in docs/architecture.md, docs/BENCHMARKS.md and bench/NOTES.md).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bench.harness.processes import REPO_ROOT

SOURCE_ROOTS = ("services", "router", "reward_fns")
MAX_LINES = 25
# History and figures that belong in docs/: "issue 44", "benchmark 14", "13.6 KiB", "0.9 ms a post".
HISTORY = re.compile(r"\bissue [0-9]|\bbenchmark [0-9]|KiB\b|ms a post\b")


def modules(root: Path = REPO_ROOT) -> list[Path]:
    return sorted(
        p
        for folder in SOURCE_ROOTS
        for p in (root / folder).rglob("*.py")
        # task data shipped for Harbor environments is the task's code, not the product's
        if "__pycache__" not in p.parts and "harbor_tasks" not in p.parts
    )


def docstring_problems(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """What the module's docstring lacks, each naming the file and the fix."""
    name = path.relative_to(root)
    text = path.read_text()
    tree = ast.parse(text)
    doc = ast.get_docstring(tree)
    if not doc:
        return [f"{name}: add a docstring whose first line says what the module is"]
    problems = []
    lines = doc.splitlines()
    if not lines[0].rstrip().endswith("."):
        problems.append(
            f"{name}: end the docstring's first line with a full stop (one sentence): {lines[0]!r}"
        )
    if len(lines) > 1 and lines[1].strip():
        problems.append(
            f"{name}: the docstring's first sentence runs on: make line 1 a sentence, then a blank line"
        )
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            inner = ast.get_docstring(node)
            if inner and len(inner.splitlines()) > MAX_LINES:
                where = getattr(node, "name", "the module")
                problems.append(
                    f"{name}: {where}'s docstring is {len(inner.splitlines())} lines: cut it to {MAX_LINES},"
                    " moving reasons and figures to docs/architecture.md"
                )
    for number, line in enumerate(text.splitlines(), 1):
        if HISTORY.search(line):
            problems.append(
                f"{name}:{number}: move the history or figure to docs/ or bench/NOTES.md: {line.strip()}"
            )
    return problems


def test_every_product_module_says_what_it_is_in_one_line() -> None:
    problems = [problem for path in modules() for problem in docstring_problems(path)]
    assert not problems, "\n".join(problems)


def test_each_kind_of_problem_is_found(tmp_path: Path) -> None:
    folder = tmp_path / "services"
    folder.mkdir()
    cases = {
        "none.py": "x = 1\n",
        "runs_on.py": '"""A module whose first sentence\nruns on to the next line."""\n',
        "no_stop.py": '"""Things, listed:\n\n- one\n"""\n',
        "long.py": '"""Long.\n\n' + "line\n" * 30 + '"""\n',
        "history.py": '"""Fine.\n\nSaved 3.1 KiB a post (issue 44)."""\n',
        "good.py": '"""A good module.\n\nWhat a caller must know."""\n',
    }
    found = {}
    for file, text in cases.items():
        (folder / file).write_text(text)
        found[file] = docstring_problems(folder / file, tmp_path)
    assert "add a docstring" in found["none.py"][0]
    assert any("runs on" in p for p in found["runs_on.py"])
    assert any("full stop" in p for p in found["no_stop.py"])
    assert any("cut it to 25" in p for p in found["long.py"])
    assert any(":3: move the history" in p for p in found["history.py"])
    assert found["good.py"] == []
