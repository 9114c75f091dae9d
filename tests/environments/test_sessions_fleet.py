"""Sessions are the fleet's: over real uvicorn, a session opened on one gateway process (`--processes 2`, its
own state server) or replica (two gateways on one real redis-server) is served and verified on the other;
a tenant never reaches another's session (the same 404 as an unknown one); a flood of session creations stops
at the tenant's `sessions_open` quota with 429 naming it; expiry and close free the state in Redis.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import httpx
import pytest
import redis

from bench.harness.redis_server import RedisServer
from bench.harness.waiting import eventually
from tests.environments.gateways import gateway, metric

ALPHA, BETA = "alpha-key-0123456789abcdef", "beta-key-0123456789abcdef0"


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def post(url: str, path: str, body: dict[str, object], key: str | None = None) -> httpx.Response:
    # a fresh connection each time: with --processes, the kernel picks the process per connection
    return httpx.post(f"{url}{path}", json=body, headers=auth(key) if key else None, timeout=30)


def test_a_session_is_served_by_both_processes(tmp_path: Path) -> None:
    with gateway(tmp_path, {}, "--processes", "2") as url:
        token = post(url, "/sessions/open", {"env": "probe", "task": {"start": 0}}).json()["token"]
        pids: set[int] = set()
        calls = 0
        while len(pids) < 2 and calls < 60:  # bounded: the kernel spreads new connections over both
            calls += 1
            answer = post(url, "/sessions/call", {"token": token, "tool": "add", "arguments": {"n": 1}})
            assert answer.status_code == 200, answer.text
            output = answer.json()["output"]
            assert output["value"] == calls  # every process sees every earlier call's update
            pids.add(output["pid"])
        assert len(pids) == 2, f"{calls} calls all served by one process"
        verdict = post(url, "/sessions/verify", {"token": token, "body": {"expected": calls}}).json()
        assert verdict["reward"] == 1.0
        assert post(url, "/sessions/close", {"token": token}).status_code == 200
        # the fleet-wide gauge: each process re-reads it from the store at its next sweep (0.2 s here)
        eventually(
            lambda: (
                metric(url, "rewardfleet_environment_sessions_open", environment="probe", tenant="none") == 0
            ),
            timeout_s=20,
            interval_s=0.1,
            what="the open gauge back to 0 in both processes",
        )


@pytest.fixture(scope="module")
def two_gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[str], redis.Redis]]:
    """Two gateways sharing one redis-server (tenants alpha, with sessions_open 3, and beta); and a client of
    that Redis to count what is left in it."""
    tmp = tmp_path_factory.mktemp("replicas")
    server = RedisServer(tmp).start()
    config = {
        "state": {"state_url": server.url, "state_key_prefix": "envfleet:"},
        "nemo_gym": {"servers": {"counter": {"environment": "example_session_state_mgmt"}}},
        "tenants": {
            "alpha": {"api_keys": [ALPHA], "quotas": {"sessions_open": 3}},
            "beta": {"api_keys": [BETA], "admin": True},  # admin: may read /metrics
        },
    }
    try:
        with gateway(tmp, config, name="a") as a, gateway(tmp, config, name="b") as b:
            client = redis.Redis.from_url(server.url)
            try:
                yield [a, b], client
            finally:
                client.close()
    finally:
        server.stop()


def session_keys(client: redis.Redis) -> list[bytes]:
    return list(client.scan_iter("envfleet:env:s:*"))


def test_a_session_opened_on_one_replica_is_served_and_verified_on_the_other(
    two_gateways: tuple[list[str], redis.Redis],
) -> None:
    (a, b), client = two_gateways
    token = post(a, "/sessions/open", {"env": "probe", "task": {"start": 1}}, BETA).json()["token"]
    assert (
        post(b, "/sessions/call", {"token": token, "tool": "add", "arguments": {"n": 2}}, BETA).json()[
            "output"
        ]["value"]
        == 3
    )
    assert (
        post(a, "/sessions/call", {"token": token, "tool": "add", "arguments": {"n": 4}}, BETA).json()[
            "output"
        ]["value"]
        == 7
    )
    assert (
        post(b, "/sessions/verify", {"token": token, "body": {"expected": 7}}, BETA).json()["reward"] == 1.0
    )
    assert token.encode() not in b"".join(client.hget(k, "d") or b"" for k in session_keys(client))  # hashed
    assert post(a, "/sessions/close", {"token": token}, BETA).status_code == 200
    assert post(b, "/sessions/state", {"token": token}, BETA).status_code == 404
    assert session_keys(client) == []


async def test_nemo_gym_rollout_across_replicas_through_a_path_key(
    two_gateways: tuple[list[str], redis.Redis],
) -> None:
    """NeMo Gym's agents send no headers: with tenants they carry the key in the path (`/k/<key>/...`)."""
    (a, b), _ = two_gateways
    prefix = f"/k/{BETA}/nemo_gym/counter"
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        async with http.post(f"{a}{prefix}/seed_session", json={"initial_count": 2}) as resp:
            assert resp.status == 200, await resp.text()
            cookies = resp.cookies
        async with http.post(f"{b}{prefix}/increment_counter", json={"count": 5}, cookies=cookies) as resp:
            assert await resp.json() == {"success": True}
            cookies = resp.cookies
        async with http.post(f"{a}{prefix}/verify", json={"expected_count": 7}, cookies=cookies) as resp:
            assert (await resp.json())["reward"] == 1.0
        async with http.post(
            f"{b}/k/{ALPHA}/nemo_gym/counter/get_counter_value", json={}, cookies=cookies
        ) as resp:
            assert resp.status == 404  # the same cookie, another tenant's key


def test_a_tenant_cannot_reach_another_tenants_session(two_gateways: tuple[list[str], redis.Redis]) -> None:
    (a, b), _ = two_gateways
    token = post(a, "/sessions/open", {"env": "probe", "task": {"start": 1}}, BETA).json()["token"]
    unknown = post(b, "/sessions/state", {"token": "A" * 43}, ALPHA)
    assert unknown.status_code == 404
    for path, body in [
        ("/sessions/state", {"token": token}),
        ("/sessions/call", {"token": token, "tool": "add", "arguments": {"n": 100}}),
        ("/sessions/verify", {"token": token, "body": {"expected": 1}}),
        ("/sessions/close", {"token": token}),
    ]:
        answer = post(b, path, body, ALPHA)
        assert (answer.status_code, answer.json()) == (404, unknown.json()), path
    assert post(a, "/sessions/state", {"token": token}, BETA).json()["state"] == {"value": 1}
    assert post(a, "/sessions/close", {"token": token}, BETA).status_code == 200


async def test_a_flood_of_sessions_stops_at_the_tenants_quota(
    two_gateways: tuple[list[str], redis.Redis],
) -> None:
    (a, b), _ = two_gateways
    async with httpx.AsyncClient(headers=auth(ALPHA), timeout=30) as http:
        answers = await asyncio.gather(
            *[http.post(f"{(a, b)[i % 2]}/sessions/open", json={"env": "probe"}) for i in range(24)]
        )
    opened = [r.json()["token"] for r in answers if r.status_code == 200]
    refused = [r for r in answers if r.status_code == 429]
    assert len(opened) == 3 and len(refused) == 21
    error = refused[0].json()["error"]
    assert error["type"] == "SessionQuotaExceeded" and error["quota"] == "sessions_open"
    assert "sessions_open" in error["message"] and refused[0].headers["retry-after"]
    refusals = sum(
        metric(u, "rewardfleet_tenant_quota_refusals_total", BETA, tenant="alpha", quota="sessions_open")
        for u in (a, b)
    )
    assert refusals == 21
    assert post(a, "/sessions/open", {"env": "probe"}, BETA).status_code == 200  # beta is not held back
    for token in opened:
        assert post(b, "/sessions/close", {"token": token}, ALPHA).status_code == 200
    assert post(a, "/sessions/open", {"env": "probe"}, ALPHA).status_code == 200  # closing freed the quota


def test_expiry_frees_the_state_in_redis(two_gateways: tuple[list[str], redis.Redis]) -> None:
    (a, b), client = two_gateways
    before = set(session_keys(client))
    for url in (a, b):
        assert post(url, "/sessions/open", {"env": "ephemeral"}, BETA).status_code == 200
    assert len(set(session_keys(client)) - before) == 2

    def freed() -> bool:
        return not (set(session_keys(client)) - before)

    eventually(freed, timeout_s=20, interval_s=0.1, what="the expired sessions' keys gone from Redis")
    assert not client.zrangebyscore("envfleet:env:exp", "-inf", "+inf")[len(before) :]
