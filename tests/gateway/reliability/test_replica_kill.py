"""One of two model-server replicas SIGKILLed mid-load behind the real sglang-router: every sample through
the gateway is answered with the right score (the router retries on the surviving replica)."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from typing import Any

from bench.harness.waiting import eventually
from rewardfleet.services.client import AsyncRewardClient, RetryPolicy
from tests.sglang_standin import standin_reward
from tests.support.reliability import report

SAMPLES = 2000


def test_replica_killed_mid_load_every_sample_answered_correctly(
    start_replica: Any, start_router: Any, gateway_factory: Any
) -> None:
    replicas = [start_replica("reward", "a"), start_replica("reward", "b")]
    router = start_router([r.url for r in replicas], retry_initial_backoff_ms=1, retry_max_backoff_ms=10)
    gw = gateway_factory({"default_reward_fn": "rm_score", "routers": {"rm": router.address}})
    texts = [f"answer number {i}" for i in range(SAMPLES)]
    samples = [{"data_source": "x", "solution_str": t, "uid": f"r{i}"} for i, t in enumerate(texts)]
    results: list[Any] = []
    # Only transport-level retries by the client; a wrong or failed answer would show up as a lost sample.
    policy = RetryPolicy(max_attempts=5, initial_backoff_s=0.05, max_backoff_s=0.5)

    async def run() -> None:
        async with AsyncRewardClient(gw.url, max_concurrency=32, retry=policy) as client:
            results.extend(await client.score_many(samples))

    runner = threading.Thread(target=lambda: asyncio.run(run()))
    started = time.monotonic()
    runner.start()
    eventually(lambda: replicas[1].stats().get("served", {}).get("/v1/embeddings", 0) >= 300, timeout_s=60)
    served_before_kill = replicas[1].stats()["served"].get("/v1/embeddings", 0)
    replicas[1].child.signal(signal.SIGKILL)
    runner.join(timeout=180)
    elapsed = time.monotonic() - started
    lost = [r for r in results if not r.ok]
    wrong = [r for r, t in zip(results, texts, strict=True) if r.ok and r.score != standin_reward(t)]
    retries = sum(r.attempts - 1 for r in results)
    report("REPLICA_KILL", samples=SAMPLES, killed_replica_served_before_kill=served_before_kill,
           survivor_served=replicas[0].stats()["served"].get("/v1/embeddings", 0), lost=len(lost),
           wrong=len(wrong), client_retries=retries, elapsed_s=elapsed)  # fmt: skip
    assert len(results) == SAMPLES
    assert not lost, lost[:3]
    assert not wrong, wrong[:3]
