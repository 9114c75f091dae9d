"""OpenEnv's HTTP `POST /mcp`: JSON-RPC 2.0 over one POST, as its `MCPToolClient` speaks it.

OpenEnv's HTTP `POST /mcp` (`openenv` 0.10, production mode): JSON-RPC 2.0 over one POST, as its
`MCPToolClient` speaks it.

    openenv/session/create  {}                              -> {"session_id"}   (the default task)
    tools/list              {session_id?}                   -> {"tools": [{name, description, input_schema}]}
    tools/call              {name, arguments, session_id?}  -> {content, structured_content, data, is_error}
    openenv/session/close   {session_id}                    -> {"session_id", "closed": true}

The `session_id` is the environment session's bearer token (OpenEnv's client keeps it and attaches its
`/ws` to the same session with `?session_id=`); without one, `tools/call` runs on a session opened for that
call and closed after it, as OpenEnv builds a temporary environment. Refusals are JSON-RPC errors in a 200
answer, as OpenEnv's server sends them (its client raises them as `RuntimeError`): -32602 for an unknown
session (also another tenant's), tool or method parameters and arguments the tool's schema refuses (naming
each field), -32000 for the tool's own `ToolError`, -32603 otherwise; a body that is not a JSON-RPC request
is a 400 naming the field.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import from_json

from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.errors import GatewayError
from rewardfleet.services.gateway.routes import openenv_wire as wire
from rewardfleet.services.gateway.routes.environment_sessions import described

INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR, TOOL_ERROR = (
    -32600,
    -32601,
    -32602,
    -32603,
    -32000,
)


class JsonRpcRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    jsonrpc: str = Field(pattern=r"^2\.0$")
    method: str = Field(max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)
    id: int | str | None = None


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def refused(raw: bytes) -> JSONResponse | None:
    """A 400 naming the field for a body that is not a JSON-RPC request; None for one that is."""
    try:
        JsonRpcRequest.model_validate(from_json(raw or b"null"))
    except ValueError as exc:
        if isinstance(exc, ValidationError):
            fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())
            return _error_response(None, INVALID_REQUEST, f"Invalid Request: {fields}", status=400)
        return _error_response(None, -32700, f"Parse error: {exc}", status=400)
    return None


async def answer(sessions: Sessions, caller: str, env: str, raw: bytes) -> JSONResponse:
    request = JsonRpcRequest.model_validate(from_json(raw))
    try:
        result = await _result(sessions, caller, env, request)
    except RpcError as exc:
        return _error_response(request.id, exc.code, exc.message, data=exc.data)
    except GatewayError as exc:
        code = INVALID_PARAMS if exc.status_code in (404, 422) else INTERNAL_ERROR
        return _error_response(
            request.id, code, described(exc), data={"type": exc.type, "status": exc.status_code}
        )
    return JSONResponse({"jsonrpc": "2.0", "id": request.id, "result": result})


async def _result(sessions: Sessions, caller: str, env: str, request: JsonRpcRequest) -> dict[str, Any]:
    params = request.params
    session_id = params.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        raise RpcError(INVALID_PARAMS, "Invalid params - 'session_id' is a string")
    if request.method == "openenv/session/create":
        opened = await sessions.open(caller, env, {})
        return {"session_id": opened.token}
    if request.method == "openenv/session/close":
        if not session_id:
            raise RpcError(INVALID_PARAMS, "Invalid params - 'session_id' is required")
        await sessions.close(caller, session_id)
        return {"session_id": session_id, "closed": True}
    if request.method == "tools/list":
        if session_id:
            await sessions.state(caller, session_id)  # an unknown session is refused, as OpenEnv does
        return wire.tools_observation(sessions.tools(env))
    if request.method == "tools/call":
        return await _call(sessions, caller, env, params, session_id)
    raise RpcError(METHOD_NOT_FOUND, f"Method not found: {request.method[:128]}")


async def _call(
    sessions: Sessions, caller: str, env: str, params: dict[str, Any], session_id: str | None
) -> dict[str, Any]:
    name, arguments = params.get("name"), params.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise RpcError(INVALID_PARAMS, "Missing 'name' in params")
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params - 'arguments' is an object")
    if name not in {spec.name for spec in sessions.tools(env)}:
        raise RpcError(INVALID_PARAMS, f"Tool not found: {name[:128]}")
    token = session_id or (await sessions.open(caller, env, {})).token
    try:
        outcome = await sessions.call(caller, token, name, arguments)
    finally:
        if session_id is None:
            with contextlib.suppress(GatewayError):
                await sessions.close(caller, token)
    if outcome.is_error:
        raise RpcError(TOOL_ERROR, str(outcome.output), data={"type": "ToolError"})
    result: dict[str, Any] = wire.tool_result(name, outcome.output, False)["result"]
    return result


def _error_response(
    request_id: Any, code: int, message: str, *, data: dict[str, Any] | None = None, status: int = 200
) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=status)
