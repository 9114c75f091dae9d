"""The job board of a background job for a state backend: this process alone, or shared in Redis."""

from __future__ import annotations

from rewardfleet.services.gateway.monitors.jobs import JobBoard, MemoryJobBoard
from rewardfleet.services.gateway.state_store.base import StateBackend


def job_board_for(backend: StateBackend, name: str) -> JobBoard:
    if backend.redis is None:
        return MemoryJobBoard()
    from rewardfleet.services.gateway.monitors.redis_jobs import RedisJobBoard  # only with a Redis backend

    return RedisJobBoard(backend.redis, name, backend.lease_s)
