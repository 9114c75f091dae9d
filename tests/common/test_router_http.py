"""The POST helper against a real HTTP server on loopback: typed errors, no retry of HTTP errors."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from bench.harness.processes import free_port
from rewardfleet.services.common.router_http import (
    CONNECT_RETRY_PAUSE_S,
    RemoteCallError,
    base_url,
    post_json,
    resolve_address,
)


class Recorder:
    def __init__(self) -> None:
        self.hits: list[str] = []
        self.answered: list[str] = []
        self.release = asyncio.Event()  # the /slow handler answers once this is set (or after 30 s)


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Recorder]]:
    rec = Recorder()

    async def ok(request: web.Request) -> web.Response:
        rec.hits.append(request.path)
        return web.json_response({"echo": await request.json()})

    async def bad(request: web.Request) -> web.Response:
        rec.hits.append(request.path)
        return web.json_response({"object": "error", "message": "model field missing"}, status=400)

    async def down(request: web.Request) -> web.Response:
        rec.hits.append(request.path)
        return web.Response(status=503, text="")

    async def html(request: web.Request) -> web.Response:
        rec.hits.append(request.path)
        return web.Response(text="<html>proxy page</html>")

    async def slow(request: web.Request) -> web.Response:
        rec.hits.append(request.path)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(rec.release.wait(), 30)
        rec.answered.append(request.path)
        return web.json_response({})

    app = web.Application()
    for path, handler in {"/ok": ok, "/bad": bad, "/down": down, "/html": html, "/slow": slow}.items():
        app.router.add_post(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"127.0.0.1:{port}", rec
    await runner.cleanup()


async def test_2xx_json_is_returned(server: tuple[str, Recorder]) -> None:
    address, rec = server
    async with aiohttp.ClientSession() as session:
        assert await post_json(session, address, "/ok", {"a": 1}) == {"echo": {"a": 1}}
    # Without a session the helper opens its own for the call (verl calling the function itself).
    assert await post_json(None, f"http://{address}/", "/ok", {"b": 2}) == {"echo": {"b": 2}}
    assert rec.hits == ["/ok", "/ok"]


@pytest.mark.parametrize(
    ("path", "status", "body_part"), [("/bad", 400, "model field missing"), ("/down", 503, "")]
)
async def test_http_errors_carry_status_and_body_and_are_not_retried(
    server: tuple[str, Recorder], path: str, status: int, body_part: str
) -> None:
    address, rec = server
    async with aiohttp.ClientSession() as session:
        with pytest.raises(RemoteCallError) as info:
            await post_json(session, address, path, {})
    err = info.value
    assert (err.kind, err.status, err.url) == ("http_status", status, f"http://{address}{path}")
    assert body_part in err.body and f"HTTP {status}" in str(err)
    assert rec.hits == [path]  # exactly one attempt: the router owns the retry loop


async def test_non_json_2xx_is_a_bad_response(server: tuple[str, Recorder]) -> None:
    address, _ = server
    with pytest.raises(RemoteCallError) as info:
        await post_json(None, address, "/html", {})
    assert info.value.kind == "bad_response" and "proxy page" in info.value.body


async def test_timeout_is_typed_and_bounded(server: tuple[str, Recorder]) -> None:
    address, rec = server
    with pytest.raises(RemoteCallError, match=r"within 0.3s") as info:
        await post_json(None, address, "/slow", {}, timeout_s=0.3)
    assert info.value.kind == "timeout"
    # Bounded by the 0.3 s limit, not by the server: it had not answered yet (it holds the answer until
    # released, 30 s at most; a helper that ignored the limit would get that answer and raise nothing).
    assert rec.hits == ["/slow"] and rec.answered == []
    rec.release.set()


async def test_refused_connection_is_retried_once_then_typed() -> None:
    class Custom(RemoteCallError):
        pass

    attempts: list[str] = []

    async def on_start(
        _s: aiohttp.ClientSession, _c: object, params: aiohttp.TraceRequestStartParams
    ) -> None:
        attempts.append(str(params.url))

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_start)
    address = f"127.0.0.1:{free_port()}"
    start = time.monotonic()
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        with pytest.raises(Custom) as info:
            await post_json(session, address, "/generate", {}, error_cls=Custom)
    elapsed = time.monotonic() - start
    assert info.value.kind == "connect" and info.value.status is None
    # Exactly one retry (a count, not a duration), after one pause of CONNECT_RETRY_PAUSE_S.
    assert attempts == [f"http://{address}/generate"] * 2
    assert elapsed >= CONNECT_RETRY_PAUSE_S - 0.01  # timers may fire a hair early


def test_resolve_address_and_base_url() -> None:
    pools = {"judge": "127.0.0.1:1", "encoder": "127.0.0.1:2"}
    assert resolve_address("judge", pools, "127.0.0.1:9") == "127.0.0.1:1"
    assert resolve_address("reward_model", pools, "127.0.0.1:9") == "127.0.0.1:9"
    assert resolve_address("judge", None, "127.0.0.1:9") == "127.0.0.1:9"
    with pytest.raises(ValueError, match=r"pool 'judge'.*\['encoder'\]"):
        resolve_address("judge", {"encoder": "x:1"}, None)
    assert base_url("h:1") == "http://h:1" and base_url("https://h:1/ ") == "https://h:1"
