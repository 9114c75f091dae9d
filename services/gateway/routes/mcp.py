"""MCP (streamable HTTP) for each environment of the fleet, at `/mcp/<env>`.

`tools/list` lists the environment's tools (name, description, `inputSchema` from the tool's signature);
`tools/call` calls one on the environment session named by the request's `X-Environment-Session` header
(its bearer token, from any protocol's open: NeMo Gym's `seed_session`, the Python client, or the `seed`
tool below). Without that header the list holds one more tool, `seed` (its input is the environment's task),
which opens a session and answers `{"session": token, "id": id}` for the client to send as that header.

Served stateless by the `mcp` SDK (low-level `Server`, `StreamableHTTPSessionManager(stateless=True,
json_response=True)`; mcp_server.py): an MCP connection keeps nothing in a gateway process, so any process
or replica serves any call, the session living in the fleet's state store; the initialize handshake (2025
protocol versions) and the 2026 per-request protocol both work. A tool's own failure (`ToolError`) and
arguments its schema refuses (each field named) are tool results with `isError: true`, which the agent
reads; an unknown tool or session, or a session limit, is a JSON-RPC error.

The SDK is imported (in a thread), and its session manager started, on the first MCP request, so a process
that serves no MCP never loads it (docs/environments.md: what it costs); the manager runs in a task of its
own that the gateway's lifespan stops (`run`).
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.requests import HTTPConnection
from starlette.types import Receive, Scope, Send

from rewardfleet.services.gateway.errors import GatewayError
from rewardfleet.services.gateway.routes.environment_sessions import SessionsOf, known

logger = logging.getLogger(__name__)
PATH = "/mcp/{env}"


class McpUnavailable(GatewayError):
    status_code = 503
    type = "McpUnavailable"


class McpEndpoints:
    """The ASGI endpoint of `/mcp/<env>`: puts the environment and the caller's tenant (resolved by the
    gateway's middleware on this request) on the request, then hands it to the SDK's session manager."""

    def __init__(self, sessions_of: SessionsOf) -> None:
        self.sessions_of = sessions_of
        self._manager: Any = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self._stop: asyncio.Event | None = None
        self._serving = False

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """The gateway's lifespan: MCP is served inside it, and its manager stopped when it ends."""
        self._lock, self._stop, self._serving = asyncio.Lock(), asyncio.Event(), True
        try:
            yield
        finally:
            self._serving = False
            self._stop.set()
            if self._task is not None:
                await asyncio.gather(self._task, return_exceptions=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        env = str(scope.get("path_params", {}).get("env", ""))
        await self.serve(scope, receive, send, env)

    async def serve(
        self, scope: Scope, receive: Receive, send: Send, env: str, header: str | None = None
    ) -> None:
        """MCP over `env`'s sessions for this request; `header`: the session token's header, when not
        `X-Environment-Session` (then no `seed` tool: sessions are opened elsewhere)."""
        sessions = self.sessions_of(HTTPConnection(scope))
        known(sessions, env)
        served = await self._started()
        extra = {} if header is None else {"header": header.lower()}
        await served.handle(scope, receive, send, env, sessions.current_tenant(), **extra)

    async def _started(self) -> Any:
        if self._manager is not None:
            return self._manager
        if not self._serving or self._lock is None:
            raise McpUnavailable("MCP is served only while the gateway runs")
        async with self._lock:
            if self._manager is None:
                try:  # in a thread: the loop must not wait for a slow import
                    module = await asyncio.to_thread(importlib.import_module, f"{__package__}.mcp_server")
                except ModuleNotFoundError as exc:
                    raise McpUnavailable(
                        f"MCP needs the mcp package ({exc.name} is missing): "
                        "pip install 'reward-fleet[environments]'"
                    ) from None
                served = module.McpServer(self.sessions_of)
                ready = asyncio.Event()
                # A context of its own: the manager's task must not carry the first caller's tenant.
                self._task = asyncio.create_task(self._serve(served, ready), context=contextvars.Context())
                waiter = asyncio.create_task(ready.wait())
                await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if not ready.is_set():
                    raise McpUnavailable("the MCP session manager did not start (see the log)")
                self._manager = served
        return self._manager

    async def _serve(self, served: Any, ready: asyncio.Event) -> None:
        assert self._stop is not None
        try:
            async with served.manager.run():
                ready.set()
                await self._stop.wait()
        except Exception:
            logger.exception("the MCP session manager stopped")
            raise
