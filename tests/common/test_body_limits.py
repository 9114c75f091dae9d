"""`RequestBodyLimits` at the ASGI level: the edges the socket tests (tests/security/test_slow_bodies.py)
do not reach — what is replaced, what is left alone, and reads after the body."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from rewardfleet.services.common.body_limits import READ_TIMEOUT, TOO_LARGE, RequestBodyLimits


def _scope(headers: list[tuple[bytes, bytes]] | None = None) -> Scope:
    return {"type": "http", "method": "POST", "path": "/x", "headers": headers or []}


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return body


def _answering_app(status: int = 200) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await _read_body(receive)
        except Exception:
            # as FastAPI does with a failed read: an answer of its own, which the middleware must replace
            await send({"type": "http.response.start", "status": 400, "headers": []})
            await send({"type": "http.response.body", "body": b"bad"})
            return
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app


class Recorder:
    def __init__(self) -> None:
        self.sent: list[Message] = []
        self.refused: list[str] = []

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.sent[1]["body"])


def _messages(*chunks: bytes, then_hang: bool = False) -> Receive:
    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1 or then_hang}
             for i, c in enumerate(chunks)]  # fmt: skip

    async def receive() -> Message:
        if queue:
            return queue.pop(0)
        await asyncio.Event().wait()  # the client sends nothing more
        raise AssertionError("unreachable")

    return receive


async def test_a_body_that_stops_arriving_is_408_and_the_apps_answer_is_replaced() -> None:
    rec = Recorder()
    mw = RequestBodyLimits(
        _answering_app(), max_body_bytes=None, body_read_timeout_s=0.05, on_refused=rec.refused.append
    )
    await mw(_scope(), _messages(b"{", then_hang=True), rec.send)
    assert rec.status == 408 and len(rec.sent) == 2
    assert rec.body["error"]["type"] == "RequestTimeout"
    assert (b"connection", b"close") in rec.sent[0]["headers"]
    assert rec.refused == [READ_TIMEOUT]


async def test_content_length_over_the_limit_is_refused_before_the_app_runs() -> None:
    rec = Recorder()
    ran = False

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal ran
        ran = True

    mw = RequestBodyLimits(app, max_body_bytes=10, body_read_timeout_s=None, on_refused=rec.refused.append)
    await mw(_scope([(b"content-length", b"11")]), _messages(b""), rec.send)
    assert not ran and rec.status == 413 and "max_body_bytes 10" in rec.body["error"]["message"]
    assert rec.refused == [TOO_LARGE]


async def test_a_streamed_body_over_the_limit_is_413() -> None:
    rec = Recorder()
    mw = RequestBodyLimits(_answering_app(), max_body_bytes=10, body_read_timeout_s=5.0)
    await mw(_scope(), _messages(b"123456", b"789012"), rec.send)
    assert rec.status == 413


async def test_a_body_in_time_and_size_passes_unchanged() -> None:
    rec = Recorder()
    mw = RequestBodyLimits(_answering_app(201), max_body_bytes=100, body_read_timeout_s=5.0)
    await mw(_scope([(b"content-length", b"6")]), _messages(b"abc", b"def"), rec.send)
    assert rec.status == 201 and rec.sent[1]["body"] == b"abcdef"


async def test_reads_after_the_body_are_not_timed() -> None:
    """A route that watches for the client's disconnect after reading the body waits as long as it likes."""
    rec = Recorder()
    disconnect = asyncio.Event()
    chunks = [{"type": "http.request", "body": b"x", "more_body": False}]

    async def receive() -> Message:
        if chunks:
            return chunks.pop(0)
        await disconnect.wait()
        return {"type": "http.disconnect"}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await _read_body(receive)
        watch = asyncio.ensure_future(receive())
        await asyncio.sleep(0.2)  # four times the body timeout: the watch must still be waiting
        assert not watch.done()
        disconnect.set()
        assert (await watch)["type"] == "http.disconnect"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    await RequestBodyLimits(app, max_body_bytes=None, body_read_timeout_s=0.05)(_scope(), receive, rec.send)
    assert rec.status == 200


async def test_an_answer_already_started_is_not_replaced() -> None:
    rec = Recorder()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await _read_body(receive)

    mw = RequestBodyLimits(app, max_body_bytes=None, body_read_timeout_s=0.05)
    await mw(_scope(), _messages(b"{", then_hang=True), rec.send)
    assert [m["type"] for m in rec.sent] == ["http.response.start"] and rec.status == 200


async def test_an_error_of_the_app_itself_still_propagates() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    mw = RequestBodyLimits(app, max_body_bytes=10, body_read_timeout_s=1.0)
    with pytest.raises(RuntimeError, match="boom"):
        await mw(_scope(), _messages(b""), Recorder().send)


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="body_read_timeout_s"):
        RequestBodyLimits(_answering_app(), max_body_bytes=None, body_read_timeout_s=0)
