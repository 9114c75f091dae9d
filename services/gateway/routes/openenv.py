"""OpenEnv's protocol (`openenv` 0.10's `HTTPEnvServer`) for each environment of the fleet.

It is served at `/openenv/<env>`:

    POST /reset  {seed?, episode_id?, ...task}  -> {observation: {episode_id, tools}, reward, done: false}
    POST /step   {action, timeout_s?, request_id?}  -> {observation, reward, done}
    GET  /state  /schema  /health  /metadata
    WS   /ws     {"type": "reset" | "step" | "state" | "close", "data": {...}}
                 -> {"type": "observation" | "state" | "error", "data": {...}}
    POST /mcp    JSON-RPC: openenv/session/create | close, tools/list, tools/call (openenv_mcp.py)
    WS   /ws?session_id=<the session's token>: attached to a session opened over /mcp

As in OpenEnv, HTTP `/reset` and `/step` are stateless (each opens a session, acts, and closes it; `/state` is
a fresh environment's) and `/ws` holds one session per connection: `reset` opens it with the task (closing the
previous one), a `step` before any `reset` opens one with the environment's default task, and the session is
closed when the socket closes, however it closes. A socket attached to an `/mcp` session (OpenEnv's
`MCPToolClient`, production mode) shares it: `reset` starts that session over under the same id, and
closing the socket detaches it (`openenv/session/close` closes it). Actions and observations:
openenv_wire.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from pydantic_core import from_json

from rewardfleet.services.common.json_body import parse_json
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.errors import GatewayError
from rewardfleet.services.gateway.routes import openenv_mcp
from rewardfleet.services.gateway.routes import openenv_wire as wire
from rewardfleet.services.gateway.routes.environment_sessions import (
    SessionsOf,
    described,
    field_errors,
    known,
)

logger = logging.getLogger(__name__)
PREFIX = "/openenv"
# OpenEnv's WSErrorCode for a Sessions refusal, by status (anything else: EXECUTION_ERROR)
_CODES = {422: "VALIDATION_ERROR", 429: "CAPACITY_REACHED", 404: "SESSION_ERROR"}


def make_router(sessions_of: SessionsOf) -> APIRouter:
    router = APIRouter(prefix=PREFIX + "/{env}", tags=["OpenEnv"])

    @router.post("/reset")
    async def reset(env: str, request: Request) -> JSONResponse:
        sessions = sessions_of(request)
        known(sessions, env)
        raw = await request.body()
        body = parse_json(raw or b"{}", wire.ResetBody)
        caller = sessions.current_tenant()
        opened = await sessions.open(caller, env, wire.task_of(body.model_dump(exclude_unset=True)))
        try:
            observation = {"episode_id": opened.id, **wire.tools_observation(sessions.tools(env))}
        finally:
            await _close(sessions, caller, opened.token)
        return JSONResponse(wire.answer(observation))

    @router.post("/step")
    async def step(env: str, request: Request) -> JSONResponse:
        sessions = sessions_of(request)
        known(sessions, env)
        body = parse_json(await request.body(), wire.StepBody)
        try:
            action = wire.ACTION.validate_python(body.action)
        except ValidationError as exc:
            raise RequestValidationError(_located(exc, ("body", "action"))) from None
        if isinstance(action, wire.ListTools):
            return JSONResponse(wire.answer(wire.tools_observation(sessions.tools(env))))
        caller = sessions.current_tenant()
        opened = await sessions.open(caller, env, {})
        try:
            if isinstance(action, wire.Verify):
                return JSONResponse(
                    wire.verdict_answer(await sessions.verify(caller, opened.token, action.body))
                )
            outcome = await sessions.call(caller, opened.token, action.tool_name, action.arguments)
            return JSONResponse(
                wire.answer(wire.tool_result(action.tool_name, outcome.output, outcome.is_error))
            )
        finally:
            await _close(sessions, caller, opened.token)

    @router.post("/mcp")
    async def mcp(env: str, request: Request) -> JSONResponse:
        sessions = sessions_of(request)
        known(sessions, env)
        raw = await request.body()
        bad = openenv_mcp.refused(raw)
        if bad is not None:
            return bad
        return await openenv_mcp.answer(sessions, sessions.current_tenant(), env, raw)

    @router.get("/state")
    async def state(env: str, request: Request) -> dict[str, Any]:
        known(sessions_of(request), env)
        return {"episode_id": None, "step_count": 0}

    @router.get("/schema")
    async def schema(env: str, request: Request) -> dict[str, Any]:
        sessions = sessions_of(request)
        return wire.schema(sessions.tools(known(sessions, env)))

    @router.get("/health")
    async def health(env: str, request: Request) -> dict[str, str]:
        known(sessions_of(request), env)
        return {"status": "healthy"}

    @router.get("/metadata")
    async def metadata(env: str, request: Request) -> dict[str, Any]:
        sessions = sessions_of(request)
        names = ", ".join(s.name for s in sessions.tools(known(sessions, env)))
        return {
            "name": env,
            "description": f"environment {env} of the reward fleet; tools: {names}",
            "readme_content": None,
            "version": None,
            "author": None,
            "documentation_url": None,
        }

    @router.websocket("/ws")
    async def ws(env: str, websocket: WebSocket) -> None:
        await websocket.accept()
        sessions = sessions_of(websocket)
        episode = _Episode(sessions, sessions.current_tenant(), env)
        try:
            known(episode.sessions, env)
            attach = websocket.query_params.get("session_id")
            if attach is not None:
                await episode.attach(attach)
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                reply = await episode.handle(message.get("text") or message.get("bytes") or b"")
                if reply is None:  # "close"
                    break
                await websocket.send_json(reply)
        except WebSocketDisconnect:
            pass
        except GatewayError as exc:
            await _send_quietly(websocket, _error(exc.message, "SESSION_ERROR", status=exc.status_code))
        finally:
            await asyncio.shield(episode.end())
            await _close_quietly(websocket)

    return router


class _Episode:
    """The one session of a WebSocket connection, and the task it was opened with."""

    def __init__(self, sessions: Sessions, caller: str, env: str) -> None:
        self.sessions = sessions
        self.caller = caller
        self.env = env
        self.token: str | None = None
        self.id: str | None = None
        self.task: dict[str, Any] = {}
        self.attached = False  # to a session opened over /mcp: its client closes it, not this socket

    async def attach(self, token: str) -> None:
        """Serves the live session of `token` (SessionNotFound: the same 404 for anyone else's)."""
        found = await self.sessions.state(self.caller, token)
        self.token, self.id, self.attached = token, found["id"], True

    async def handle(self, raw: str | bytes) -> dict[str, Any] | None:
        try:
            message = from_json(raw)
        except ValueError as exc:
            return _error(f"Invalid JSON: {exc}", "INVALID_JSON")
        if not isinstance(message, dict):
            return _error("a message is a JSON object with a type", "VALIDATION_ERROR")
        kind = message.get("type")
        data = message.get("data", {})
        if kind in ("reset", "step") and not isinstance(data, dict):
            return _error("data must be an object", "VALIDATION_ERROR", errors=[_loc(["data"], "an object")])
        try:
            if kind == "reset":
                return {"type": "observation", "data": await self.reset(data)}
            if kind == "step":
                return await self.step(data)
            if kind == "state":
                return {"type": "state", "data": await self.state()}
            if kind == "close":
                return None
            return _error(f"Unknown message type: {str(kind)[:64]}", "UNKNOWN_TYPE")
        except GatewayError as exc:
            code = _CODES.get(exc.status_code, "EXECUTION_ERROR")
            details: dict[str, Any] = {"status": exc.status_code, "error_type": exc.type}
            if exc.status_code == 422:
                details["errors"] = field_errors(exc)
            return _error(described(exc), code, **details)

    async def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        task = wire.task_of(data)
        if self.attached and self.token is not None:
            self.id = await self.sessions.reset(self.caller, self.token, task)
            self.task = task
        else:
            await self.end()
            opened = await self.sessions.open(self.caller, self.env, task)
            self.token, self.id, self.task = opened.token, opened.id, task
        assert self.id is not None
        return wire.answer({"episode_id": self.id, **wire.tools_observation(self.sessions.tools(self.env))})

    async def step(self, data: dict[str, Any]) -> dict[str, Any]:
        try:
            action = wire.ACTION.validate_python(data)
        except ValidationError as exc:
            return _error("Invalid message", "VALIDATION_ERROR", errors=_located(exc, ("data",)))
        if isinstance(action, wire.ListTools):
            return _observation(wire.answer(wire.tools_observation(self.sessions.tools(self.env))))
        if self.token is None:
            await self.reset({})
        assert self.token is not None
        if isinstance(action, wire.Verify):
            verdict = await self.sessions.verify(self.caller, self.token, {**self.task, **action.body})
            return _observation(wire.verdict_answer(verdict))
        name = action.tool_name
        try:
            outcome = await self.sessions.call(self.caller, self.token, name, action.arguments)
        except GatewayError as exc:
            if exc.status_code == 422:  # the arguments: the session is as it was, the agent may retry
                return _observation(wire.answer(wire.tool_failed(name, "invalid_args", described(exc))))
            if exc.type == "UnknownTool":
                return _observation(wire.answer(wire.tool_failed(name, "tool_not_found", exc.message)))
            raise
        return _observation(wire.answer(wire.tool_result(name, outcome.output, outcome.is_error)))

    async def state(self) -> dict[str, Any]:
        if self.token is None:
            return {"episode_id": None, "step_count": 0}
        found = await self.sessions.state(self.caller, self.token)  # {id, env, tool_calls, state}
        return {"episode_id": found["id"], "step_count": found["tool_calls"], "state": found["state"]}

    async def end(self) -> None:
        token, self.token = self.token, None
        if token is not None and not self.attached:
            await _close(self.sessions, self.caller, token)


async def _close(sessions: Sessions, caller: str, token: str) -> None:
    with contextlib.suppress(GatewayError):  # already gone (expired, reaped): nothing is left to free
        await sessions.close(caller, token)


def _observation(data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "observation", "data": data}


def _error(message: str, code: str, **details: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **details}}


def _loc(loc: list[Any], msg: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg}


def _located(exc: ValidationError, prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    return [
        {"type": e["type"], "loc": [*prefix, *e["loc"]], "msg": e["msg"]}
        for e in exc.errors(include_url=False, include_input=False)
    ][:20]


async def _send_quietly(websocket: WebSocket, reply: dict[str, Any]) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        await websocket.send_json(reply)


async def _close_quietly(websocket: WebSocket) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        await websocket.close()
