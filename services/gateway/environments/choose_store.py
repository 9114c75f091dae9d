"""The session store over a state backend: in the process, or in Redis (the state server or `state_url`)."""

from __future__ import annotations

from rewardfleet.services.gateway.environments.memory_store import MemorySessionStore
from rewardfleet.services.gateway.environments.store_protocol import SessionStore
from rewardfleet.services.gateway.state_store.base import StateBackend


def session_store_for(backend: StateBackend) -> SessionStore:
    if backend.redis is None:
        return MemorySessionStore()
    from rewardfleet.services.gateway.environments.redis_store import RedisSessionStore  # only with Redis

    return RedisSessionStore(backend.redis)
