"""State-store test plumbing: one real redis-server for the session; each test gets its own key prefix, so
tests share the server without sharing state. "Replicas" are separate backends with their own connections."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.state_store.metrics import StateStoreMetrics
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from rewardfleet.services.gateway.state_store.redis_client import RedisSettings
from tests.gateway.state_store.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


def make_backend(url: str, prefix: str, poll_s: float = 0.5, lease_s: float = 10.0) -> RedisBackend:
    settings = RedisSettings(
        url=url, key_prefix=prefix, poll_s=poll_s, connect_timeout_s=1.0, op_timeout_s=2.0
    )
    metrics = GatewayMetrics(CollectorRegistry())
    return RedisBackend(settings, metrics, StateStoreMetrics(metrics.registry), lease_s=lease_s)


@pytest.fixture
async def replicas(redis_server: RedisServer) -> AsyncIterator[list[RedisBackend]]:
    """Three started backends on one Redis, as three gateway replicas would have."""
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    backends = [make_backend(redis_server.url, prefix) for _ in range(3)]
    for backend in backends:
        await backend.start()
    try:
        yield backends
    finally:
        for backend in backends:
            await backend.close()


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path
