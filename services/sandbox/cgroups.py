"""Per-sandbox cgroups: pids, memory and CPU limits for everything a sandbox runs, and the list of its
processes to kill at stop.

cgroup v2 when this process's cgroup delegates the `pids` and `memory` controllers to children; else the
v1 `pids`, `memory` and `cpu` hierarchies when they are mounted and writable (this is how the test host is
set up). `Cgroups.detect()` returns None when neither is usable; the provider then refuses to start
(docs/sandboxes.md: without cgroups a root sandbox's processes have no bound).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from rewardfleet.services.sandbox.spec import Resources

_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "rewardfleet-sandbox-"
_CFS_PERIOD_US = 100_000


def _own_paths() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


@dataclass(frozen=True)
class Cgroups:
    """Where sandbox cgroups are made: `version` 1 or 2; `parents` maps a controller to the folder
    holding the sandboxes' groups (one folder for v2)."""

    version: int
    parents: dict[str, Path]

    @classmethod
    def detect(cls) -> Cgroups | None:
        own = _own_paths()
        v2 = _ROOT / "cgroup.controllers"
        if v2.exists() and "" in own:
            parent = _ROOT / own[""].lstrip("/")
            wanted = {"pids", "memory"}
            delegated = (
                set((parent / "cgroup.subtree_control").read_text().split()) if parent.exists() else set()
            )
            if wanted <= delegated and os.access(parent, os.W_OK):
                return cls(2, {"": parent})
        parents: dict[str, Path] = {}
        for controller in ("pids", "memory", "cpu"):
            mount = _ROOT / controller
            if controller not in own or not (mount / "cgroup.procs").exists():
                continue
            parent = mount / own[controller].lstrip("/")
            if os.access(parent, os.W_OK):
                parents[controller] = parent
        if {"pids", "memory"} <= parents.keys():
            return cls(1, parents)
        return None

    def folders(self, sandbox_id: str) -> list[Path]:
        return [parent / f"{_PREFIX}{sandbox_id}" for parent in self.parents.values()]

    def create(self, sandbox_id: str, resources: Resources) -> None:
        """Makes the sandbox's groups and writes its limits."""
        memory = resources.memory_mb << 20
        quota = max(1000, int(resources.cpus * _CFS_PERIOD_US))
        for controller, parent in self.parents.items():
            folder = parent / f"{_PREFIX}{sandbox_id}"
            folder.mkdir(exist_ok=True)
            if self.version == 2:
                (folder / "pids.max").write_text(str(resources.pids))
                (folder / "memory.max").write_text(str(memory))
                with contextlib.suppress(OSError):
                    (folder / "memory.swap.max").write_text("0")
                with contextlib.suppress(OSError):
                    (folder / "cpu.max").write_text(f"{quota} {_CFS_PERIOD_US}")
            elif controller == "pids":
                (folder / "pids.max").write_text(str(resources.pids))
            elif controller == "memory":
                (folder / "memory.limit_in_bytes").write_text(str(memory))
                with contextlib.suppress(OSError):
                    (folder / "memory.memsw.limit_in_bytes").write_text(str(memory))
            elif controller == "cpu":
                (folder / "cpu.cfs_period_us").write_text(str(_CFS_PERIOD_US))
                (folder / "cpu.cfs_quota_us").write_text(str(quota))

    def procs_files(self, sandbox_id: str) -> list[str]:
        """The `cgroup.procs` files a new process writes "0" to (in its pre-exec hook) to join."""
        return [str(folder / "cgroup.procs") for folder in self.folders(sandbox_id)]

    def pids(self, sandbox_id: str) -> set[int]:
        found: set[int] = set()
        for folder in self.folders(sandbox_id):
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
        return found

    def kill(self, sandbox_id: str, patience_s: float = 5.0) -> None:
        """Kills every process in the sandbox's groups and waits (up to `patience_s`) until none is left."""
        if self.version == 2:
            for folder in self.folders(sandbox_id):
                with contextlib.suppress(OSError):
                    (folder / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + patience_s
        while (left := self.pids(sandbox_id)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def destroy(self, sandbox_id: str, patience_s: float = 5.0) -> None:
        """Kills every process left in the sandbox's groups and removes them."""
        folders = self.folders(sandbox_id)
        self.kill(sandbox_id, patience_s)
        deadline = time.monotonic() + patience_s
        for folder in folders:
            while folder.exists():
                try:
                    folder.rmdir()
                except FileNotFoundError:
                    break
                except OSError:  # a process being torn down still counts for a moment
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.005)
