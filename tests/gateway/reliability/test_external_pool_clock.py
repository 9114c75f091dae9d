"""An external pool's back-off and RPM window on a clock the test moves, against the OpenAI stand-in (a real
server on 127.0.0.1 answering 429 + Retry-After): the waits are exactly what the provider and the budget ask
for, with no wall time spent on them. The gateway-level path is test_external_pools.py beside this file."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import httpx
import pytest
from prometheus_client import CollectorRegistry

from bench.harness.processes import free_port, running
from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.metrics import ExternalPoolMetrics
from rewardfleet.services.gateway.pools.config import ExternalPoolConfig
from rewardfleet.services.gateway.pools.external_pools import ExternalPool
from tests.clock import FakeClock

KEY = "sk-standin-clock-0123456789"
BODY = {"messages": [{"role": "user", "content": "one two three"}]}


@contextlib.contextmanager
def standin(tmp_path: Path, rate_limit_first: int, retry_after_s: float) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "tests.openai_standin", "--port", str(port), "--api-key", KEY,
           "--rate-limit-first", str(rate_limit_first), "--retry-after-s", f"{retry_after_s:g}"]  # fmt: skip
    with running(cmd, tmp_path / "standin.log") as proc:
        url = f"http://127.0.0.1:{port}"
        proc.wait_http(f"{url}/standin/log", timeout_s=60)
        yield url


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[str]:
    """Two 429s asking for 30 s each, then answers."""
    with standin(tmp_path, rate_limit_first=2, retry_after_s=30) as url:
        yield url


@pytest.fixture
def open_standin(tmp_path: Path) -> Iterator[str]:
    with standin(tmp_path, rate_limit_first=0, retry_after_s=1) as url:
        yield url


def pool(url: str, clock: FakeClock, **config: object) -> ExternalPool:
    cfg = ExternalPoolConfig(base_url=f"{url}/v1", model="m", **config)  # type: ignore[arg-type]
    metrics = ExternalPoolMetrics(CollectorRegistry())
    return ExternalPool("hosted", cfg, metrics, KEY, clock=clock, sleep=clock.sleep)


def statuses(url: str) -> list[int]:
    return [entry["status"] for entry in httpx.get(f"{url}/standin/log", timeout=10).json()]


async def test_each_retry_waits_what_retry_after_asks(limited: str) -> None:
    clock = FakeClock(autojump=True)
    hosted = pool(limited, clock)
    async with aiohttp.ClientSession() as session:
        answer = await hosted.forward(session, "judge", "chat/completions", BODY)
    assert answer.status == 200
    assert statuses(limited) == [429, 429, 200]
    assert clock.slept == [30.0, 30.0] and clock.now == 1060.0  # a minute of clock time, none of the wall's


async def test_a_retry_after_above_max_backoff_is_capped(limited: str) -> None:
    clock = FakeClock(autojump=True)
    hosted = pool(limited, clock, max_backoff_s=5.0)
    async with aiohttp.ClientSession() as session:
        assert (await hosted.forward(session, "judge", "chat/completions", BODY)).status == 200
    assert clock.slept == [5.0, 5.0]


async def test_a_429_pauses_every_function_of_the_pool(tmp_path: Path) -> None:
    """One function's 429 holds the other function's next request until the pause ends, on the clock."""
    with standin(tmp_path, rate_limit_first=1, retry_after_s=30) as url:
        clock = FakeClock()
        hosted = pool(url, clock)
        async with aiohttp.ClientSession() as session:
            first = asyncio.create_task(hosted.forward(session, "judge", "chat/completions", BODY))
            await eventually_async(lambda: clock.sleeping == 1, what="the judge backing off after its 429")
            second = asyncio.create_task(hosted.forward(session, "rubric", "chat/completions", BODY))
            await eventually_async(lambda: clock.sleeping == 2, what="the other function held by the pause")
            assert statuses(url) == [429]  # nothing sent during the pause
            clock.advance(29.0)
            assert clock.sleeping == 2
            clock.advance(1.0)
            answers = await asyncio.gather(first, second)
        assert [a.status for a in answers] == [200, 200] and statuses(url) == [429, 200, 200]


async def test_the_rpm_window_holds_the_third_request_a_minute(open_standin: str) -> None:
    clock = FakeClock()
    hosted = pool(open_standin, clock, rpm=2)
    async with aiohttp.ClientSession() as session:
        for _ in range(2):
            assert (await hosted.forward(session, "judge", "chat/completions", BODY)).status == 200
        third = asyncio.create_task(hosted.forward(session, "judge", "chat/completions", BODY))
        await eventually_async(lambda: clock.sleeping == 1, what="the third request waiting for the window")
        assert clock.next_wake() == 60.0 and len(statuses(open_standin)) == 2
        clock.advance(60.0)
        assert (await third).status == 200
    assert len(statuses(open_standin)) == 3
