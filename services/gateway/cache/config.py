"""Config section `cache:`: the in-flight join and result cache (idempotency.py, docs/reliability.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CacheConfig(BaseModel):
    """Which requests are the same (`idempotency`) and how many answers are kept, for how long."""

    model_config = ConfigDict(extra="forbid")

    idempotency: Literal["uid", "inputs", "off"] = Field(
        default="uid", description="Dedup/cache key: uid + inputs digest, inputs digest only, or off."
    )
    result_cache_size: int = Field(default=65536, ge=0, description="Cached ok results (LRU); 0 = none.")
    result_cache_ttl_s: float = Field(default=600.0, gt=0)
