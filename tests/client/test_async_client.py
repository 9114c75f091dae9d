"""`AsyncRewardClient` against a scripted gateway: retries, Retry-After, uids, limits, ordering, errors."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import pytest

from bench.harness.processes import free_port
from rewardfleet.services.client import (
    AsyncRewardClient,
    BadRequest,
    GatewayHTTPError,
    GatewayUnavailable,
    PayloadTooLarge,
    RetryPolicy,
    Sample,
    UnknownRewardFunction,
)
from tests.client.fake_gateway import FakeGateway, Reply, ok_reply

FAST = RetryPolicy(initial_backoff_s=0.01, max_backoff_s=0.05, max_attempts=6)


@pytest.fixture
def gateway() -> Iterator[FakeGateway]:
    with FakeGateway() as gw:
        yield gw


def sample(i: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "data_source": "test",
        "solution_str": f"answer {i}",
        "ground_truth": "1",
        "extra_info": {"i": i},
        **extra,
    }


async def test_score_decodes_a_typed_result(gateway: FakeGateway) -> None:
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        result = await client.score(sample(extra_info={"score": 0.5}), reward_fn="fake")
    assert result.ok and result.score == 0.5 and result.status == "ok"
    assert result.reward_fn == "fake" and result.data_source == "test"
    assert result.extra == {"attempt": 1} and result.attempts == 1 and not result.fallback_score
    assert result.timings == {"total_s": 0.001}
    assert gateway.bodies[0]["reward_fn"] == "fake"


async def test_uid_is_generated_once_and_kept_across_retries(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: (
        Reply(status=503, headers={"Retry-After": "0"}) if attempt < 3 else ok_reply(body, attempt)
    )
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        generated = await client.score(sample())
        given = await client.score(sample(uid="my-uid-1"))
    assert generated.attempts == 3 and generated.extra["attempt"] == 3
    assert len(generated.uid) == 32 and gateway.attempts[generated.uid] == 3
    assert given.uid == "my-uid-1" and gateway.attempts["my-uid-1"] == 3
    assert [b["uid"] for b in gateway.bodies] == [generated.uid] * 3 + ["my-uid-1"] * 3


@pytest.mark.parametrize("status", [503, 429])
async def test_retry_after_is_honoured(gateway: FakeGateway, status: int) -> None:
    gateway.behaviour = lambda body, attempt: (
        Reply(
            status=status, body={"error": {"type": "busy", "message": "later"}}, headers={"Retry-After": "1"}
        )
        if attempt == 1
        else ok_reply(body, attempt)
    )
    # The backoff alone would wait at most 10 ms: only Retry-After explains a ~1 s wait.
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        result = await client.score(sample())
    assert result.ok and result.attempts == 2
    first, second = gateway.arrivals
    assert second - first >= 1.0  # a lower bound: only Retry-After explains it


async def test_retries_run_out_into_gateway_unavailable(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: Reply(status=503, headers={"Retry-After": "0"})
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        with pytest.raises(GatewayUnavailable) as info:
            await client.score(sample())
    assert info.value.attempts == FAST.max_attempts and info.value.last_status == 503
    assert len(gateway.bodies) == FAST.max_attempts


async def test_elapsed_budget_stops_retries_before_max_attempts(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: Reply(status=429, headers={"Retry-After": "0.3"})
    policy = RetryPolicy(max_attempts=100, max_elapsed_s=1.0, initial_backoff_s=0.01)
    async with AsyncRewardClient(gateway.url, retry=policy) as client:
        with pytest.raises(GatewayUnavailable):
            await client.score(sample())
    assert 2 <= len(gateway.bodies) <= 5


async def test_connection_refused_is_retried_then_reported() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens here
    async with AsyncRewardClient(url, retry=FAST) as client:
        with pytest.raises(GatewayUnavailable) as info:
            await client.score(sample())
    assert info.value.attempts == FAST.max_attempts
    assert "ConnectionRefusedError" in str(info.value)


async def test_dropped_connection_is_retried(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: Reply(drop=True) if attempt == 1 else ok_reply(body, attempt)
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        result = await client.score(sample())
    assert result.ok and result.attempts == 2


async def test_per_request_timeout_is_retried_with_the_same_uid(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: Reply(delay_s=2.0) if attempt == 1 else ok_reply(body, attempt)
    async with AsyncRewardClient(gateway.url, retry=FAST, timeout_s=0.3) as client:
        result = await client.score(sample())
    # No stopwatch: the first attempt would have succeeded after its 2 s delay, so a second attempt (with
    # the same uid) exists only because the client's 0.3 s timeout gave up on the first.
    assert result.ok and result.attempts == 2 and gateway.attempts[result.uid] == 2
    assert result.extra["attempt"] == 2


async def test_timeout_without_retry_raises(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: Reply(delay_s=2.0)
    policy = RetryPolicy(retry_on_timeout=False)
    async with AsyncRewardClient(gateway.url, retry=policy, timeout_s=0.2) as client:
        with pytest.raises(GatewayUnavailable, match="no answer within"):
            await client.score(sample())
    assert len(gateway.bodies) == 1


@pytest.mark.parametrize(
    ("status", "exc_type"),
    [(422, BadRequest), (404, UnknownRewardFunction), (413, PayloadTooLarge), (500, GatewayHTTPError)],
)
async def test_definitive_errors_are_not_retried(
    gateway: FakeGateway, status: int, exc_type: type[GatewayHTTPError]
) -> None:
    envelope = {"error": {"type": "validation", "message": "bad field", "fields": ["solution_str"]}}
    gateway.behaviour = lambda body, attempt: Reply(status=status, body=envelope)
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        with pytest.raises(exc_type) as info:
            await client.score(sample())
    assert type(info.value) is exc_type
    assert info.value.status == status and info.value.type == "validation"
    assert info.value.message == "bad field" and info.value.fields == ["solution_str"]
    assert len(gateway.bodies) == 1


async def test_function_failure_is_a_result_not_an_exception(gateway: FakeGateway) -> None:
    def failing(body: dict[str, Any], attempt: int) -> Reply:
        fallback = body["extra_info"]["i"] == 1
        return Reply(
            body={
                "uid": body["uid"],
                "score": -1.0 if fallback else None,
                "extra": {},
                "reward_fn": "boom",
                "data_source": "test",
                "status": "error" if fallback else "timeout",
                "error": {"type": "ZeroDivisionError" if fallback else "timeout", "message": "nope"},
                "timings": {},
            }
        )

    gateway.behaviour = failing
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        timed_out, fell_back = await client.score_many([sample(0), sample(1)])
    assert timed_out.status == "timeout" and timed_out.score is None and not timed_out.ok
    assert timed_out.error is not None and timed_out.error.type == "timeout" and not timed_out.fallback_score
    assert fell_back.status == "error" and fell_back.score == -1.0 and fell_back.fallback_score
    assert len(gateway.bodies) == 2  # a function failure is an answer: never retried


async def test_score_many_keeps_input_order_under_random_latency(gateway: FakeGateway) -> None:
    rng = random.Random(3)
    gateway.behaviour = lambda body, attempt: Reply(
        delay_s=rng.uniform(0, 0.05), body=ok_reply(body, attempt).body | {"score": body["extra_info"]["i"]}
    )
    samples = [sample(i) for i in range(60)]
    async with AsyncRewardClient(gateway.url, retry=FAST, max_concurrency=16) as client:
        results = await client.score_many(samples)
    assert [r.score for r in results] == list(range(60))
    assert len({r.uid for r in results}) == 60
    assert gateway.max_in_flight > 1  # really concurrent


async def test_concurrency_limit_bounds_requests_in_flight(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: Reply(delay_s=0.05, body=ok_reply(body, attempt).body)
    async with AsyncRewardClient(gateway.url, retry=FAST, max_concurrency=4) as client:
        results = await client.score_many([sample(i) for i in range(24)])
    assert all(r.ok for r in results)
    assert gateway.max_in_flight == 4


async def test_score_many_turns_per_sample_client_errors_into_results(gateway: FakeGateway) -> None:
    gateway.behaviour = lambda body, attempt: (
        Reply(status=422, body={"error": {"type": "validation", "message": "bad", "fields": []}})
        if body["extra_info"]["i"] == 2
        else ok_reply(body, attempt)
    )
    async with AsyncRewardClient(gateway.url, retry=FAST) as client:
        results = await client.score_many([sample(i) for i in range(4)], progress=True)
    assert [r.ok for r in results] == [True, True, False, True]
    bad = results[2]
    assert bad.score is None and bad.error is not None and bad.error.type == "BadRequest"
    assert bad.uid == gateway.bodies[[b["extra_info"]["i"] for b in gateway.bodies].index(2)]["uid"]


async def test_typed_sample_and_host_port_address(gateway: FakeGateway) -> None:
    async with AsyncRewardClient(f"127.0.0.1:{gateway.port}/", retry=FAST) as client:
        assert client.base_url == gateway.url
        result = await client.score(Sample(data_source="d", solution_str="s", ground_truth=[1, 2], uid="u7"))
        assert await client.health()
        assert await client.reward_fns() == [{"name": "fake"}]
    assert result.uid == "u7"
    assert gateway.bodies[0] == {"data_source": "d", "solution_str": "s", "ground_truth": [1, 2], "uid": "u7"}


async def test_client_is_bound_to_one_loop(gateway: FakeGateway) -> None:
    client = AsyncRewardClient(gateway.url, retry=FAST)
    await client.score(sample())

    def other_loop() -> None:
        asyncio.run(client.score(sample()))

    with pytest.raises(RuntimeError, match="second event loop"):
        await asyncio.to_thread(other_loop)
    await client.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await client.score(sample())


def test_bodies_encode_as_the_stdlib_encodes_them() -> None:
    """orjson writes the bodies, except where it would change what the gateway reads (NaN as null) or
    cannot (integers past 64 bits): the decoded body is always what `json.dumps` gave."""
    import json
    import math

    from rewardfleet.services.client.async_client import encode_json

    bodies: list[object] = [
        {"data_source": "d", "solution_str": "é ✓ \ud83d\ude00", "ground_truth": "1", "extra_info": {"i": 3}},
        {"samples": [{"ground_truth": [1, {"x": float("nan")}]}]},
        {"ground_truth": float("-inf")},
        {"ground_truth": 2**70},
        {"extra_info": {1: "int key"}},
    ]
    for body in bodies:
        got, want = json.loads(encode_json(body)), json.loads(json.dumps(body))
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    nan = json.loads(encode_json({"samples": [{"ground_truth": [1, {"x": float("nan")}]}]}))
    assert math.isnan(nan["samples"][0]["ground_truth"][1]["x"])
    with pytest.raises(TypeError):  # what JSON cannot hold raises as json.dumps does
        encode_json({"x": object()})
