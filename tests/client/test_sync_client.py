"""`RewardClient`: the blocking twin runs the async client on its own loop thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rewardfleet.services.client import GatewayUnavailable, RetryPolicy, RewardClient
from tests.client.fake_gateway import FakeGateway, Reply, ok_reply

FAST = RetryPolicy(initial_backoff_s=0.01, max_backoff_s=0.05, max_attempts=4)


def test_sync_score_and_score_many_with_retries() -> None:
    with FakeGateway() as gateway:
        gateway.behaviour = lambda body, attempt: (
            Reply(status=503, headers={"Retry-After": "0"}) if attempt == 1 else ok_reply(body, attempt)
        )
        with RewardClient(gateway.url, retry=FAST, max_concurrency=8) as client:
            one = client.score(data_source="d", solution_str="x", ground_truth="y")
            many = client.score_many(
                {"data_source": "d", "solution_str": str(i), "extra_info": {"score": float(i)}}
                for i in range(20)
            )
            assert client.health() and client.ready() is False  # the fake has no /ready
        assert one.ok and one.attempts == 2
        assert [r.score for r in many] == [float(i) for i in range(20)]
        assert all(r.attempts == 2 for r in many)


def test_sync_client_works_inside_a_running_event_loop_thread() -> None:
    """TRL-style: a sync reward function called from code that already runs an event loop."""
    with FakeGateway() as gateway, RewardClient(gateway.url, retry=FAST) as client:

        async def caller() -> float | None:
            return client.score(data_source="d", solution_str="x", extra_info={"score": 0.25}).score

        assert asyncio.run(caller()) == 0.25


def test_sync_client_raises_after_retries_and_refuses_use_after_close() -> None:
    with FakeGateway() as gateway:
        gateway.behaviour = lambda body, attempt: Reply(status=503)
        client = RewardClient(gateway.url, retry=FAST)
        with pytest.raises(GatewayUnavailable):
            client.score(data_source="d", solution_str="x")
        thread_count = threading.active_count()
        client.close()
        client.close()  # idempotent
        assert threading.active_count() == thread_count - 1
        with pytest.raises(RuntimeError, match="closed"):
            client.score(data_source="d", solution_str="x")
