"""Building blocks for the store tests: requests, results, a function identity and a counting compute."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rewardfleet.services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult, Timings

T = TypeVar("T")


def renewals(backend: Any, op: str) -> float:
    """How many renewals the store sent and Redis answered (the op's latency histogram count)."""
    value = backend.metrics.registry.get_sample_value(
        "rewardfleet_state_store_duration_seconds_count", {"op": op}
    )
    return value or 0.0


def record_calls(store: Any) -> list[str]:
    """The names of the Redis operations `store.call` has answered, in order (a wrapper on the instance)."""
    seen: list[str] = []
    call = store.call

    async def recording(op: str, pending: Awaitable[T]) -> T:
        answer: T = await call(op, pending)
        seen.append(op)
        return answer

    store.call = recording
    return seen


def request(uid: str | int | None = "u1", solution: str = "42", **more: Any) -> ScoreRequest:
    return ScoreRequest(data_source="test", solution_str=solution, ground_truth="42", uid=uid, **more)


def result(req: ScoreRequest, score: float | None, status: str = "ok", **extra: Any) -> ScoreResult:
    error = None if status == "ok" else ErrorInfo(type="Boom", message="failed")
    return ScoreResult(
        uid=req.uid,
        score=score,
        extra=dict(extra),
        reward_fn="judge",
        data_source=req.data_source,
        status=status,  # type: ignore[arg-type]
        error=error,
        timings=Timings(compute_s=0.0, total_s=0.0),
    )


@dataclass
class CountingCompute:
    """A compute that counts its runs, can be held open by `gate`, and scores len(solution_str)."""

    runs: int = 0
    status: str = "ok"
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.gate.set()

    def bind(self, req: ScoreRequest) -> Any:
        async def compute() -> ScoreResult:
            self.runs += 1
            self.started.set()
            await self.gate.wait()
            return result(req, float(len(req.solution_str)), self.status)

        return compute
