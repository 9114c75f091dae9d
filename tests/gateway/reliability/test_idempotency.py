"""`ResultCache` in-process: keys, the in-flight join, the hand-over when the first caller is cancelled, what
is cached, and the hit/join counters /metrics exports."""

from __future__ import annotations

import asyncio
import gc
import hashlib

import pytest

from rewardfleet.services.gateway.cache import idempotency
from rewardfleet.services.gateway.cache.idempotency import ResultCache, inputs_digest
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.schemas import ScoreResult, Timings
from tests.gateway.units import counter, sample


def result(status: str = "ok", score: float | None = 1.0) -> ScoreResult:
    return ScoreResult(
        uid="first",
        score=score,
        extra={},
        reward_fn="f",
        data_source="d",
        status=status,  # type: ignore[arg-type]
        error=None,
        timings=Timings(compute_s=0.0, total_s=0.0),
    )


def test_keys() -> None:
    metrics = GatewayMetrics()
    by_uid = ResultCache("uid", 8, 60, metrics)
    assert by_uid.key(sample(), "f", "v1") is None  # no uid: not deduplicated
    assert by_uid.key(sample(uid=1), "f", "v1") == by_uid.key(sample(uid=1), "f", "v1")
    assert by_uid.key(sample(uid=1), "f", "v1") != by_uid.key(sample(uid=1, solution_str="y"), "f", "v1")
    assert by_uid.key(sample(uid=1), "f", "v1") != by_uid.key(
        sample(uid=1), "f", "v2"
    )  # a reload's new version
    by_inputs = ResultCache("inputs", 8, 60, metrics)
    assert by_inputs.key(sample(uid=1), "f", "v1") == by_inputs.key(sample(uid=2), "f", "v1")
    assert by_inputs.key(sample(extra_info={"a": 1, "b": 2}), "f", "v1") == by_inputs.key(
        sample(extra_info={"b": 2, "a": 1}), "f", "v1"
    )


async def test_a_duplicate_joins_the_running_call() -> None:
    metrics = GatewayMetrics()
    cache = ResultCache("uid", 8, 60, metrics)
    started, release = asyncio.Event(), asyncio.Event()
    calls = 0

    async def compute() -> ScoreResult:
        nonlocal calls
        calls += 1
        started.set()
        await release.wait()
        return result()

    first = asyncio.create_task(cache.run("k", sample(uid="first"), compute))
    await started.wait()  # the first call is running
    second = asyncio.create_task(cache.run("k", sample(uid="second"), compute))
    await asyncio.sleep(0)  # one scheduler pass: `second` runs up to its wait on the first call, not a timer
    release.set()
    a, b = await asyncio.gather(first, second)
    assert calls == 1
    assert (a.cached, b.cached, b.uid) == (False, True, "second")
    assert counter(metrics, "gateway_result_cache_answers", how="join") == 1
    hit = await cache.run("k", sample(uid="third"), compute)
    assert hit.cached and hit.uid == "third" and calls == 1
    assert counter(metrics, "gateway_result_cache_answers", how="hit") == 1


async def test_when_the_first_caller_is_cancelled_the_joined_one_computes() -> None:
    cache = ResultCache("uid", 8, 60, GatewayMetrics())
    started = asyncio.Event()
    calls = 0

    async def compute() -> ScoreResult:
        nonlocal calls
        calls += 1
        if calls == 1:
            started.set()
            await asyncio.sleep(3600)  # the first caller's client goes away meanwhile
        return result()

    first = asyncio.create_task(cache.run("k", sample(uid="a"), compute))
    await started.wait()
    joined = asyncio.create_task(cache.run("k", sample(uid="b"), compute))
    await asyncio.sleep(0)  # one scheduler pass: `joined` runs up to its wait on the first call, not a timer
    first.cancel()
    answer = await joined
    assert calls == 2 and answer.status == "ok" and not answer.cached


async def test_only_ok_results_are_cached() -> None:
    cache = ResultCache("uid", 8, 60, GatewayMetrics())
    outcomes = [result("error", None), result()]

    async def compute() -> ScoreResult:
        return outcomes.pop(0)

    assert (await cache.run("k", sample(uid=1), compute)).status == "error"
    assert (await cache.run("k", sample(uid=1), compute)).status == "ok"  # the error was not remembered
    assert (await cache.run("k", sample(uid=1), compute)).cached


async def test_cached_results_are_text_the_collector_does_not_walk() -> None:
    """A full cache must not add its entries to every full collection: what it keeps is untracked text, and
    a hit gives back an equal result (the caller's uid, `cached`)."""
    cache = ResultCache("uid", 8, 60, GatewayMetrics())

    async def compute() -> ScoreResult:
        return result(score=0.25).model_copy(update={"extra": {"judge": {"verdict": "yes"}}})

    first = await cache.run("k", sample(uid="first"), compute)
    ((_, stored),) = cache.cache._data.values()
    assert not gc.is_tracked(stored)
    hit = await cache.run("k", sample(uid="again"), compute)
    assert hit == first.model_copy(update={"uid": "again", "cached": True})


def test_digest_tells_every_input_value_apart() -> None:
    """The digest encodes common values without a JSON encoder (strings tagged, null, {}), containers with
    orjson, and what orjson cannot tell apart or refuses (NaN, which it writes as null; integers past 64
    bits) with the stdlib: different values never share a digest, equal ones always do."""
    values: list[object] = [
        None,
        "",
        "null",
        '"x"',
        "x",
        1,
        1.0,
        True,
        [],
        {},
        [None],
        [float("nan")],
        [float("inf")],
        {"a": None},
        {"a": float("nan")},
        {"a": 1},
        {"a": "1"},
        [2**70],
        [2**70 + 1],
        {"a": {"b": [1, "2"]}},
    ]
    truths = {inputs_digest(sample(ground_truth=v)) for v in values}
    assert len(truths) == len(values)
    prompts = {inputs_digest(sample(prompt=v)) for v in (None, "hi", [{"role": "user", "content": "hi"}])}
    assert len(prompts) == 3
    extras = {inputs_digest(sample(extra_info=v)) for v in ({}, {"a": 1}, {"a": float("nan")}, {"a": None})}
    assert len(extras) == 4
    assert inputs_digest(sample(ground_truth={"a": 1, "b": [2**70]})) == inputs_digest(
        sample(ground_truth={"b": [2**70], "a": 1})
    )
    # where one field ends and the next begins is part of the digest
    assert inputs_digest(sample(data_source="ab", solution_str="c")) != inputs_digest(
        sample(data_source="a", solution_str="bc")
    )


@pytest.mark.parametrize("size", [0, 1, 2047, 2048, 4500, 2047 * 3, 256 * 1024 + 1])
def test_digest_in_pieces_is_the_whole_digest(size: int) -> None:
    """Fed in pieces (to keep the GIL on the event loop), the digest, and so every cache key, is unchanged."""
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    h = hashlib.blake2b(digest_size=16)
    idempotency._update(h, data)
    assert h.digest() == hashlib.blake2b(data, digest_size=16).digest()
