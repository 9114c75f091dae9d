"""The client's HTTP/1.1 transport (services/client/_transport.py) against a scripted server on 127.0.0.1.

The server is asyncio's own: each test says what it answers, byte for byte, so the edge cases a proxy or a
restarting gateway produces (chunked answers, `Connection: close`, a close mid-answer, bytes that are not
HTTP, an answer that comes after the caller gave up) are exact. The happy path against the real gateway is
covered by every other client test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.services.client._transport import ConnectionLost, Transport

Handler = Callable[[int, bytes, asyncio.StreamWriter], Awaitable[None]]


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


@dataclass
class Server:
    url: str
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    handler: Handler | None = None


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server("")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        number = state.connections
        try:
            while (request := await _read_request(reader)) is not None:
                state.requests.append(request)
                assert state.handler is not None
                await state.handler(number, request, writer)
                if writer.is_closing():
                    return
        finally:
            writer.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", 0)
    state.url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    async with srv:
        yield state
        srv.close()


def echo_connection() -> Handler:
    async def handler(number: int, request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(ok(b'{"connection": %d}' % number))

    return handler


async def test_keep_alive_reuses_one_connection(server: Server) -> None:
    server.handler = echo_connection()
    transport = Transport(server.url, 4, {"Authorization": "Bearer k"})
    answers = [await transport.request("POST", "/score", b'{"a": 1}') for _ in range(5)]
    assert [a.body for a in answers] == [b'{"connection": 1}'] * 5 and server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /score HTTP/1.1\r\n")
    for line in (b"Host: 127.0.0.1:", b"Authorization: Bearer k", b"Content-Length: 8", b"Content-Type: app"):
        assert line in first, first
    assert first.endswith(b'\r\n\r\n{"a": 1}')
    transport.close()


async def test_a_path_prefix_in_the_base_url_is_kept(server: Server) -> None:
    server.handler = echo_connection()
    transport = Transport(server.url + "/rf/", 1, {})
    assert (await transport.request("GET", "/health", None)).status == 200
    assert server.requests[0].startswith(b"GET /rf/health HTTP/1.1\r\n")
    assert b"Content-Length" not in server.requests[0]
    transport.close()


async def test_chunked_answer_and_headers(server: Server) -> None:
    async def handler(number: int, request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\nRetry-After: 3\r\n\r\n"
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )

    server.handler = handler
    transport = Transport(server.url, 1, {})
    answer = await transport.request("POST", "/score", b"{}")
    assert (answer.status, answer.body, answer.headers["retry-after"]) == (429, b"hello world", "3")
    assert (await transport.request("POST", "/score", b"{}")).body == b"hello world"
    assert server.connections == 1  # a chunked answer keeps the connection
    transport.close()


async def test_connection_close_is_honoured(server: Server) -> None:
    async def handler(number: int, request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(ok(b'{"connection": %d}' % number, b"Connection: close\r\n"))

    server.handler = handler
    transport = Transport(server.url, 1, {})
    bodies = [(await transport.request("GET", "/x", None)).body for _ in range(3)]
    assert bodies == [b'{"connection": 1}', b'{"connection": 2}', b'{"connection": 3}']
    transport.close()


async def test_a_connection_the_server_closed_while_idle_is_not_reused(server: Server) -> None:
    async def handler(number: int, request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(ok(b'{"connection": %d}' % number))  # keep-alive announced, then closed (idle timeout)
        await writer.drain()
        writer.close()

    server.handler = handler
    transport = Transport(server.url, 1, {})
    assert (await transport.request("GET", "/x", None)).body == b'{"connection": 1}'
    # Until the close reaches the client: its idle connection has seen the end of the stream.
    await eventually_async(lambda: all(c.closed for c in transport._idle), what="the close seen")
    assert (await transport.request("GET", "/x", None)).body == b'{"connection": 2}'
    transport.close()


@pytest.mark.parametrize(
    "reply", [b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"half', b"SSH-2.0-OpenSSH\r\n\r\n", b""]
)
async def test_a_broken_answer_is_connection_lost(server: Server, reply: bytes) -> None:
    async def handler(number: int, request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(reply)
        await writer.drain()
        writer.close()

    server.handler = handler
    transport = Transport(server.url, 1, {})
    with pytest.raises(ConnectionLost):
        await transport.request("POST", "/score", b"{}")
    transport.close()


async def test_an_answer_after_a_timeout_never_reaches_the_next_request(server: Server) -> None:
    """The first request times out; its late answer must not be read as the second request's."""

    async def handler(number: int, request: bytes, writer: asyncio.StreamWriter) -> None:
        if b"slow" in request:
            await asyncio.sleep(0.3)  # a slow server (the behaviour): answers after the client gave up
        writer.write(ok(b'{"for": "%s"}' % request.rsplit(b"\r\n\r\n", 1)[1]))

    server.handler = handler
    transport = Transport(server.url, 1, {})
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await transport.request("POST", "/score", b"slow")
    answer = await transport.request("POST", "/score", b"fast")
    assert answer.body == b'{"for": "fast"}'
    assert server.connections == 2  # the abandoned connection was closed, not reused
    transport.close()


async def test_at_most_limit_connections(server: Server) -> None:
    async def handler(number: int, request: bytes, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.02)  # the server's own work per request (the behaviour)
        writer.write(ok(b"{}"))

    server.handler = handler
    transport = Transport(server.url, 3, {})
    await asyncio.gather(*(transport.request("GET", "/x", None) for _ in range(12)))
    assert server.connections == 3 and len(server.requests) == 12
    transport.close()


def test_header_injection_and_bad_urls_are_refused() -> None:
    with pytest.raises(ValueError, match="line breaks"):
        Transport("http://127.0.0.1:1", 1, {"Authorization": "Bearer k\r\nX-Admin: 1"})
    with pytest.raises(ValueError, match="http"):
        Transport("ftp://127.0.0.1:1", 1, {})


async def test_credentials_in_the_url_are_sent_as_basic_auth(server: Server) -> None:
    server.handler = echo_connection()
    transport = Transport(server.url.replace("http://", "http://user:pw@"), 1, {})
    await transport.request("GET", "/x", None)
    assert b"Authorization: Basic dXNlcjpwdw==\r\n" in server.requests[0]
    transport.close()
