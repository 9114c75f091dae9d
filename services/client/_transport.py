"""The client's HTTP/1.1 transport: keep-alive connections to one gateway, answers parsed by httptools.

A trainer that posts one sample per request spends its own CPU on every post, and that CPU is taken from the
training step. aiohttp's request machinery (request and response objects, a writer task, stream readers,
timers) costs about twice this transport's CPU a post (docs/architecture.md, "Elsewhere on the path"): it
sends the request bytes on an idle connection and parses the answer in `data_received` with httptools (the
C parser uvicorn uses). It speaks only what the client needs: one request at a time per connection,
`Content-Length` or chunked answers, keep-alive unless the server says otherwise, http or https.

Errors: a connection that could not be made raises the `OSError` of the connect; one that closed (or sent
something that is not HTTP) before a whole answer came raises `ConnectionLost`. Both are safe to retry: the
client resends with the same uid. Timeouts and cancellation are the caller's (`asyncio.timeout`): a
connection whose exchange did not finish is closed, never reused.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from dataclasses import dataclass
from typing import Any

import httptools
import yarl

USER_AGENT = b"rewardfleet-client"


class ConnectionLost(ConnectionError):
    """The connection closed, or the answer was not HTTP, before a whole answer came."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased; a repeated header keeps its last value
    body: bytes


class _Connection(asyncio.Protocol):
    """One connection; `exchange` sends one request and resolves with its answer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []

    # -- asyncio.Protocol --------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionLost(f"the answer is not HTTP: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionLost(f"connection closed before a whole answer came ({exc or 'by the server'})"))

    # -- httptools callbacks -----------------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter, self._waiter = self._waiter, None
        answer = Answer(self._parser.get_status_code(), self._headers, b"".join(self._body))
        if not self._parser.should_keep_alive():
            self.close()
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    # -- use -------------------------------------------------------------------------------------------
    async def exchange(self, request: bytes) -> Answer:
        assert self.transport is not None and self._waiter is None
        self._headers, self._body = {}, []
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self._waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, exc: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


class Transport:
    """Requests to one base URL, at most `limit` connections at once (callers wait for one)."""

    def __init__(self, base_url: str, limit: int, headers: dict[str, str]) -> None:
        url = yarl.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url must be http:// or https://host[:port], got {base_url!r}")
        self._host = url.host
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if url.scheme == "https" else None
        self._prefix = url.raw_path.rstrip("/")
        host = f"[{url.raw_host}]" if ":" in (url.raw_host or "") else url.raw_host
        if not url.is_default_port():
            host = f"{host}:{url.port}"
        fixed = {"Host": str(host), "User-Agent": USER_AGENT.decode(), "Accept": "application/json"}
        if url.user is not None and not any(k.lower() == "authorization" for k in headers):
            pair = f"{url.user}:{url.password or ''}".encode()
            fixed["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        self._head = b"".join(_header(k, v) for k, v in {**fixed, **headers}.items())
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def request(self, method: str, path: str, body: bytes | None) -> Answer:
        """`body`, when given, is JSON (the gateway's only request body)."""
        target = (self._prefix + path).encode("latin-1")
        head = b"%s %s HTTP/1.1\r\n%s" % (method.encode("ascii"), target, self._head)
        if body is not None:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        request = head + b"\r\n" + (body or b"")
        async with self._slots:
            conn = await self._connection()
            try:
                answer = await conn.exchange(request)
            except BaseException:
                self._discard(conn)  # cancelled, timed out or lost: the answer may still come; never reuse
                raise
            if conn.closed:
                self._discard(conn)
            else:
                self._idle.append(conn)
            return answer

    async def _connection(self) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
            self._discard(conn)
        loop = asyncio.get_running_loop()
        server_hostname = self._host if self._ssl is not None else None
        _, conn = await loop.create_connection(
            _Connection, self._host, self._port, ssl=self._ssl, server_hostname=server_hostname
        )
        self._open.add(conn)
        return conn

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        self._open.discard(conn)

    def close(self) -> None:
        for conn in list(self._open):
            self._discard(conn)
        self._idle.clear()


def _header(name: str, value: Any) -> bytes:
    text = str(value)
    if any(c in text for c in "\r\n\0") or any(c in name for c in "\r\n\0:"):
        raise ValueError(f"header {name!r}: line breaks and NUL are not allowed in HTTP headers")
    return f"{name}: {text}\r\n".encode("latin-1")
