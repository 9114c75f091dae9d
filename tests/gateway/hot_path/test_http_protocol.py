"""The gateway's HTTP protocol (hot_path/http_protocol.py): uvicorn's httptools protocol with lazily made
events and a list for the pipeline. Served by a real uvicorn on 127.0.0.1 (loaded by the import path the
CLI gives uvicorn), and spoken to over raw sockets where it matters: pipelined requests, a client that stops
reading a large answer (write flow control), a client that leaves mid-body (`receive()` woken by the
disconnect)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from bench.harness.processes import free_port
from bench.harness.waiting import eventually_async
from rewardfleet.services.gateway.hot_path.http_protocol import PROTOCOL, GatewayHttpProtocol, LazyEvent

BIG = 8 * 1024 * 1024  # far above the transport's write high-water mark


class _App:
    def __init__(self) -> None:
        self.protocols: list[Any] = []
        self.disconnected = asyncio.Event()
        self.body_started = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        if path == "/big":  # a first part that fills the write buffer: the second one waits for the drain
            length = str(BIG + 1).encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-length", length)]}
            )
            await send({"type": "http.response.body", "body": b"x" * BIG, "more_body": True})
            await send({"type": "http.response.body", "body": b"y"})
            return
        elif path == "/wait-body":
            self.body_started.set()
            while (message := await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
            return
        else:
            chunks = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body = path.encode() + b":" + b"".join(chunks)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def _served(app: _App) -> AsyncIterator[int]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=PROTOCOL, loop="none", log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await eventually_async(lambda: server.started, what="uvicorn started")
    assert config.http_protocol_class is GatewayHttpProtocol
    try:
        yield port
    finally:
        server.should_exit = True
        await task


async def _read_answer(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return await reader.readexactly(length)


def _post(path: str, body: bytes) -> bytes:
    return b"POST %s HTTP/1.1\r\nhost: t\r\ncontent-length: %d\r\n\r\n%s" % (path.encode(), len(body), body)


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with _served(_App()) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            _post("/a", b"1") + _post("/b", b"22") + _post("/c", b"333")
        )  # one write, three requests
        answers = [await asyncio.wait_for(_read_answer(reader), 10) for _ in range(3)]
        writer.close()
    assert answers == [b"/a:1", b"/b:22", b"/c:333"]


async def test_a_client_that_stops_reading_gets_the_whole_answer_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drains: list[bool] = []
    original = LazyEvent.wait

    async def counted(self: LazyEvent) -> bool:
        drains.append(self.is_set())
        return await original(self)

    monkeypatch.setattr(LazyEvent, "wait", counted)
    async with _served(_App()) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**24)
        writer.write(b"GET /big HTTP/1.1\r\nhost: t\r\n\r\n")
        await asyncio.sleep(0.5)  # not reading: the server's write buffer fills and it pauses writing
        body = await asyncio.wait_for(_read_answer(reader), 30)
        writer.close()
    assert len(body) == BIG + 1 and body.endswith(b"xy")
    assert False in drains  # the answer's write waited on the flow control's (lazy) event


async def test_a_client_gone_mid_body_wakes_receive() -> None:
    app = _App()
    async with _served(app) as port:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /wait-body HTTP/1.1\r\nhost: t\r\ncontent-length: 100\r\n\r\nabc")
        await asyncio.wait_for(app.body_started.wait(), 10)
        writer.close()
        await asyncio.wait_for(app.disconnected.wait(), 10)


async def test_lazy_event_is_an_event() -> None:
    event = LazyEvent()
    assert not event.is_set() and event._waiters is None  # nothing allocated until a wait
    waiters = [asyncio.create_task(event.wait()) for _ in range(3)]
    await asyncio.sleep(0)  # one event-loop turn: the three wait
    assert not any(w.done() for w in waiters)
    event.set()
    assert await asyncio.gather(*waiters) == [True, True, True]
    assert await event.wait() is True  # set: returns at once
    event.clear()
    cancelled = asyncio.create_task(event.wait())
    await asyncio.sleep(0)  # one event-loop turn: it waits
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert not event._waiters  # a cancelled waiter is not left behind
    event.set()
    assert event.is_set()
