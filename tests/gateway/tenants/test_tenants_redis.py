"""Tenants across two gateway replicas on one real redis-server (`state_url`): a tenant's cached results and
groups are its own on every replica, and its quotas (requests per minute, samples in flight, spend) are
counted once for the fleet."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from bench.harness.redis_server import RedisServer
from bench.harness.tenants import KEY_A, KEY_B, auth
from bench.harness.waiting import eventually_async
from tests.gateway.tenants.helpers import (
    KEY_C,
    KEY_D,
    gateway,
    same_minute,
    sample,
    tenant_config,
)


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, RedisServer]]:
    tmp = tmp_path_factory.mktemp("tenants-redis")
    server = RedisServer(tmp).start()
    config = tenant_config(tmp)
    config["tenants"]["b"]["quotas"] = {"samples_in_flight": 2}
    for name, key in (("c", KEY_C), ("d", KEY_D)):  # requests_per_minute is counted on c's (or d's) own
        config["tenants"][name] = {"api_keys": [key], "quotas": {"requests_per_minute": 6}}
    config["tenants"]["a"]["quotas"]["samples_in_flight"] = 2
    try:
        with gateway(tmp, config, server.url, "r1") as one, gateway(tmp, config, server.url, "r2") as two:
            yield one, two, server
    finally:
        server.stop()


def post(base: str, key: str, body: dict) -> httpx.Response:
    return httpx.post(base + "/score", json=body, headers=auth(key), timeout=30)


def test_cache_is_per_tenant_across_replicas(replicas: tuple[str, str, RedisServer]) -> None:
    one, two, _ = replicas
    body = sample(uid="fleet-uid")
    a1 = post(one, KEY_A, body).json()
    a2 = post(two, KEY_A, body).json()  # the other replica answers a from a's cached result
    b2 = post(two, KEY_B, body).json()
    assert a2["cached"] is True and a2["extra"]["call_id"] == a1["extra"]["call_id"]
    assert b2["cached"] is False and b2["extra"]["call_id"] != a1["extra"]["call_id"]


def test_groups_are_per_tenant_across_replicas(replicas: tuple[str, str, RedisServer]) -> None:
    one, two, _ = replicas

    def member(index: int) -> dict:
        return sample(group_id="fleet-group", group_size=2, group_index=index, uid=f"m{index}")

    async def run() -> list[dict]:
        async with httpx.AsyncClient(timeout=30) as client:
            first = [
                asyncio.create_task(client.post(one + "/score", json=member(0), headers=auth(KEY_A))),
                asyncio.create_task(client.post(two + "/score", json=member(1), headers=auth(KEY_B))),
            ]
            for url, key in ((one, KEY_A), (two, KEY_B)):  # until the replicas hold both members

                async def held(url: str = url, key: str = key) -> bool:
                    usage = (await client.get(url + "/tenants/self", headers=auth(key))).json()["usage"]
                    return usage["samples_in_flight"] == 1

                await eventually_async(held, what=f"{key}'s member in flight")
            await asyncio.sleep(0.5)  # a window in which neither group may complete: the behaviour tested
            assert not any(t.done() for t in first)
            rest = [
                client.post(two + "/score", json=member(1), headers=auth(KEY_A)),
                client.post(one + "/score", json=member(0), headers=auth(KEY_B)),
            ]
            return [r.json() for r in await asyncio.gather(*first, *rest)]

    for result in asyncio.run(run()):
        assert result["status"] == "ok" and result["extra"]["group"]["received"] == 2, result


def test_quotas_are_fleet_wide(replicas: tuple[str, str, RedisServer]) -> None:
    one, two, _ = replicas

    def attempt(key: str) -> tuple[list[int], httpx.Response, dict]:
        # requests_per_minute 6: 6 requests spread over both replicas, then 429s on either
        codes = [post(one if i % 2 else two, key, sample()).status_code for i in range(8)]
        resp = post(one, key, sample())
        return codes, resp, httpx.get(two + "/tenants/self", headers=auth(key), timeout=10).json()

    codes, resp, mine = same_minute(attempt, [KEY_C, KEY_D])
    assert codes == [200] * 6 + [429] * 2
    assert resp.status_code == 429 and resp.json()["error"]["quota"] == "requests_per_minute"
    assert mine["usage"]["requests_this_minute"] == 6  # the fleet's count, read on either replica


def test_samples_in_flight_are_counted_fleet_wide(replicas: tuple[str, str, RedisServer]) -> None:
    one, two, _ = replicas
    slow = sample(extra_info={"delay_s": 1.0})

    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            held = [
                asyncio.create_task(client.post(url + "/score", json=slow, headers=auth(KEY_A)))
                for url in (one, two)
            ]

            async def both_held() -> bool:  # both replicas hold one of a's samples
                usage = (await client.get(one + "/tenants/self", headers=auth(KEY_A))).json()["usage"]
                return usage["samples_in_flight"] == 2

            await eventually_async(both_held, what="a's two samples in flight")
            over = [
                await client.post(url + "/score", json=sample(), headers=auth(KEY_A)) for url in (one, two)
            ]
            return [*(await asyncio.gather(*held)), *over]

    first, second, over_one, over_two = asyncio.run(run())
    assert first.status_code == second.status_code == 200
    for refused in (over_one, over_two):  # the third sample is refused on either replica
        assert refused.status_code == 429 and refused.json()["error"]["quota"] == "samples_in_flight"
    assert post(two, KEY_A, sample()).status_code == 200  # released once answered


def test_spend_is_fleet_wide(replicas: tuple[str, str, RedisServer]) -> None:
    one, two, _ = replicas
    judge = sample(reward_fn="judge")
    codes = [post(one if i % 2 else two, KEY_A, judge).status_code for i in range(4)]
    assert codes == [200, 200, 200, 429]  # $1 a call; a's usd_total 2.5 holds across both replicas
    usage = httpx.get(one + "/tenants/self", headers=auth(KEY_A), timeout=10).json()["usage"]
    assert usage["usd_total"] == pytest.approx(3.0)


def test_tenant_keys_are_namespaced(replicas: tuple[str, str, RedisServer]) -> None:
    import redis

    _, _, server = replicas
    client = redis.Redis(host="127.0.0.1", port=server.port)
    keys = [k.decode() for k in client.scan_iter("rewardfleet:*")]
    results = [k for k in keys if k.startswith("rewardfleet:r:{")]
    assert results and all(k.startswith("rewardfleet:r:{t:") for k in results), results
    assert any(k.startswith("rewardfleet:t:a:usd") for k in keys)
