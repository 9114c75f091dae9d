"""The MCP SDK's side of `/mcp/<env>` (routes/mcp.py).

It is the SDK's low-level `Server` with the environment's tools, and its streamable-HTTP session manager,
stateless with JSON answers. Imported only when MCP is first called.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.requests import HTTPConnection
from starlette.types import Receive, Scope, Send

from rewardfleet.services.gateway.errors import GatewayError
from rewardfleet.services.gateway.routes.environment_sessions import SessionsOf, described

SESSION_HEADER = "x-environment-session"
SEED = "seed"
ENV_KEY = "rewardfleet.environment"  # where the handlers find the environment and tenant: the request's scope
TENANT_KEY = "rewardfleet.tenant"
HEADER_KEY = "rewardfleet.session_header"  # the header that carries the session's token on this endpoint


class McpServer:
    """The SDK's server with the environments' tools, and its session manager (run by routes/mcp.py)."""

    def __init__(self, sessions_of: SessionsOf) -> None:
        tools = _Tools(sessions_of)
        server: Server[Any] = Server(
            "rewardfleet-environments", on_list_tools=tools.list_tools, on_call_tool=tools.call_tool
        )
        self.manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)

    async def handle(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        env: str,
        tenant: str,
        header: str = SESSION_HEADER,
    ) -> None:
        """`header`: the session token's header (lower case); only the default one offers `seed`."""
        scope[ENV_KEY] = env
        scope[TENANT_KEY] = tenant
        scope[HEADER_KEY] = header
        await self.manager.handle_request(scope, receive, send)


class _Tools:
    """The handlers: each finds its environment and the caller's tenant on the HTTP request (routes/mcp.py
    put them there), and calls `Sessions`."""

    def __init__(self, sessions_of: SessionsOf) -> None:
        self.sessions_of = sessions_of

    def _where(self, ctx: Any) -> tuple[HTTPConnection, str, str]:
        request = ctx.request
        if not isinstance(request, HTTPConnection) or ENV_KEY not in request.scope:
            raise MCPError(types.INTERNAL_ERROR, "the environment endpoint was reached without its request")
        return request, request.scope[ENV_KEY], request.scope[TENANT_KEY]

    @staticmethod
    def _header(request: HTTPConnection) -> str:
        return str(request.scope.get(HEADER_KEY, SESSION_HEADER))

    async def list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        request, env, _ = self._where(ctx)
        specs = self.sessions_of(request).tools(env)
        tools = [
            types.Tool(name=s.name, description=s.description, input_schema=s.input_schema) for s in specs
        ]
        header = self._header(request)
        if header == SESSION_HEADER and request.headers.get(header) is None:
            tools.append(_seed_tool(env))
        return types.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        request, env, caller = self._where(ctx)
        sessions = self.sessions_of(request)
        arguments: Mapping[str, Any] = params.arguments or {}
        header = self._header(request)
        token = request.headers.get(header)
        try:
            if token is None:
                if params.name != SEED or header != SESSION_HEADER:
                    raise MCPError(
                        types.INVALID_PARAMS,
                        f"no environment session: open one (NeMo Gym's seed_session, or the {SEED!r} tool of "
                        f"/mcp/<env>) and send its token as the {header} header",
                    )
                opened = await sessions.open(caller, env, arguments)
                return _result({"session": opened.token, "id": opened.id})
            outcome = await sessions.call(caller, token, params.name, arguments)
        except GatewayError as exc:
            if exc.status_code == 422:  # arguments the schema refuses: the agent reads which, and retries
                return _failed(described(exc))
            code = types.INVALID_PARAMS if exc.status_code == 404 else types.INTERNAL_ERROR
            raise MCPError(code, described(exc), {"type": exc.type, "status": exc.status_code}) from None
        if outcome.is_error:
            return _failed(outcome.output if isinstance(outcome.output, str) else json.dumps(outcome.output))
        return _result(outcome.output)


def _seed_tool(env: str) -> types.Tool:
    return types.Tool(
        name=SEED,
        description=f"Opens a session of {env} with this task; send its `session` as {SESSION_HEADER}.",
        input_schema={"type": "object", "additionalProperties": True},
    )


def _result(output: Any) -> types.CallToolResult:
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    structured = output if isinstance(output, dict) else {"result": output}
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
