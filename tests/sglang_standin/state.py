"""The stand-in's configuration (from its command line, changeable at run time) and its counters."""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import Depends, Request

Mode = Literal["judge", "reward", "encoder"]
GENERATION_MODES: tuple[Mode, ...] = ("judge",)
EMBEDDING_MODES: tuple[Mode, ...] = ("reward", "encoder")
DEFAULT_CANNED_TEXT = "The answer is correct. \\boxed{1}"
# The routes that count as served work (probes and the stand-in's own routes are not counted).
WORK_ROUTES = (
    "/generate",
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/score",
    "/v1/embeddings",
    "/v1/classify",
    "/classify",
    "/encode",
)


@dataclass
class StandinConfig:
    mode: Mode = "judge"
    replica_id: str = "0"
    canned_text: str = DEFAULT_CANNED_TEXT
    model_path: str = ""
    fail_rate: float = 0.0
    fail_status: int = 503
    startup_delay_s: float = 0.0
    delay_ms: float = 0.0
    dim: int = 64
    seed: int = 0
    port: int = 30000
    health_delay_s: float = 1.0

    def served_model_name(self) -> str:
        return self.model_path or f"standin-{self.mode}"


@dataclass
class StandinState:
    config: StandinConfig
    started_at: float = field(default_factory=time.monotonic)
    healthy: bool = True
    served: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    abandoned: Counter[str] = field(default_factory=Counter)  # client went away during the delay
    last_body: dict[str, Any] = field(default_factory=dict)  # route -> the last JSON body received
    rng: random.Random = field(default_factory=random.Random)

    @property
    def total_served(self) -> int:
        return sum(self.served.values())

    def ready(self) -> bool:
        return self.healthy and time.monotonic() - self.started_at >= self.config.startup_delay_s

    def headers(self) -> dict[str, str]:
        return {"x-standin-replica": self.config.replica_id, "x-standin-served": str(self.total_served)}

    def stats(self) -> dict[str, Any]:
        return {
            "replica_id": self.config.replica_id,
            "mode": self.config.mode,
            "served": dict(self.served),
            "failed": dict(self.failed),
            "abandoned": dict(self.abandoned),
            "total": self.total_served,
            "healthy": self.healthy,
            "last_body": self.last_body,
        }


def _state(request: Request) -> StandinState:
    state: StandinState = request.app.state.standin
    return state


StateDep = Annotated[StandinState, Depends(_state)]
