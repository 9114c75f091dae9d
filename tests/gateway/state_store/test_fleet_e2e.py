"""End to end: three gateway processes sharing a real redis-server, behind a real round-robin HAProxy.

GRPO groups spread over the replicas equal a single-replica run; a uid retried through the balancer runs
once (while in flight and after); a fleet-wide RPM budget holds with three replicas; Redis killed mid-load
and restarted: refused requests are 503 StateStoreUnavailable, retried, and every sample is answered once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.redis_server import RedisServer
from bench.harness.waiting import eventually, eventually_async
from tests.gateway.state_store.fleet import Fleet, runs_by_uid


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fleet")


@pytest.fixture(scope="module")
def redis_for_fleet(workdir: Path) -> Iterator[RedisServer]:
    server = RedisServer(workdir).start()
    try:
        yield server
    finally:
        server.stop()


def fleet_config(tmp: Path) -> dict[str, Any]:
    """`stamped` unlimited; the same file as `rated`, 60 requests/minute. Each logs its runs."""
    return {
        "functions": {
            "stamped": {"reward_kwargs": {"log_path": str(tmp / "runs.log")}},
            "rated": {
                "path": f"{tmp / 'fns' / 'stamped.py'}:compute_score",
                "requests_per_minute": 60,
                "reward_kwargs": {"log_path": str(tmp / "rated.log")},
            },
        }
    }


@pytest.fixture(scope="module")
def fleet(workdir: Path, redis_for_fleet: RedisServer) -> Iterator[Fleet]:
    """One fleet for the module (starting three gateways is the slow part); the Redis-kill test runs last."""
    fleet = Fleet(workdir, redis_for_fleet, fleet_config(workdir))
    try:
        yield fleet.start(3)
    finally:
        fleet.stop()


def sample(uid: str, solution: str, **more: Any) -> dict[str, Any]:
    return {
        "data_source": "x",
        "reward_fn": "stamped",
        "solution_str": solution,
        "ground_truth": "",
        "uid": uid,
        **more,
    }


def groups(n_groups: int, size: int = 8) -> list[dict[str, Any]]:
    return [
        sample(
            f"p{g}",
            "y" * ((g * 3 + i * 5) % 11 + 1),
            group_id=f"grp-{g}",
            group_size=size,
            group_index=i,
            group_fn="rank_normalise" if g % 2 else None,
        )
        for g in range(n_groups)
        for i in range(size)
    ]


async def post_all(url: str, bodies: list[dict[str, Any]], retry_503: bool = False) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:

        async def post(body: dict[str, Any]) -> httpx.Response:
            for _ in range(200):
                resp = await client.post("/score", json=body)
                if not (retry_503 and resp.status_code == 503):
                    return resp
                await asyncio.sleep(0.1)  # the trainer's back-off before it retries a 503 (the behaviour)
            return resp

        return list(await asyncio.gather(*(post(b) for b in bodies)))


def answers(responses: list[httpx.Response]) -> list[tuple[Any, ...]]:
    out = []
    for resp in responses:
        assert resp.status_code == 200, resp.text
        body = resp.json()
        out.append(
            (body["score"], body["status"], body["extra"].get("sample_score"), body["extra"].get("group"))
        )
    return out


def test_groups_of_8_spread_over_three_replicas_equal_one_replica(fleet: Fleet, tmp_path: Path) -> None:
    bodies = groups(6)
    spread = asyncio.run(post_all(fleet.url, bodies))
    (tmp_path / "single").mkdir()
    single = Fleet(tmp_path / "single", None, fleet_config(tmp_path / "single"))
    try:
        alone = asyncio.run(post_all(single.start(1).url, bodies))
    finally:
        single.stop()
    assert answers(spread) == answers(alone)
    assert all(status == "ok" for _, status, _, _ in answers(spread))
    # every member went through the balancer: members of one group were answered by different replicas
    assert fleet.metric('rewardfleet_gateway_requests_total{route="/score",status="200"}') >= len(bodies)
    assert (
        min(
            float(line.rsplit(" ", 1)[1])
            for port in fleet.ports
            for line in httpx.get(f"http://127.0.0.1:{port}/metrics").text.splitlines()
            if line.startswith('rewardfleet_gateway_requests_total{route="/score",status="200"}')
        )
        > 0
    )


def test_retried_uid_runs_once_in_flight_and_after(fleet: Fleet, workdir: Path) -> None:
    body = sample("retry-me", "abc", extra_info={"delay_s": 1.5})

    async def scenario() -> list[httpx.Response]:
        first = asyncio.create_task(post_all(fleet.url, [body]))
        # The function stamps its log as it starts (then runs 1.5 s): in flight, the retries land on the other
        # replicas (round-robin).
        await eventually_async(lambda: "retry-me" in runs_by_uid(workdir / "runs.log"), timeout_s=30)
        during = await post_all(fleet.url, [body, body])
        return [*(await first), *during, *(await post_all(fleet.url, [body, body, body]))]

    responses = asyncio.run(scenario())
    assert [r.json()["score"] for r in responses] == [3.0] * 6
    assert sum(r.json()["cached"] for r in responses) == 5
    assert len(runs_by_uid(workdir / "runs.log")["retry-me"]) == 1


def test_rpm_budget_holds_fleet_wide(fleet: Fleet, workdir: Path) -> None:
    """60 requests/minute for `rated` over three replicas: a bucket of 60 plus one a second. Load far above
    it for a bounded 12 s; the calls that ran are within 10 % of that budget (three separate budgets would
    let three times as many through)."""
    run_s, concurrency = 12.0, 24
    stop_at = time.monotonic() + run_s

    async def load() -> None:
        async with httpx.AsyncClient(base_url=fleet.url, timeout=60) as client:

            async def worker(w: int) -> None:
                i = 0
                while time.monotonic() < stop_at:
                    try:
                        async with asyncio.timeout(max(0.01, stop_at - time.monotonic())):
                            await client.post("/score", json=sample(f"rpm-{w}-{i}", "z", reward_fn="rated"))
                    except TimeoutError:
                        return
                    i += 1

            await asyncio.gather(*(worker(w) for w in range(concurrency)))

    started = time.time()
    asyncio.run(load())
    # Calls admitted just before the end finish writing their line: every replica serves only the scrape.
    eventually(
        lambda: fleet.metric("rewardfleet_gateway_inflight_requests ") == len(fleet.ports), timeout_s=60
    )
    stamps = sorted(t for ts in runs_by_uid(workdir / "rated.log").values() for t in ts)
    ran = sum(1 for t in stamps if t <= started + run_s)
    budget = 60 + run_s * 60 / 60
    print(f"\nrpm fleet-wide: ran={ran} budget={budget:.0f} replicas=3")
    assert abs(ran - budget) <= 0.1 * budget


def test_redis_killed_mid_load_and_restarted(
    fleet: Fleet, redis_for_fleet: RedisServer, workdir: Path
) -> None:
    bodies = [sample(f"k{i}", "q" * (i % 9 + 1)) for i in range(240)]
    statuses: list[int] = []

    async def scenario() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=fleet.url, timeout=60) as client:

            async def post(body: dict[str, Any]) -> httpx.Response:
                for _ in range(300):
                    resp = await client.post("/score", json=body)
                    statuses.append(resp.status_code)
                    if resp.status_code != 503:
                        return resp
                    assert resp.json()["error"]["type"] == "StateStoreUnavailable"
                    await asyncio.sleep(0.1)  # the trainer's back-off before it retries a 503 (the behaviour)
                return resp

            async def chaos() -> None:
                # Kill on progress, not on a clock: a quarter of the samples answered, the rest still to come
                # (each of them then gets 503s until Redis is back, so the load cannot end while it is down).
                await eventually_async(
                    lambda: statuses.count(200) >= len(bodies) // 4, timeout_s=60, what="a quarter answered"
                )
                await asyncio.to_thread(redis_for_fleet.kill)
                # Down until the fleet has refused the requests in flight, not for a guessed duration.
                refused = statuses.count(503)
                await eventually_async(
                    lambda: statuses.count(503) >= refused + 8, timeout_s=60, what="8 requests refused"
                )
                await asyncio.to_thread(redis_for_fleet.start)

            sem = asyncio.Semaphore(8)

            async def paced(body: dict[str, Any]) -> httpx.Response:
                async with sem:
                    await asyncio.sleep(0.02)  # pacing the load (8 posters, ~400/s): not a wait
                    return await post(body)

            results = asyncio.gather(*(paced(b) for b in bodies))
            await chaos()
            return list(await results)

    responses = asyncio.run(scenario())
    assert [r.json()["score"] for r in responses] == [float(len(b["solution_str"])) for b in bodies]
    runs = {uid: r for uid, r in runs_by_uid(workdir / "runs.log").items() if uid.startswith("k")}
    assert sorted(runs) == sorted(b["uid"] for b in bodies) and all(len(r) == 1 for r in runs.values())
    print(f"\nredis kill: samples={len(bodies)} answered={len(responses)} refused_503={statuses.count(503)} "
          f"runs={sum(len(r) for r in runs.values())}")  # fmt: skip
    assert statuses.count(503) > 0  # the kill did land mid-load
    assert fleet.metric("rewardfleet_state_store_errors_total") > 0
    eventually(  # every replica's notifier
        lambda: fleet.metric("rewardfleet_state_store_reconnects_total") >= 3, timeout_s=30
    )
