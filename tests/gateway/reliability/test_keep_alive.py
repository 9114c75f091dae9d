"""Idle client connections: the gateway keeps them `keep_alive_s` (default 75 s, above a balancer's own idle
timeout). With uvicorn's 5 s a balancer reusing its idle connection could send a request just as the gateway
closed it, and that request was lost (HAProxy answers such a loss with a silent close of the client's
connection: the fleet end-to-end test hit it)."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Any

from rewardfleet.services.gateway.config import GatewaySettings

REQUEST = b"GET /health HTTP/1.1\r\nHost: gateway\r\n\r\n"


def _ask(sock: socket.socket) -> bytes:
    """One request on the open connection; its whole response (headers and Content-Length body), which may
    arrive in several segments."""
    sock.sendall(REQUEST)
    data = b""
    while b"\r\n\r\n" not in data:
        data += _received(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    declared = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    assert declared, head
    length = int(declared.group(1))
    while len(body) < length:
        body += _received(sock)
    assert len(body) == length, data  # nothing beyond this response
    return head + b"\r\n\r\n" + body


def _received(sock: socket.socket) -> bytes:
    chunk = sock.recv(4096)
    assert chunk, "the connection closed mid-response"
    return chunk


def test_default_outlives_common_balancer_idle_timeouts() -> None:
    # HAProxy, nginx upstream keepalive_timeout and cloud load balancers idle at 60 s or less.
    assert GatewaySettings(reward_fns_dirs=[]).keep_alive_s > 60


def test_idle_connection_is_kept_keep_alive_s_then_closed(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory({"default_reward_fn": "quick", "keep_alive_s": 1})
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as sock:
        assert _ask(sock).startswith(b"HTTP/1.1 200")
        time.sleep(0.4)  # idle within keep_alive_s (the behaviour): the same connection answers
        assert _ask(sock).startswith(b"HTTP/1.1 200")
        sock.settimeout(10)  # idle until the gateway closes it: recv returns at the close, not after a guess
        assert sock.recv(4096) == b""
