"""A local sandbox's record on disk (`<root>/<id>/sandbox.json`): what any process of the host needs to
attach to it, and what the reaper needs to decide it is abandoned (its owner process and deadline).

The owner is a process named by pid and its start time (field 22 of /proc/PID/stat), so a recycled pid
is not taken for the owner.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

RECORD = "sandbox.json"


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, None when there is no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(data.rsplit(")", 1)[1].split()[19])


@dataclass(frozen=True)
class SandboxRecord:
    """What is written at create and read by attach and reap."""

    id: str
    image: str
    lower: str
    workdir: str
    env: dict[str, str]
    network: bool
    cpus: float
    memory_mb: int
    disk_mb: int
    pids: int
    owner: str
    owner_pid: int
    owner_start: int
    deadline: float  # wall-clock (time.time()) seconds
    created: float = field(default_factory=time.time)

    def write(self, folder: Path) -> None:
        tmp = folder / f".{RECORD}.tmp"
        tmp.write_text(json.dumps(asdict(self)))
        os.replace(tmp, folder / RECORD)

    @classmethod
    def read(cls, folder: Path) -> SandboxRecord:
        return cls(**json.loads((folder / RECORD).read_text()))

    def abandoned(self, now: float) -> str | None:
        """Why the reaper should stop it ("ttl", "owner gone"), or None."""
        if now >= self.deadline:
            return "ttl"
        if process_start_ticks(self.owner_pid) != self.owner_start:
            return "owner gone"
        return None
