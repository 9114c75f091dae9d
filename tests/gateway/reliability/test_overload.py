"""10× overload: the gateway answers what it cannot take with 429 + Retry-After, its memory stays bounded,
and a client that honours Retry-After loses nothing."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import aiohttp
import httpx

from rewardfleet.services.client import AsyncRewardClient, RetryPolicy
from tests.support.reliability import report, rss_bytes

INFLIGHT, QUEUED = 8, 8
CONFIG: dict[str, Any] = {
    "max_inflight_requests": INFLIGHT,
    "max_queued_requests": QUEUED,
    "queue_timeout_s": 0.5,
    "retry_after_s": 1,
    "default_reward_fn": "slow_async",
}
SAMPLE = {"data_source": "x", "extra_info": {"delay_s": 0.05}}


async def _burst(url: str, n: int) -> list[tuple[int, str | None, Any]]:
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> tuple[int, str | None, Any]:
            body = {**SAMPLE, "solution_str": "s" * i}
            async with session.post(f"{url}/score", json=body) as resp:
                return resp.status, resp.headers.get("Retry-After"), await resp.json()

        return await asyncio.gather(*(one(i) for i in range(n)))


def test_over_the_bound_is_429_with_retry_after_in_the_envelope(gateway_factory: Any) -> None:
    gw = gateway_factory(CONFIG)
    answers = asyncio.run(_burst(gw.url, 10 * (INFLIGHT + QUEUED)))
    statuses = [a[0] for a in answers]
    assert set(statuses) <= {200, 429}
    assert statuses.count(429) > 0 and statuses.count(200) >= INFLIGHT + QUEUED
    for status, retry_after, body in answers:
        if status == 429:
            assert retry_after == "1"
            assert (
                body["error"]["type"] == "Overloaded" and "max_inflight_requests" in body["error"]["message"]
            )
        else:
            assert body["status"] == "ok"
    # Every refusal reaches /metrics, with a bounded reason label.
    metrics = httpx.get(f"{gw.url}/metrics", timeout=30).text
    line = 'rewardfleet_gateway_admission_rejections_total{reason="overload"} '
    (counted,) = [float(x.removeprefix(line)) for x in metrics.splitlines() if x.startswith(line)]
    assert counted == statuses.count(429)


def test_ten_times_overload_memory_bounded_nothing_lost_with_retries(gateway_factory: Any) -> None:
    gw = gateway_factory(CONFIG)
    pid = gw.proc.pid
    baseline = rss_bytes(pid)
    peak = baseline
    done = threading.Event()

    def sample_rss() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_bytes(pid))
            time.sleep(0.05)  # the sampling period, not a wait

    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()
    n, concurrency = 800, 10 * (INFLIGHT + QUEUED)
    samples = [{**SAMPLE, "solution_str": "s" * (i % 50), "uid": f"u{i}"} for i in range(n)]
    policy = RetryPolicy(max_attempts=200, initial_backoff_s=0.05, max_backoff_s=1.0, max_elapsed_s=120)

    async def run() -> list[Any]:
        async with AsyncRewardClient(gw.url, max_concurrency=concurrency, retry=policy, timeout_s=30) as c:
            return await c.score_many(samples)

    started = time.monotonic()
    results = asyncio.run(run())
    elapsed = time.monotonic() - started
    done.set()
    sampler.join()
    lost = [r for r in results if not r.ok]
    retried = sum(r.attempts - 1 for r in results)
    growth_mb = (peak - baseline) / 2**20
    report(
        "OVERLOAD",
        samples=n,
        concurrency=concurrency,
        admitted_bound=INFLIGHT + QUEUED,
        retries_429=retried,
        lost=len(lost),
        elapsed_s=elapsed,
        rss_baseline_mb=baseline / 2**20,
        rss_peak_mb=peak / 2**20,
        growth_mb=growth_mb,
    )
    assert not lost, lost[:3]
    assert [r.score for r in results] == [float(i % 50 % 7) for i in range(n)]
    assert retried > 0, "the overload never produced a 429"
    assert growth_mb < 64, f"RSS grew {growth_mb:.1f} MiB under overload"
