"""CPU time and resident memory of a process and its descendants, read from /proc (Linux): a server under
a benchmark is often a supervisor with worker processes (uvicorn's `workers`, a state server)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    pids = [pid]
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process ended
        return pids
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:  # the thread ended
            continue
        for child in children:
            pids += tree(int(child))
    return pids


def _proc_files(pids: tuple[int, ...], name: str) -> Iterator[str]:
    """/proc/<pid>/`name` of processes `pids` and their descendants; one that ended meanwhile is skipped."""
    for one in (one for pid in pids for one in tree(pid)):
        try:
            yield Path(f"/proc/{one}/{name}").read_text()
        except OSError:
            continue


def cpu_s(*pids: int) -> float:
    """User + system CPU seconds of processes `pids` and their descendants so far."""
    total = 0
    for stat in _proc_files(pids, "stat"):
        fields = stat.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def rss_bytes(*pids: int) -> int:
    """Resident memory of processes `pids` and their descendants."""
    total = 0
    for status in _proc_files(pids, "status"):
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total
