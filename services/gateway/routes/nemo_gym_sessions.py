"""NeMo Gym's protocol for a server that names an `environment`: a session per rollout, kept by a cookie.

    POST <prefix>/<name>/seed_session   {task fields...} -> {}; Set-Cookie: the session's token
    POST <prefix>/<name>/<tool>         the tool's arguments -> the tool's output (a ToolError: 400)
    POST <prefix>/<name>/verify         {responses_create_params, response, ...} -> the body + reward

NeMo Gym's agents keep the cookies of each answer and send them with the next call of the rollout
(`responses_api_agents/simple_agent/app.py` replaces its cookies with every tool answer's), so every answer
of a live session sets the cookie again, refusals included. The cookie holds the bearer token itself (256
random bits, unforgeable); the session is found by it and the caller's tenant (environments/sessions.py).
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from rewardfleet.services.common.json_body import parse_json_body
from rewardfleet.services.environments import Verdict
from rewardfleet.services.gateway.environments.errors import SessionNotFound, ToolArgumentsInvalid
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.errors import GatewayError, error_envelope
from rewardfleet.services.gateway.facade import gateway_of
from rewardfleet.services.gateway.nemo_gym.mapping import RESERVED
from rewardfleet.services.gateway.routes.nemo_gym_body import JsonObject

COOKIE_PREFIX = "rewardfleet_session_"
TOOL_ERROR_STATUS = 400
MCP_TOKEN_HEADER = "X-NeMo-Gym-Session-Token"  # NeMo Gym's name, in seed_session's `mcp` answer
MCP_URL_PATH = "/mcp"  # from the server's root (its own port); <prefix>/<server>/mcp on the gateway's
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")  # a cookie value http.cookies writes as is (no quoting)


def cookie_name(server: str) -> str:
    return COOKIE_PREFIX + server


def _sessions(request: Request) -> Sessions:
    sessions = gateway_of(request.app.state).sessions
    if sessions is None:  # only before start-up finished
        raise RuntimeError("environment sessions are not started")
    return sessions


def _token(request: Request, server: str) -> str:
    token = request.cookies.get(cookie_name(server))
    if not token:
        raise SessionNotFound()
    return token


def _answer(content: Any, server: str, token: str, status_code: int = 200, **headers: str) -> JSONResponse:
    response = JSONResponse(content, status_code=status_code, headers=headers or None)
    if _PLAIN.fullmatch(token):  # set_cookie's own header for such a value, without http.cookies' cost
        cookie = f"{COOKIE_PREFIX}{server}={token}; HttpOnly; Path=/; SameSite=strict"
        response.raw_headers.append((b"set-cookie", cookie.encode("latin-1")))
    else:
        response.set_cookie(cookie_name(server), token, httponly=True, samesite="strict", path="/")
    return response


def _refusal(exc: GatewayError, server: str, token: str) -> JSONResponse:
    """The gateway's error answer, with the cookie again unless the session is gone."""
    if isinstance(exc, SessionNotFound):
        return JSONResponse(exc.body(), status_code=exc.status_code)
    return _answer(exc.body(), server, token, exc.status_code, **exc.headers)


async def seed_session(request: Request, server: str, environment: str, mcp: bool = False) -> JSONResponse:
    """`mcp`: the server exposes its tools over MCP; the answer's `mcp` says where and with which header
    (NeMo Gym's `MCPServerMetadata`: the token is the session's own, so only its hash is stored)."""
    sessions = _sessions(request)
    task = (await parse_json_body(request, JsonObject)).root
    opened = await sessions.open(sessions.current_tenant(), environment, task)
    body: dict[str, Any] = {}
    if mcp:
        body["mcp"] = {
            "server_name": server,
            "url_path": MCP_URL_PATH,
            "transport": "http",
            "headers": {MCP_TOKEN_HEADER: opened.token},
        }
    return _answer(body, server, opened.token)


async def call_tool(request: Request, server: str, tool: str) -> JSONResponse:
    sessions = _sessions(request)
    token = _token(request, server)
    try:
        try:
            arguments = (await parse_json_body(request, JsonObject)).root
        except RequestValidationError as exc:  # malformed or too deep JSON: the tool's arguments are wrong
            raise ToolArgumentsInvalid(tool, exc.errors()) from None
        outcome = await sessions.call(sessions.current_tenant(), token, tool, arguments)
    except GatewayError as exc:
        return _refusal(exc, server, token)
    if outcome.is_error:
        return _answer(error_envelope("ToolError", str(outcome.output)), server, token, TOOL_ERROR_STATUS)
    return _answer(outcome.output, server, token)


async def verify(request: Request, server: str) -> JSONResponse:
    sessions = _sessions(request)
    token = _token(request, server)
    body = (await parse_json_body(request, JsonObject)).root
    try:
        verdict = await sessions.verify(sessions.current_tenant(), token, body)
    except GatewayError as exc:
        return _refusal(exc, server, token)
    return _answer(verify_answer(body, verdict), server, token)


def verify_answer(body: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    """The body (its own reward keys dropped: never echoed as ours), the verdict's extras that do not collide
    with it, `reward`, and `reward_components` when the environment gave some."""
    out = {k: v for k, v in body.items() if k not in RESERVED or k in ("responses_create_params", "response")}
    for key, value in verdict.extras.items():
        if key not in RESERVED and key not in body:
            out[key] = value
    out["reward"] = verdict.reward
    if verdict.reward_components:
        out["reward_components"] = verdict.reward_components
    return out
