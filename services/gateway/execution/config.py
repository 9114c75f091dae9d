"""Config section `sync_pool:`: the process pool that runs sync reward functions (pool.py, isolation.py)."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field


class SyncPoolConfig(BaseModel):
    """How many worker processes, how much memory each may take, and whether calls share pool tasks."""

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, description="Sync process pool.")
    worker_memory_limit_bytes: int | None = Field(
        default=None, ge=64 * 1024 * 1024, description="RLIMIT_AS of each sync worker process."
    )
    pool_chunking: bool = Field(
        default=True,
        description="Sync calls of one function submitted together share pool tasks (execution/pool.py).",
    )
