"""Admission bounds what costs memory or CPU, not requests that only await I/O: a burst of judge-style posts
larger than the old limits (512 in flight + 1024 queued) is all accepted with the default settings, while
the sync pool's queue and the body bytes in flight still get 429 + Retry-After. The unit rules are
test_admission.py; the 10× overload test is test_overload.py.

Every wait is on an event: the stand-in judge (in the test's own event loop) counts the connections it holds
and answers them only when released; the sync pool's queue is read from /metrics."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import aiohttp

from bench.harness.waiting import eventually_async
from rewardfleet.services.common.open_files import raise_open_files_limit

BURST = 2000  # more than the old 512 in flight + 1024 queued


class HeldJudge:
    """A stand-in remote judge on 127.0.0.1: holds every connection until `release()`, then answers b"1"."""

    def __init__(self) -> None:
        self.connected = 0
        self._changed = asyncio.Condition()
        self._released = asyncio.Event()
        self.port = 0

    async def __aenter__(self) -> HeldJudge:
        self._server = await asyncio.start_server(self._hold, "127.0.0.1", 0, backlog=4096)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._released.set()
        self._server.close()

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with self._changed:
            self.connected += 1
            self._changed.notify_all()
        await self._released.wait()
        writer.write(b"1")
        await writer.drain()
        writer.close()

    async def holding(self, n: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.connected >= n)

    def release(self) -> None:
        self._released.set()


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> tuple[int, Any, Any]:
    async with session.post(f"{url}/score", json=body) as resp:
        return resp.status, resp.headers.get("Retry-After"), await resp.json()


async def _before_any_answer(event: Awaitable[None], posts: list[asyncio.Task[Any]]) -> None:
    """`event` happens while no post has been answered yet (an early answer is a refusal: shown)."""
    waiting = asyncio.ensure_future(event)
    await asyncio.wait([waiting, *posts], return_when=asyncio.FIRST_COMPLETED)
    early = [p.result() for p in posts if p.done()]
    waiting.cancel()
    assert not early, f"{len(early)} posts answered while they should be held, e.g. {early[0]}"


async def _pool_queue_depth(session: aiohttp.ClientSession, url: str, depth: int) -> None:
    line = "rewardfleet_gateway_pool_queue_depth "

    async def reached() -> bool:
        async with session.get(f"{url}/metrics") as resp:
            text = await resp.text()
        return any(x.startswith(line) and float(x.removeprefix(line)) >= depth for x in text.splitlines())

    await eventually_async(reached, timeout_s=60, interval_s=0.02, what=f"the pool queue at {depth}")


def test_a_step_of_awaiting_posts_beyond_the_old_limits_is_all_accepted(gateway_factory: Any) -> None:
    # Each held post is two sockets here (the client's, the judge's); the gateway inherits the limit.
    raise_open_files_limit(3 * BURST + 1024, "the burst")
    gw = gateway_factory({"default_reward_fn": "held_judge"})  # admission at its defaults

    async def run() -> list[tuple[int, Any, Any]]:
        connector = aiohttp.TCPConnector(limit=0)
        async with HeldJudge() as judge, aiohttp.ClientSession(connector=connector) as session:
            body = {"data_source": "x", "solution_str": "s", "extra_info": {"judge_port": judge.port}}
            posts = [
                asyncio.create_task(_post(session, gw.url, {**body, "uid": f"u{i}"})) for i in range(BURST)
            ]
            # Every post is inside its function at the same moment, awaiting the judge: all admitted at once.
            await _before_any_answer(judge.holding(BURST), posts)
            judge.release()
            return await asyncio.gather(*posts)

    answers = asyncio.run(run())
    assert [a[0] for a in answers] == [200] * BURST
    assert all(a[2]["status"] == "ok" and a[2]["score"] == 1.0 for a in answers)


def test_sync_work_over_the_pool_queue_bound_is_429_with_retry_after(gateway_factory: Any) -> None:
    gw = gateway_factory({"workers": 1, "max_pool_queue": 2, "default_reward_fn": "held_sync"})

    async def run() -> tuple[tuple[int, Any, Any], list[tuple[int, Any, Any]]]:
        async with HeldJudge() as judge, aiohttp.ClientSession() as session:
            body = {"data_source": "x", "solution_str": "s", "extra_info": {"judge_port": judge.port}}
            # One call runs (the only worker, held by the judge), three wait for it: over max_pool_queue=2.
            posts = [asyncio.create_task(_post(session, gw.url, {**body, "uid": f"u{i}"})) for i in range(4)]
            await _before_any_answer(judge.holding(1), posts)
            await _before_any_answer(_pool_queue_depth(session, gw.url, 3), posts)
            refused = await _post(session, gw.url, {**body, "uid": "over"})
            judge.release()
            return refused, await asyncio.gather(*posts)

    (status, retry_after, error), accepted = asyncio.run(run())
    assert status == 429 and retry_after == "1"
    assert error["error"]["type"] == "Overloaded" and "max_pool_queue=2" in error["error"]["message"]
    assert [(a[0], a[2]["status"], a[2]["score"]) for a in accepted] == [(200, "ok", 1.0)] * 4


def test_body_bytes_in_flight_over_the_bound_are_429_with_retry_after(gateway_factory: Any) -> None:
    config = {
        "max_body_bytes": 4096,
        "max_inflight_body_bytes": 8192,
        "max_queued_requests": 0,
        "default_reward_fn": "held_judge",
    }
    gw = gateway_factory(config)

    async def run() -> tuple[tuple[int, Any, Any], list[tuple[int, Any, Any]]]:
        async with HeldJudge() as judge, aiohttp.ClientSession() as session:
            body = {"data_source": "x", "extra_info": {"judge_port": judge.port}}
            large = {**body, "solution_str": "s" * 3000}  # two fit in 8192 bytes, a third does not
            posts = [asyncio.create_task(_post(session, gw.url, {**large, "uid": f"u{i}"})) for i in range(2)]
            await _before_any_answer(judge.holding(2), posts)
            refused = await _post(session, gw.url, {**large, "uid": "over"})
            # The bound is bytes, not requests: a small post still fits beside the two large ones.
            posts.append(asyncio.create_task(_post(session, gw.url, {**body, "solution_str": "s"})))
            await _before_any_answer(judge.holding(3), posts)
            judge.release()
            return refused, await asyncio.gather(*posts)

    (status, retry_after, error), accepted = asyncio.run(run())
    assert status == 429 and retry_after == "1"
    assert error["error"]["type"] == "Overloaded"
    assert "max_inflight_body_bytes=8192" in error["error"]["message"]
    assert [(a[0], a[2]["status"], a[2]["score"]) for a in accepted] == [(200, "ok", 1.0)] * 3
