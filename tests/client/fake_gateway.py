"""A scriptable stand-in for the gateway's `/score`, on loopback, in its own thread and event loop.

It speaks the gateway's HTTP contract (JSON bodies, error envelope, Retry-After) so the retry loop can
be driven through exact failure sequences (503, 429, dropped connections, slow answers) that a real gateway
produces only by accident. Tests of the real gateway live in tests/integrations.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bench.harness.processes import free_port


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False  # close the connection without answering


# behaviour(body, attempt_for_this_uid) -> Reply
Behaviour = Callable[[dict[str, Any], int], Reply]


def ok_reply(body: dict[str, Any], attempt: int) -> Reply:
    score = (body.get("extra_info") or {}).get("score", 1.0)
    return Reply(
        body={
            "uid": body.get("uid"),
            "score": score,
            "extra": {"attempt": attempt},
            "reward_fn": body.get("reward_fn") or "fake",
            "data_source": body.get("data_source"),
            "status": "ok",
            "error": None,
            "timings": {"total_s": 0.001},
        }
    )


class FakeGateway:
    def __init__(self, behaviour: Behaviour = ok_reply) -> None:
        self.behaviour = behaviour
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.bodies: list[dict[str, Any]] = []
        self.attempts: Counter[str] = Counter()
        self.arrivals: list[float] = []  # time.monotonic() of each /score request, in order
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.health_status = 200
        self.extra_routes: dict[str, Callable[[], Any]] = defaultdict(lambda: lambda: {})

    def __enter__(self) -> FakeGateway:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("fake gateway did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/score", self._score)
        app.router.add_get("/health", self._health)
        app.router.add_get("/reward_fns", self._reward_fns)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        self._loop.run_until_complete(site.start())
        self._started.set()
        self._loop.run_forever()

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"}, status=self.health_status)

    async def _reward_fns(self, request: web.Request) -> web.Response:
        return web.json_response([{"name": "fake"}])

    async def _score(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        uid = str(body.get("uid"))
        with self._lock:
            self.bodies.append(body)
            self.arrivals.append(time.monotonic())
            self.attempts[uid] += 1
            attempt = self.attempts[uid]
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            reply = self.behaviour(body, attempt)
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)  # the reply's scripted latency (the behaviour)
            if reply.drop:
                if request.transport is not None:
                    request.transport.close()
                raise web.HTTPInternalServerError()  # never reaches the client: the socket is gone
            return web.json_response(reply.body, status=reply.status, headers=reply.headers)
        finally:
            with self._lock:
                self.in_flight -= 1
