"""Client strings are never cache keys (issue 23): the result cache, the dispatcher's memo and the group
tables key by digests, in-process and in Redis (a real redis-server), so what they hold per entry is the same
size whatever a client sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis.asyncio as redis

from bench.harness.redis_server import RedisServer
from rewardfleet.services.gateway.cache.choose_store import results_for
from rewardfleet.services.gateway.core.dispatch import Dispatcher
from rewardfleet.services.gateway.groups.choose_store import group_scorer_for
from rewardfleet.services.gateway.groups.config import GroupsConfig
from rewardfleet.services.gateway.groups.scorer import GroupScorer, load_group_functions
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult
from rewardfleet.services.gateway.state_store.memory import MemoryBackend
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend
from tests.gateway.state_store.helpers import CountingCompute, request, result
from tests.gateway.units import async_function
from tests.support.state_store import make_backend

UID = "uid-" + "U" * 200
GROUP_ID = "gid-" + "G" * 200
DATA_SOURCE = "ds-" + "D" * 200
GROUP_FNS = load_group_functions(GroupsConfig())


class LengthScorer:
    async def score(self, req: ScoreRequest, fn: Any, label: str) -> ScoreResult:
        return result(req, float(len(req.solution_str)))


def _members() -> list[ScoreRequest]:
    return [
        request(uid=UID, solution="a" * (i + 1), group_id=GROUP_ID, group_size=2, group_index=i)
        for i in range(2)
    ]


async def _fill(results: Any, groups: Any) -> None:
    """One cached result for a long uid, and one finished group with a long group_id."""
    req = request(uid=UID)
    key = results.key(req, "judge", "v1")
    await results.run(key, req, CountingCompute().bind(req))
    answers = await asyncio.gather(*(groups.submit(m, None, "test", GROUP_FNS) for m in _members()))
    assert [a.status for a in answers] == ["ok", "ok"]


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def backend(redis_server: RedisServer) -> AsyncIterator[RedisBackend]:
    store = make_backend(redis_server.url, "keys-test:")
    await store.start()
    try:
        yield store
    finally:
        await store.close()


async def test_redis_keys_hold_digests_not_client_strings(
    backend: RedisBackend, redis_server: RedisServer
) -> None:
    await _fill(
        results_for(backend, "uid", 100, 60), group_scorer_for(backend, GroupsConfig(), LengthScorer())
    )
    client = redis.from_url(redis_server.url)
    try:
        keys = [key.decode() async for key in client.scan_iter(match="keys-test:*")]
    finally:
        await client.aclose()
    assert any(":r:" in k for k in keys) and any(":g:" in k for k in keys), keys
    for key in keys:
        assert "UUUU" not in key and "GGGG" not in key, key
        assert len(key) < 120, key


async def test_in_process_tables_key_by_digests() -> None:
    backend = MemoryBackend(GatewayMetrics())
    results = results_for(backend, "uid", 100, 60)
    groups = group_scorer_for(backend, GroupsConfig(), LengthScorer())
    await _fill(results, groups)
    (cache_key,) = results.cache._data  # type: ignore[attr-defined]
    assert "UUUU" not in repr(cache_key) and len(repr(cache_key)) < 120, cache_key
    assert isinstance(groups, GroupScorer)
    (group_key,) = groups.store._done  # type: ignore[attr-defined]
    assert isinstance(group_key, str) and len(group_key) == 32 and "GGGG" not in group_key, group_key
    int(group_key, 16)  # a hex digest, not the client's string


def test_dispatcher_memo_keys_by_digest() -> None:
    async def fn(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any) -> float:
        return 1.0

    dispatcher = Dispatcher({"f": async_function("f", fn)}, {}, "f")
    for i in range(50):
        assert dispatcher.resolve(None, f"{DATA_SOURCE}-{i}")[0].name == "f"
    assert len(dispatcher._memo) == 50
    assert all(isinstance(k, bytes) and len(k) == 16 for k in dispatcher._memo)
