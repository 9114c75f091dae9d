"""A lean closed-loop HTTP/1.1 load generator: `concurrency` keep-alive connections, each POSTs, reads the
whole answer, POSTs again (the same closed loop as bench/load.py), on uvloop with a bare asyncio protocol.

Why a second one: on a 2-core machine the load generator shares the cores with what it measures. aiohttp's
client spends about 400 µs of CPU per request, more than the gateway itself, so a benchmark of "the
gateway's cost with X ÷ without X" mostly measured aiohttp. This one spends a few tens of µs: a request is
a pre-built header plus the body, an answer is found by its Content-Length (what uvicorn sends for a JSON
response; anything else is counted as an error and its connection is closed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast
from urllib.parse import urlsplit

import uvloop

from bench.load import LoadResult


class _Connection(asyncio.Protocol):
    """One keep-alive connection running the closed loop until `stop_at`."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.sent_at = 0.0
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is one, without the subclass
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.sent_at = time.perf_counter()
        if self.sent_at >= self.run.stop_at:
            self.transport.close()
            return
        self.transport.write(self.run.next_request())

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buffer[:end]).lower()
        start = head.find(b"\r\ncontent-length:")
        if start < 0:
            self.run.errors += 1
            assert self.transport is not None
            self.transport.close()
            return
        line_end = head.find(b"\r\n", start + 2)
        length = int(head[start + 17 : line_end if line_end >= 0 else len(head)])
        if len(self.buffer) < end + 4 + length:
            return
        ok = head.startswith(b"http/1.1 200")
        del self.buffer[: end + 4 + length]
        self.run.answered(self.sent_at, time.perf_counter(), ok)
        self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        if time.perf_counter() < self.run.stop_at:
            self.run.errors += 1  # closed by the server (or an unreadable answer) before the end
        if not self.done.done():
            self.done.set_result(None)


class _Run:
    def __init__(self, host: str, path: str, body: bytes | Callable[[int], bytes], stop_at: float) -> None:
        self.head = (
            f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: "
        ).encode()
        self.body = body
        self.stop_at = stop_at
        self.measure_from = 0.0
        self.sent = 0
        self.errors = 0
        self.latencies: list[float] = []

    def next_request(self) -> bytes:
        self.sent += 1
        data = self.body if isinstance(self.body, bytes) else self.body(self.sent)
        return self.head + str(len(data)).encode() + b"\r\n\r\n" + data

    def answered(self, t0: float, t1: float, ok: bool) -> None:
        if t0 >= self.measure_from and t1 <= self.stop_at:
            if ok:
                self.latencies.append(t1 - t0)
            else:
                self.errors += 1


async def _load(
    url: str, body: bytes | Callable[[int], bytes], concurrency: int, duration_s: float, warmup_s: float
) -> LoadResult:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    start = time.perf_counter()
    run = _Run(parts.netloc, parts.path or "/", body, start + warmup_s + duration_s)
    run.measure_from = start + warmup_s
    loop = asyncio.get_running_loop()
    connections = [
        (await loop.create_connection(lambda: _Connection(run), host, port))[1] for _ in range(concurrency)
    ]
    try:  # bounded: a gateway that stops answering ends the run 30 s after its planned end
        async with asyncio.timeout(warmup_s + duration_s + 30):
            await asyncio.gather(*(c.done for c in connections))
    except TimeoutError:
        run.errors += sum(1 for c in connections if not c.done.done())
    finally:
        for c in connections:
            if c.transport is not None:
                c.transport.close()
    return LoadResult(len(run.latencies), run.errors, duration_s, run.latencies)


def run_raw_load(
    url: str,
    body: bytes | Callable[[int], bytes],
    concurrency: int = 64,
    duration_s: float = 8.0,
    warmup_s: float = 2.0,
) -> LoadResult:
    """`bench.load.run_load`'s contract (same closed loop, same result), at a fraction of its CPU."""
    return uvloop.run(_load(url, body, concurrency, duration_s, warmup_s))
