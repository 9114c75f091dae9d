"""`Sessions` over both stores (in the process, and a real redis-server as replicas share it): the token, the
tenant, the lock, the limits, expiry and the quota — the logic every protocol route relies on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from bench.harness.redis_server import RedisServer
from rewardfleet.services.gateway.environments.config import EnvironmentsConfig
from rewardfleet.services.gateway.environments.errors import (
    EnvironmentFailed,
    SessionLimitExceeded,
    SessionNotFound,
    SessionQuotaExceeded,
    TaskInvalid,
    ToolArgumentsInvalid,
    UnknownEnvironment,
    UnknownTool,
    VerifyBodyInvalid,
)
from rewardfleet.services.gateway.environments.loading import load_environments
from rewardfleet.services.gateway.environments.memory_store import MemorySessionStore
from rewardfleet.services.gateway.environments.metrics import SessionMetrics
from rewardfleet.services.gateway.environments.redis_store import RedisSessionStore
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.environments.store_protocol import SessionStore
from rewardfleet.services.gateway.errors import StateStoreUnavailable
from tests.support.state_store import make_backend

ENVS = Path(__file__).parent / "envs"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis"])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[list[SessionStore]]:
    """Two stores that see the same sessions: one in-process store twice, or two replicas' Redis stores."""
    if request.param == "memory":
        store = MemorySessionStore()
        yield [store, store]
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    prefix = f"envtest-{uuid.uuid4().hex[:8]}:"
    backends = [make_backend(server.url, prefix) for _ in range(2)]
    for backend in backends:
        await backend.start()
    try:
        yield [RedisSessionStore(backend.store) for backend in backends]
    finally:
        for backend in backends:
            await backend.close()


def make_sessions(store: SessionStore, clock: Clock, **config: float) -> Sessions:
    environments = load_environments("rewardfleet.reward_fns.environments", [ENVS])
    return Sessions(
        environments, store, SessionMetrics(CollectorRegistry()), EnvironmentsConfig(**config), clock=clock
    )


async def test_a_session_is_served_by_either_replica_and_keeps_its_state(stores: list[SessionStore]) -> None:
    clock = Clock()
    a, b = make_sessions(stores[0], clock), make_sessions(stores[1], clock)
    opened = await a.open("t1", "probe", {"start": 5})
    assert len(opened.token) == 43 and opened.token != opened.id
    assert (await b.call("t1", opened.token, "add", {"n": 2})).output["value"] == 7
    assert (await a.call("t1", opened.token, "add", {"n": 3})).output["value"] == 10
    verdict = await b.verify("t1", opened.token, {"expected": 10})
    assert verdict.reward == 1.0 and verdict.reward_components == {"value": 10.0}
    assert (await a.state("t1", opened.token))["tool_calls"] == 2
    await b.close("t1", opened.token)
    with pytest.raises(SessionNotFound):
        await a.call("t1", opened.token, "add", {"n": 1})
    assert await stores[0].open() == {}


async def test_another_tenants_token_is_the_same_404_as_an_unknown_one(stores: list[SessionStore]) -> None:
    sessions = make_sessions(stores[0], Clock())
    opened = await sessions.open("t1", "probe", {})
    for tenant, token in [
        ("t2", opened.token),
        ("t1", "A" * 43),
        ("t1", "not a token"),
        ("t1", "x" * 100_000),
    ]:
        with pytest.raises(SessionNotFound) as caught:
            await sessions.call(tenant, token, "add", {"n": 1})
        assert caught.value.body() == SessionNotFound().body()
    with pytest.raises(SessionNotFound):
        await sessions.close("t2", opened.token)
    with pytest.raises(SessionNotFound):
        await sessions.verify("t2", opened.token, {"expected": 0})
    assert (await sessions.state("t1", opened.token))["state"] == {"value": 0}  # untouched by the attempts


async def test_concurrent_calls_of_one_session_lose_no_update(stores: list[SessionStore]) -> None:
    clock = Clock()
    a, b = make_sessions(stores[0], clock), make_sessions(stores[1], clock)
    opened = await a.open("t", "probe", {})
    calls = [(a if i % 2 else b).call("t", opened.token, "add", {"n": 1}) for i in range(20)]
    await asyncio.gather(*calls)
    state = await a.state("t", opened.token)
    assert state["state"]["value"] == 20 and state["tool_calls"] == 20


async def test_bad_arguments_and_failures_leave_the_session_as_it_was(stores: list[SessionStore]) -> None:
    sessions = make_sessions(stores[0], Clock())
    opened = await sessions.open("t", "probe", {"start": 3})
    hostile = [
        {"n": "three"},
        {"n": 10**6},
        {"n": [1]},
        {"n": 1, "extra": True},
        {"m": 1},
    ]
    for arguments in hostile:
        with pytest.raises(ToolArgumentsInvalid) as caught:
            await sessions.call("t", opened.token, "add", arguments)
        assert caught.value.status_code == 422 and caught.value.fields[0]["loc"] in (["n"], ["extra"], ["m"])
    with pytest.raises(ToolArgumentsInvalid):
        await sessions.call("t", opened.token, "add", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(UnknownTool, match="tools: add"):
        await sessions.call("t", opened.token, "nope", {})
    outcome = await sessions.call("t", opened.token, "fail", {})
    assert outcome.is_error and outcome.output == "the tool says no"
    with pytest.raises(EnvironmentFailed, match="a bug in the environment"):
        await sessions.call("t", opened.token, "crash", {})
    with pytest.raises(EnvironmentFailed, match="JSON cannot hold"):
        await sessions.call("t", opened.token, "nan", {})
    with pytest.raises(SessionLimitExceeded) as limit:
        await sessions.call("t", opened.token, "grow", {"chars": 10_000})
    assert limit.value.limit == "state_bytes"
    state = await sessions.state("t", opened.token)
    assert state["state"] == {"value": 3}
    assert state["tool_calls"] == 1  # the ToolError is a call the agent made; nothing else counted
    with pytest.raises(VerifyBodyInvalid):
        await sessions.verify("t", opened.token, {"wrong": 1})


async def test_open_checks_the_environment_and_the_task(stores: list[SessionStore]) -> None:
    sessions = make_sessions(stores[0], Clock())
    with pytest.raises(UnknownEnvironment, match="example_session_state_mgmt"):
        await sessions.open("t", "nope", {})
    with pytest.raises(TaskInvalid) as caught:
        await sessions.open("t", "probe", {"start": "soon"})
    assert caught.value.fields[0]["loc"] == ["start"]
    assert await stores[0].open() == {}


async def test_tool_calls_and_wall_time_are_bounded(stores: list[SessionStore]) -> None:
    clock = Clock()
    sessions = make_sessions(stores[0], clock)
    opened = await sessions.open("t", "probe", {})
    for _ in range(200):
        await sessions.call("t", opened.token, "add", {"n": 1})
    with pytest.raises(SessionLimitExceeded) as caught:
        await sessions.call("t", opened.token, "add", {"n": 1})
    assert caught.value.limit == "tool_calls" and caught.value.status_code == 409
    second = await sessions.open("t", "probe", {})
    clock.now += 601
    with pytest.raises(SessionLimitExceeded) as late:
        await sessions.call("t", second.token, "add", {"n": 1})
    assert late.value.limit == "wall_time_s"
    assert (await sessions.verify("t", second.token, {"expected": 0})).reward == 1.0  # verify still answers


async def test_expiry_frees_the_session_and_counts_it(stores: list[SessionStore]) -> None:
    clock = Clock()
    sessions = make_sessions(stores[0], clock)
    kept = await sessions.open("t", "probe", {})
    gone = [await sessions.open("t", "ephemeral", {}) for _ in range(3)]
    assert await stores[0].open() == {("probe", "t"): 1, ("ephemeral", "t"): 3}
    clock.now += 0.2
    await sessions.call("t", gone[0].token, "add", {"n": 1})  # a call refreshes its ttl
    clock.now += 0.2
    assert await sessions.reap() == 2
    clock.now += 0.2
    assert await sessions.reap() == 1
    for opened in gone:
        with pytest.raises(SessionNotFound):
            await sessions.state("t", opened.token)
    assert await stores[0].open() == {("probe", "t"): 1}
    assert sessions.metrics.expired.labels("ephemeral", "t")._value.get() == 3
    assert sessions.metrics.open.labels("ephemeral", "t")._value.get() == 0
    assert (await sessions.state("t", kept.token))["state"] == {"value": 0}


async def test_sessions_open_quota_holds_under_a_flood(stores: list[SessionStore]) -> None:
    clock = Clock()
    a, b = make_sessions(stores[0], clock), make_sessions(stores[1], clock)
    refused: list[str] = []
    for sessions in (a, b):
        sessions.quota = lambda tenant: 5 if tenant == "small" else None
        sessions.on_refused = refused.append
    results = await asyncio.gather(
        *[(a if i % 2 else b).open("small", "probe", {}) for i in range(30)], return_exceptions=True
    )
    opened = [r for r in results if not isinstance(r, BaseException)]
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(opened) == 5 and len(errors) == 25
    assert all(isinstance(e, SessionQuotaExceeded) and e.details["quota"] == "sessions_open" for e in errors)
    assert len(refused) == 25
    await a.open("other", "probe", {})  # another tenant is not held back
    await b.close("small", opened[0].token)
    await a.open("small", "probe", {})  # a closed session frees its place


async def test_stopping_closes_the_sessions_only_this_process_holds(stores: list[SessionStore]) -> None:
    sessions = make_sessions(stores[0], Clock())
    closing = type(sessions.environment("closing"))
    closing.closed.clear()  # type: ignore[attr-defined]
    opened = [await sessions.open("t", "closing", {}) for _ in range(3)]
    await sessions.close("t", opened[0].token)
    sessions.start()
    await sessions.stop()
    if stores[0].volatile:  # in the process: nobody else could serve them, so they are closed and freed
        assert sorted(closing.closed) == sorted(o.id for o in opened)  # type: ignore[attr-defined]
        assert await stores[0].open() == {}
    else:  # in Redis: another process or replica serves them on
        assert closing.closed == [opened[0].id]  # type: ignore[attr-defined]
        assert await stores[1].open() == {("closing", "t"): 2}


async def test_a_lost_redis_is_a_typed_503_never_a_lost_or_silent_call(tmp_path: Path) -> None:
    server = RedisServer(tmp_path).start()
    backend = make_backend(server.url, "lost:")
    await backend.start()
    try:
        sessions = make_sessions(RedisSessionStore(backend.store), Clock())
        opened = await sessions.open("t", "probe", {})
        server.kill()
        with pytest.raises(StateStoreUnavailable) as caught:
            await sessions.call("t", opened.token, "add", {"n": 1})
        assert caught.value.status_code == 503
        with pytest.raises(StateStoreUnavailable):
            await sessions.open("t", "probe", {})
    finally:
        await backend.close()
        server.stop()


async def test_reset_starts_the_same_token_over_and_a_refused_task_keeps_the_episode(
    stores: list[SessionStore],
) -> None:
    clock = Clock()
    a, b = make_sessions(stores[0], clock), make_sessions(stores[1], clock)
    opened = await a.open("t", "probe", {"start": 3})
    await a.call("t", opened.token, "add", {"n": 2})
    clock.now += 5
    assert await b.reset("t", opened.token, {"start": 10}) == opened.id
    assert await a.state("t", opened.token) == {
        "id": opened.id,
        "env": "probe",
        "tool_calls": 0,
        "state": {"value": 10},
    }
    with pytest.raises(TaskInvalid):
        await a.reset("t", opened.token, {"start": "many"})
    with pytest.raises(SessionNotFound):
        await b.reset("other tenant", opened.token, {"start": 0})
    assert (await b.call("t", opened.token, "add", {"n": 1})).output["value"] == 11
    assert sum((await stores[0].open()).values()) == 1  # still the one session
    await a.close("t", opened.token)
    with pytest.raises(SessionNotFound):
        await b.reset("t", opened.token, {})
