"""`RequestMetrics` reports each request once to the service's observer: start, response start, end."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from rewardfleet.services.common.request_metrics import RequestMetrics


class Observer:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def request_started(self, scope: Scope) -> None:
        self.events.append(("started", scope["path"]))

    def response_started(self, scope: Scope, status: int, elapsed_s: float) -> None:
        self.events.append(("response", status, elapsed_s >= 0))

    def request_finished(self, scope: Scope, status: int, elapsed_s: float) -> None:
        self.events.append(("finished", status, elapsed_s >= 0))


async def _noop_send(message: Message) -> None:
    pass


async def _receive() -> Message:
    return {"type": "http.request", "body": b""}


async def test_an_answered_request() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    obs = Observer()
    await RequestMetrics(app, obs)({"type": "http", "path": "/x", "headers": []}, _receive, _noop_send)
    assert obs.events == [("started", "/x"), ("response", 204, True), ("finished", 204, True)]


async def test_an_app_that_raises_is_a_500() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    obs = Observer()
    with pytest.raises(RuntimeError):
        await RequestMetrics(app, obs)({"type": "http", "path": "/x", "headers": []}, _receive, _noop_send)
    assert obs.events == [("started", "/x"), ("finished", 500, True)]


async def test_lifespan_is_not_a_request() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        pass

    obs = Observer()
    await RequestMetrics(app, obs)({"type": "lifespan"}, _receive, _noop_send)
    assert obs.events == []
