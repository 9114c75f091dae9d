"""Slow bodies: a client that sends the headers and then a body that never completes (one byte of a declared
length, a chunked body that trickles, a chunked body that never ends) must not hold a slot.

Against a real gateway (one admission slot, no queue: a held slot is a 429 for everyone else) and a real
model server, over raw sockets on 127.0.0.1 so the attack sends exactly the bytes it means to. Each attack
gets 408 once `body_read_timeout_s` has passed, the connection is closed, the metric counts it, and the next
honest request is served.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench.harness.processes import wait_until_in_flight
from bench.harness.tiny_models import build_tiny_llama
from tests.support.model_server import RunningServer, start_server

BODY_READ_TIMEOUT_S = 1.0
# The longest a test waits for the server's answer. Without a body read timeout no answer ever comes, and the
# test fails here instead of hanging.
ANSWER_WAIT_S = 30.0
MAX_CHUNKS = 2000  # the trickling thread's bound, whatever the server does


class SlowBody:
    """One attack: headers, then `first` bytes, then (chunked) `chunk` every `every_s` until refused."""

    def __init__(self, port: int, path: str, kind: str, headers: dict[str, str] | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WAIT_S)
        self.kind = kind
        self.stop = threading.Event()
        chunked = kind != "declared_length"
        framing = {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": "1000"}
        lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
        lines += [f"{k}: {v}" for k, v in {**framing, **(headers or {})}.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.sent_at = time.monotonic()
        if kind == "declared_length":
            self.sock.sendall(b"{")  # one byte of the declared thousand, then nothing
            self.thread = None
        else:
            chunk, every_s = (b"{", 0.1) if kind == "chunked_trickle" else (b" " * 512, 0.02)
            self.thread = threading.Thread(target=self._trickle, args=(chunk, every_s), daemon=True)
            self.thread.start()

    def _trickle(self, chunk: bytes, every_s: float) -> None:
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        for _ in range(MAX_CHUNKS):
            if self.stop.wait(every_s):
                return
            try:
                self.sock.sendall(frame)
            except OSError:  # the server closed the connection: the attack is over
                return

    def answer(self) -> tuple[int, dict[str, str], dict[str, Any], float]:
        """The server's answer (status, headers, JSON body) and the seconds from the headers to it."""
        resp = http.client.HTTPResponse(self.sock)
        try:
            resp.begin()
            body = resp.read()
        finally:
            waited = time.monotonic() - self.sent_at
            self.stop.set()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, json.loads(body), waited

    def server_closed(self) -> bool:
        """True once the server has closed its side (a read returns EOF, or the connection was reset)."""
        self.sock.settimeout(ANSWER_WAIT_S)
        try:
            while self.sock.recv(65536):
                pass
        except OSError:
            pass
        return True

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.sock.close()


ATTACKS = ("declared_length", "chunked_trickle", "chunked_endless")


def _metric(text: str, name: str, reason: str) -> float:
    prefix = f'{name}{{reason="{reason}"}} '
    return sum(float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))


@pytest.fixture
def one_slot_gateway(gateway_factory: Any) -> Any:
    return gateway_factory(
        {
            "default_reward_fn": "quick",
            "max_inflight_requests": 1,
            "max_queued_requests": 0,
            "body_read_timeout_s": BODY_READ_TIMEOUT_S,
        }
    )


@pytest.mark.parametrize("kind", ATTACKS)
def test_gateway_answers_408_and_frees_the_slot(one_slot_gateway: Any, kind: str) -> None:
    gw = one_slot_gateway
    sample = {"data_source": "x", "solution_str": "abc", "ground_truth": "abc"}
    attack = SlowBody(gw.port, "/score", kind)
    try:
        wait_until_in_flight(gw.url, 1)
        # While the body is outstanding the slot is taken: this is what the attack costs everyone else.
        assert httpx.post(f"{gw.url}/score", json=sample, timeout=30).status_code == 429
        status, headers, body, waited = attack.answer()
        assert status == 408, body
        assert body["error"]["type"] == "RequestTimeout"
        assert "body_read_timeout_s" in body["error"]["message"]
        assert headers["connection"] == "close"
        assert waited >= BODY_READ_TIMEOUT_S * 0.9
        assert attack.server_closed()
    finally:
        attack.close()
    # The slot is free again: an honest request is served.
    resp = httpx.post(f"{gw.url}/score", json=sample, timeout=30)
    assert resp.status_code == 200 and resp.json()["status"] == "ok", resp.text
    metrics = httpx.get(f"{gw.url}/metrics", timeout=10).text
    assert _metric(metrics, "rewardfleet_gateway_request_body_refusals_total", "read_timeout") == 1.0
    assert _metric(metrics, "rewardfleet_gateway_request_body_refusals_total", "too_large") == 0.0
    assert 'rewardfleet_gateway_requests_total{route="/score",status="408"} 1.0' in metrics


def test_gateway_body_over_the_size_limit_while_trickling_is_413(gateway_factory: Any) -> None:
    """The two limits share one reader: a chunked body that passes max_body_bytes in time is 413, not 408."""
    gw = gateway_factory({"default_reward_fn": "quick", "max_body_bytes": 4096, "body_read_timeout_s": 30})
    attack = SlowBody(gw.port, "/score", "chunked_endless")
    try:
        status, _, body, _ = attack.answer()
    finally:
        attack.close()
    assert status == 413 and body["error"]["type"] == "PayloadTooLarge", body
    metrics = httpx.get(f"{gw.url}/metrics", timeout=10).text
    assert _metric(metrics, "rewardfleet_gateway_request_body_refusals_total", "too_large") == 1.0


@pytest.fixture(scope="module")
def keyed_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("slow-bodies")
    model = build_tiny_llama(root / "llama-rm", kind="seq_cls")
    server = start_server(
        model, root, "--body-read-timeout-s", str(BODY_READ_TIMEOUT_S), "--api-key", KEY, name="slow-bodies"
    )
    yield server
    server.process.stop()


KEY = "sk-slow-bodies-0123456789"


@pytest.mark.parametrize("kind", ATTACKS)
def test_model_server_answers_408_in_sglangs_shape(keyed_model_server: RunningServer, kind: str) -> None:
    server = keyed_model_server
    port = int(server.url.rsplit(":", 1)[1])
    auth = {"Authorization": f"Bearer {KEY}"}
    before = _metric(
        httpx.get(f"{server.url}/metrics", timeout=10).text,
        "rewardfleet_model_server_request_body_refusals_total",
        "read_timeout",
    )
    attack = SlowBody(port, "/classify", kind, headers=auth)
    try:
        status, headers, body, waited = attack.answer()
        assert attack.server_closed()
    finally:
        attack.close()
    assert status == 408, body
    assert body["object"] == "error" and body["code"] == 408 and "body_read_timeout_s" in body["message"]
    assert headers["connection"] == "close" and waited >= BODY_READ_TIMEOUT_S * 0.9
    resp = httpx.post(f"{server.url}/classify", json={"text": "hello"}, headers=auth, timeout=60)
    assert resp.status_code == 200, resp.text
    after = _metric(
        httpx.get(f"{server.url}/metrics", timeout=10).text,
        "rewardfleet_model_server_request_body_refusals_total",
        "read_timeout",
    )
    assert after == before + 1


def test_model_server_without_a_key_is_not_held_either(keyed_model_server: RunningServer) -> None:
    """An unauthenticated slow body is refused (401) before its body is read at all."""
    port = int(keyed_model_server.url.rsplit(":", 1)[1])
    attack = SlowBody(port, "/classify", "declared_length")
    try:
        status, _, body, _ = attack.answer()
    finally:
        attack.close()
    assert status == 401 and body == {"error": "Unauthorized"}
