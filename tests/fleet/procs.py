"""Process-tree helpers for fleet tests: which processes descend from a pid, and are they gone."""

from __future__ import annotations

import contextlib
from pathlib import Path

from bench.harness.waiting import eventually


def _ppids() -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name in parentheses may hold spaces; fields after it are fixed.
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":  # zombies are already dead, only waiting to be reaped
            out[int(entry.name)] = int(fields[1])
    return out


def descendants(pid: int) -> set[int]:
    ppids = _ppids()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in ppids.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    ppids = _ppids()
    return {p for p in pids if p in ppids}


def wait_gone(pids: set[int], timeout_s: float) -> set[int]:
    """Those of `pids` still alive once all are gone or `timeout_s` has passed (the caller asserts on it)."""
    with contextlib.suppress(AssertionError):
        eventually(lambda: not alive(pids), timeout_s=timeout_s, interval_s=0.2, what="the processes gone")
    return alive(pids)


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


__all__ = ["alive", "cmdline", "descendants", "wait_gone"]
