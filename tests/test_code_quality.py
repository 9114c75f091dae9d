"""ruff (lint + format), mypy and the import contracts (import-linter: `[tool.importlinter]` in
pyproject.toml) stay clean on the repository; part of the test command, so CI enforces it.

The contracts are checked on *this* checkout's code. `rewardfleet` is a namespace package (the wheel ships no
`rewardfleet/__init__.py`), so every `.editable/` on sys.path adds its folders to it: the shared venv's .pth
names one checkout, PYTHONPATH may name another, and import-linter would build one graph of both, missing a
violation planted in one of them. `lint_imports` therefore drops every other checkout's `.editable/` from
sys.path and refuses to run unless `rewardfleet` resolves to the checkout under test alone.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT, VENV_BIN

_LINT_IMPORTS = """
import os, sys
root = os.path.realpath(sys.argv[1])
ours = os.path.join(root, ".editable")
sys.path[:] = [ours] + [p for p in sys.path if os.path.basename(p.rstrip("/")) != ".editable"]
import rewardfleet
found = [os.path.realpath(p) for p in rewardfleet.__path__]
if found != [os.path.join(ours, "rewardfleet")]:
    sys.exit(f"rewardfleet resolves to {found}, not only to {ours}/rewardfleet: refusing to check contracts")
from importlinter.cli import lint_imports
sys.exit(lint_imports(config_filename=os.path.join(root, "pyproject.toml"), no_cache=True, no_logo=True))
"""


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on the checkout at `root` (its `.editable/` and its pyproject.toml), nothing else."""
    return subprocess.run(
        [sys.executable, "-c", _LINT_IMPORTS, str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    "cmd",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_clean(cmd: list[str]) -> None:
    proc = subprocess.run(
        [str(VENV_BIN / cmd[0]), *cmd[1:]], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_import_contracts() -> None:
    proc = lint_imports(REPO_ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "BROKEN" not in proc.stdout and "KEPT" in proc.stdout


def _copy_checkout(dest: Path) -> Path:
    for folder in ("services", "router", "reward_fns"):
        shutil.copytree(REPO_ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", dest / "pyproject.toml")
    (dest / ".editable" / "rewardfleet").mkdir(parents=True)
    for folder in ("services", "router", "reward_fns"):
        (dest / ".editable" / "rewardfleet" / folder).symlink_to(Path("..", "..", folder))
    return dest


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        (
            "services/common/hosts.py",
            "import rewardfleet.services.gateway.errors",
            "services/common is the leaf",
        ),
        ("services/model_server/config.py", "import rewardfleet.services.gateway.errors", "the model server"),
        ("services/fleet/status.py", "import rewardfleet.services.gateway.core.dispatch", "the fleet runs"),
        ("services/client/models.py", "import rewardfleet.services.model_server.errors", "the client and"),
        ("router/command.py", "import rewardfleet.reward_fns.gsm8k", "router/ is a thin layer"),
        ("reward_fns/gsm8k.py", "import rewardfleet.services.fleet.plan", "reward_fns are plain"),
    ],
    ids=["common", "model_server", "fleet", "client", "router", "reward_fns"],
)
def test_a_violation_planted_in_another_checkout_is_found(
    tmp_path: Path, module: str, planted: str, contract: str
) -> None:
    """The contracts of a checkout see that checkout's code, whatever else is on sys.path (this one is)."""
    other = _copy_checkout(tmp_path / "other")
    path = other / module
    path.write_text(path.read_text() + f"\n{planted}  # noqa\n")
    proc = lint_imports(other)
    assert proc.returncode != 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    said = " ".join(proc.stdout.split())  # import-linter wraps long contract names
    # (a violation in the leaf also breaks every package importing it: indirect imports count)
    assert contract in said.split("Broken contracts", 1)[-1], proc.stdout[-3000:]


def _private_imports(root: Path) -> list[str]:
    """Imports of an underscore module (`a.b._c`) from outside its package `a.b`, in the product's code."""

    def is_module(name: str) -> bool:  # `from a.b import _c`: a module, or a private name of a.b?
        path = root.joinpath(*name.split(".")[1:])
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    found = []
    for folder in ("services", "router", "reward_fns"):
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            importer = ".".join(("rewardfleet", *(parts[:-1] if parts[-1] == "__init__" else parts)))
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    targets = [node.module]
                    targets += [
                        f"{node.module}.{a.name}" for a in node.names if is_module(f"{node.module}.{a.name}")
                    ]
                else:
                    continue
                for target in targets:
                    names = target.split(".")
                    private = [
                        i
                        for i, name in enumerate(names)
                        if i > 0 and name.startswith("_") and name[1:2] != "_"
                    ]
                    if private:
                        package = ".".join(names[: private[0]])
                        if importer != package and not importer.startswith(package + "."):
                            found.append(f"{path.relative_to(root)}:{node.lineno}: {target}")
    return found


def test_no_underscore_module_is_imported_across_a_package_boundary() -> None:
    """`a.b._c` is private to the package `a.b`: only its modules (and subpackages) import it."""
    assert _private_imports(REPO_ROOT) == []


def test_an_underscore_module_imported_from_another_package_is_found(tmp_path: Path) -> None:
    other = _copy_checkout(tmp_path / "other")
    (other / "reward_fns" / "_private.py").write_text("X = 1\n")
    path = other / "services" / "gateway" / "sizes.py"
    path.write_text(path.read_text() + "\nfrom rewardfleet.reward_fns._private import X  # noqa\n")
    assert _private_imports(other) == [
        "services/gateway/sizes.py:"
        + str(len(path.read_text().splitlines()))
        + ": rewardfleet.reward_fns._private"
    ]
