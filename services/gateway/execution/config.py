"""Config sections `sync_pool:` (the process pool that runs sync functions) and `loading:` (what is loaded).

Their keys were once flat at the top of the gateway config; that spelling still works (config/sections.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


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


class LoadingConfig(BaseModel):
    """Where the reward functions come from (loader.py), what a load error does, and the reward model's
    tokenizer (tokenizer.py), all loaded once at start-up."""

    model_config = ConfigDict(extra="forbid")

    builtin_package: str | None = Field(
        default="rewardfleet.reward_fns",
        description="Package whose modules are the built-in functions (loaded first); null = none.",
    )
    reward_fns_dirs: list[Path] = Field(
        default_factory=list, description="User folders of reward-function files, loaded after the built-ins."
    )
    on_load_error: Literal["fail", "skip"] = "fail"
    reward_model_tokenizer: str | None = Field(default=None, description="HF tokenizer path, loaded once.")

    @field_validator("reward_fns_dirs")
    @classmethod
    def _dirs_exist(cls, value: list[Path]) -> list[Path]:
        for path in value:
            if not path.is_dir():
                raise ValueError(f"reward_fns_dirs: {str(path)!r} is not a directory")
        return [path.resolve() for path in value]
