"""The gateway's HTTP protocol: uvicorn's httptools one, with less held per connection.

A post in flight holds its connection's protocol state for as long as its function runs: at 65,536 posts in
flight that state is most of the gateway's memory (issue 44, docs/BENCHMARKS.md). uvicorn's protocol keeps
three `collections.deque`s a connection that are nearly always empty, 760 bytes each (a deque allocates a
64-slot block up front): the queue of pipelined requests, and one inside each of two `asyncio.Event`s (the
request's `message_event`, which wakes `receive()`, and the flow control's "writable" event, which only
matters while the socket's write buffer is full). Here they are replaced, right after uvicorn makes them,
with objects that behave the same and allocate only when used: a list for the pipeline (HTTP pipelining is
rare), and `LazyEvent`, an event whose waiters' list is made by the first `wait()`.

Nothing else of uvicorn's is changed. Where uvicorn does not have the attribute this class replaces (another
version), the original is left as it is. `uvicorn.run(http=PROTOCOL)` takes it by import path, so worker
processes (`--processes`) load it too.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

PROTOCOL = "rewardfleet.services.gateway.hot_path.http_protocol:GatewayHttpProtocol"


class LazyEvent:
    """`asyncio.Event`'s `set`/`clear`/`is_set`/`wait`, without a deque until something waits."""

    __slots__ = ("_value", "_waiters")

    def __init__(self, value: bool = False) -> None:
        self._value = value
        self._waiters: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if self._value:
            return
        self._value = True
        waiters, self._waiters = self._waiters, None
        for future in waiters or ():
            if not future.done():
                future.set_result(None)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> bool:
        if self._value:
            return True
        future = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(future)
        try:
            await future
        finally:
            if self._waiters is not None and future in self._waiters:
                self._waiters.remove(future)
        return True


class _Pipeline(list[Any]):
    """The pipelined requests, in order: uvicorn adds with `appendleft` and takes with `pop`."""

    __slots__ = ()

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)


class GatewayHttpProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if isinstance(getattr(self, "pipeline", None), deque):
            self.pipeline = _Pipeline()  # type: ignore[assignment]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        flow = self.flow
        if isinstance(flow, FlowControl) and isinstance(
            getattr(flow, "_is_writable_event", None), asyncio.Event
        ):
            flow._is_writable_event = LazyEvent(value=not flow.write_paused)  # type: ignore[assignment]

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        event = getattr(cycle, "message_event", None)
        if type(event) is asyncio.Event:  # made just now; nothing waits on it yet (its task has not run)
            cycle.message_event = LazyEvent(value=event.is_set())  # type: ignore[assignment]
