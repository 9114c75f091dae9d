"""A Harbor task folder, read and checked.

Its files: `instruction.md`, `task.toml`, `environment/Dockerfile`, `tests/test.sh` (and an optional
`solution/solve.sh`).

Only the fields the fleet acts on are read from `task.toml` (`[verifier]` and `[agent]` `timeout_sec`,
`[environment]` `build_timeout_sec`, `cpus`, `memory_mb`, `storage_mb`); the rest (metadata, tags) is left
to Harbor. A folder that is not a usable task raises `HarborTaskInvalid` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASK_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_INSTRUCTION_BYTES = 64 << 10
MAX_TESTS_BYTES = 64 << 20
_COPY_FORBIDDEN = re.compile(r"^\s*(COPY|ADD)\b[^\n]*\b(tests|solution)\b", re.IGNORECASE | re.MULTILINE)


class HarborTaskInvalid(ValueError):
    """A task folder that cannot be served: a file missing, a field of the wrong type or out of range."""


@dataclass(frozen=True)
class HarborTask:
    """One task: its folder, what the agent is told, and the limits `task.toml` sets."""

    name: str
    folder: Path
    instruction: str
    agent_timeout_s: float
    verifier_timeout_s: float
    build_timeout_s: float
    cpus: float
    memory_mb: int
    storage_mb: int

    @property
    def environment_dir(self) -> Path:
        return self.folder / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.folder / "tests"

    @property
    def solution(self) -> Path:
        return self.folder / "solution" / "solve.sh"

    def environment_digest(self) -> str:
        """sha256 over every file of `environment/` (relative path, mode, bytes): the image's cache key."""
        digest = hashlib.sha256()
        for path in sorted(self.environment_dir.rglob("*")):
            rel = path.relative_to(self.environment_dir).as_posix()
            if path.is_symlink():
                digest.update(f"L {rel} {path.readlink()}\0".encode())
            elif path.is_file():
                digest.update(f"F {rel} {path.stat().st_mode & 0o777:o} {path.stat().st_size}\0".encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()


def load_task(folder: Path) -> HarborTask:
    """The task in `folder`, checked; `HarborTaskInvalid` naming what is wrong."""
    name = folder.name
    if not TASK_NAME.fullmatch(name):
        raise HarborTaskInvalid(f"{folder}: a task folder's name is [a-z0-9._-], at most 64 characters")
    for required in ("instruction.md", "task.toml", "environment/Dockerfile", "tests/test.sh"):
        if not (folder / required).is_file():
            raise HarborTaskInvalid(f"{folder}: {required} is missing")
    dockerfile = (folder / "environment/Dockerfile").read_text()
    if _COPY_FORBIDDEN.search(dockerfile):
        raise HarborTaskInvalid(f"{folder}: environment/Dockerfile must not copy tests/ or solution/ in")
    instruction = (folder / "instruction.md").read_bytes()
    if len(instruction) > MAX_INSTRUCTION_BYTES:
        raise HarborTaskInvalid(f"{folder}: instruction.md is over {MAX_INSTRUCTION_BYTES} bytes")
    tests_bytes = sum(p.stat().st_size for p in (folder / "tests").rglob("*") if p.is_file())
    if tests_bytes > MAX_TESTS_BYTES:
        raise HarborTaskInvalid(f"{folder}: tests/ holds {tests_bytes} bytes, over {MAX_TESTS_BYTES}")
    try:
        config = tomllib.loads((folder / "task.toml").read_text())
    except tomllib.TOMLDecodeError as exc:
        raise HarborTaskInvalid(f"{folder}/task.toml: {exc}") from None
    where = f"{folder}/task.toml"
    return HarborTask(
        name=name,
        folder=folder,
        instruction=instruction.decode("utf-8", errors="replace"),
        agent_timeout_s=_number(config, "agent", "timeout_sec", 600.0, 1, 86400, where),
        verifier_timeout_s=_number(config, "verifier", "timeout_sec", 600.0, 1, 86400, where),
        build_timeout_s=_number(config, "environment", "build_timeout_sec", 600.0, 1, 86400, where),
        cpus=_number(config, "environment", "cpus", 1, 0.01, 64, where),
        memory_mb=int(_number(config, "environment", "memory_mb", 2048, 16, 1 << 20, where, integer=True)),
        storage_mb=int(_number(config, "environment", "storage_mb", 10240, 1, 1 << 20, where, integer=True)),
    )


def _number(
    config: dict[str, Any],
    table: str,
    key: str,
    default: float,
    low: float,
    high: float,
    where: str,
    *,
    integer: bool = False,
) -> float:
    section = config.get(table, {})
    if not isinstance(section, dict):
        raise HarborTaskInvalid(f"{where}: [{table}] must be a table")
    value = section.get(key, default)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise HarborTaskInvalid(f"{where}: [{table}] {key} must be {kind} in [{low}, {high}], got {value!r}")
    return float(value)


def find_tasks(root: Path) -> dict[str, HarborTask]:
    """Every task folder directly under `root` (a folder holding `task.toml`), by name."""
    return {p.name: load_task(p) for p in sorted(root.iterdir()) if (p / "task.toml").is_file()}
