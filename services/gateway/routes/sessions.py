"""The gateway's own JSON protocol for environment sessions (what `rewardfleet.services.client` speaks).

    GET  /environments      -> {"environments": [{"name", "tools": [{name, description, input_schema}]}]}
    POST /sessions/open     {"env", "task": {...}} -> {"session_id", "token", "env"}
    POST /sessions/call     {"token", "tool", "arguments": {...}} -> {"output", "is_error"}
    POST /sessions/verify   {"token", "body": {...}} -> {"reward", "reward_components", "extras"}
    POST /sessions/state    {"token"} -> {"id", "env", "tool_calls", "state"}
    POST /sessions/close    {"token"} -> {}

The token travels in the body (never in a URL, so no access log shows it). Errors are the gateway's
envelope (environments/errors.py); a tool's own `ToolError` is `is_error: true` with its message as output.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from rewardfleet.services.common.json_body import parse_json_body
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.facade import gateway_of

router = APIRouter(tags=["environments"])
CALL_PATH = "/sessions/call"
TOKEN_MAX_CHARS = 128  # a token is 43; anything longer is refused while parsing


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpenBody(_Strict):
    env: str = Field(max_length=64)
    task: dict[str, Any] = Field(default_factory=dict)


class TokenBody(_Strict):
    token: str = Field(max_length=TOKEN_MAX_CHARS)


class CallBody(TokenBody):
    tool: str = Field(max_length=64)
    arguments: dict[str, Any] = Field(default_factory=dict)


class VerifyBody(TokenBody):
    body: dict[str, Any] = Field(default_factory=dict)


def _sessions(request: Request) -> Sessions:
    sessions = gateway_of(request.app.state).sessions
    if sessions is None:
        raise RuntimeError("environment sessions are not started")
    return sessions


@router.get("/environments")
async def environments(request: Request) -> JSONResponse:
    sessions = _sessions(request)
    listed = [
        {"name": name, "tools": [spec.__dict__ for spec in sessions.tools(name)]}
        for name in sessions.environments()
    ]
    return JSONResponse({"environments": listed})


@router.post("/sessions/open")
async def open_session(request: Request) -> JSONResponse:
    sessions = _sessions(request)
    body = await parse_json_body(request, OpenBody)
    opened = await sessions.open(sessions.current_tenant(), body.env, body.task)
    return JSONResponse({"session_id": opened.id, "token": opened.token, "env": opened.env})


@router.post(CALL_PATH)
async def call(request: Request) -> JSONResponse:
    sessions = _sessions(request)
    body = await parse_json_body(request, CallBody)
    outcome = await sessions.call(sessions.current_tenant(), body.token, body.tool, body.arguments)
    return JSONResponse({"output": outcome.output, "is_error": outcome.is_error})


@router.post("/sessions/verify")
async def verify(request: Request) -> JSONResponse:
    sessions = _sessions(request)
    body = await parse_json_body(request, VerifyBody)
    verdict = await sessions.verify(sessions.current_tenant(), body.token, body.body)
    return JSONResponse(
        {"reward": verdict.reward, "reward_components": verdict.reward_components, "extras": verdict.extras}
    )


@router.post("/sessions/state")
async def state(request: Request) -> JSONResponse:
    sessions = _sessions(request)
    body = await parse_json_body(request, TokenBody)
    return JSONResponse(await sessions.state(sessions.current_tenant(), body.token))


@router.post("/sessions/close")
async def close(request: Request) -> JSONResponse:
    sessions = _sessions(request)
    body = await parse_json_body(request, TokenBody)
    await sessions.close(sessions.current_tenant(), body.token)
    return JSONResponse({})


def declared_call_route() -> APIRoute:
    """The declared `POST /sessions/call` route, for the plain-ASGI path (hot_path/tool_call_asgi.py)."""
    return next(r for r in router.routes if isinstance(r, APIRoute) and r.path == CALL_PATH)
