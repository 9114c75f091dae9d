"""NeMo Gym's resources-server protocol, served by the gateway for each `nemo_gym.servers.<name>`.

    POST <prefix>/<name>/verify             {responses_create_params, response, ...task fields}
    POST <prefix>/<name>/seed_session       {} -> {}
    POST <prefix>/<name>/aggregate_metrics  {verify_responses: [...]} -> AggregateMetrics
    POST <prefix>/<name>/<tool>             a server naming an `environment`: its tools (nemo_gym_sessions.py)

and, for a server with a `port`, the same three at the root of that port (`/verify`, ...), which is what
NeMo Gym's server client calls (`http://{host}:{port}/verify`, host and port from its global config).

`/verify` answers the body plus `reward` (and `reward_components` when the function or composite gave
them, plus the function's extra keys: nemo_gym/mapping.py). A malformed body is a 422 whose `loc` names
the body's field; an unknown server a 404. A failed reward is never a reward: without a fallback
(`error_score` in the server's config, or `?error_score=`) the answer is HTTP 500 `RewardFunctionFailed` /
504 `RewardFunctionTimeout` (routes/trainer_protocol.py), which NeMo Gym's agent raises as an error for that
rollout; with one, the fallback is the reward and `reward_failed: true` flags it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import uvicorn
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from rewardfleet.services.common.json_body import parse_json_body
from rewardfleet.services.gateway.environments.errors import UnknownTool
from rewardfleet.services.gateway.errors import BatchTooLarge, UnknownRewardFunction
from rewardfleet.services.gateway.hot_path.tool_call_asgi import ToolRoutes
from rewardfleet.services.gateway.nemo_gym.config import NeMoGymConfig, NeMoGymServer
from rewardfleet.services.gateway.nemo_gym.mapping import BodyError, answer, score_body
from rewardfleet.services.gateway.nemo_gym.metrics import (
    MAX_RESPONSES,
    MAX_WORK,
    aggregate,
    by_task,
    work,
)
from rewardfleet.services.gateway.routes import nemo_gym_sessions
from rewardfleet.services.gateway.routes.nemo_gym_body import JsonObject
from rewardfleet.services.gateway.routes.trainer_protocol import (
    ErrorScore,
    TrainerBackend,
    build_samples,
    content_uid,
    raise_on_failure,
    score_or_fallback,
)

logger = logging.getLogger(__name__)
MAX_ERRORS = 20  # field errors listed for one request


def _server(config: NeMoGymConfig, name: str) -> NeMoGymServer:
    spec = config.servers.get(name)
    if spec is None:
        raise UnknownRewardFunction(
            f"no NeMo Gym server {name[:64]!r} is configured (nemo_gym.servers: {', '.join(config.servers)})"
        )
    return spec


async def _object(request: Request) -> dict[str, Any]:
    return (await parse_json_body(request, JsonObject)).root


def make_router(config: NeMoGymConfig, backend: TrainerBackend) -> APIRouter:
    router = APIRouter(prefix=config.prefix, tags=["NeMo Gym"])

    @router.post("/{server}/verify")
    async def verify(server: str, request: Request, error_score: ErrorScore = None) -> JSONResponse:
        spec = _server(config, server)
        if spec.environment is not None:
            return await nemo_gym_sessions.verify(request, server)
        body = await _object(request)
        try:
            sample_body = score_body(server, spec, body, "")
        except BodyError as exc:
            raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors]) from None
        sample_body["uid"] = content_uid(sample_body)
        (sample,) = build_samples(backend, [sample_body], _where(spec))
        result = await backend.score_one(sample)
        fallback = error_score if error_score is not None else spec.error_score
        raise_on_failure([result], fallback)
        return JSONResponse(answer(spec, body, result, score_or_fallback(result, fallback)))

    @router.post("/{server}/seed_session")
    async def seed_session(server: str, request: Request) -> JSONResponse:
        spec = _server(config, server)
        if spec.environment is not None:
            return await nemo_gym_sessions.seed_session(
                request, server, spec.environment, spec.expose_tools_over_mcp
            )
        await _object(request)
        return JSONResponse({})

    @router.post("/{server}/aggregate_metrics")
    async def aggregate_metrics(server: str, request: Request) -> JSONResponse:
        spec = _server(config, server)
        body = await _object(request)
        rows = body.get("verify_responses")
        if not isinstance(rows, list):
            raise RequestValidationError(
                [{"type": "list_type", "loc": ("body", "verify_responses"), "msg": "must be a list"}]
            )
        if len(rows) > MAX_RESPONSES:
            raise BatchTooLarge(
                f"verify_responses has {len(rows)} items; at most {MAX_RESPONSES}", field="verify_responses"
            )
        errors = list(itertools.islice(_row_errors(rows), MAX_ERRORS))
        if errors:
            raise RequestValidationError(errors)
        tasks = by_task(rows)
        if work(tasks) > MAX_WORK:
            raise BatchTooLarge(
                f"verify_responses: score names x tasks x rollouts per task is over {MAX_WORK}; "
                "aggregate fewer at a time",
                field="verify_responses",
            )
        figures = await asyncio.to_thread(aggregate, rows, spec.answer_field)
        return JSONResponse(figures)

    @router.post("/{server}/{tool}")
    async def call_tool(server: str, tool: str, request: Request) -> JSONResponse:
        spec = _server(config, server)
        if spec.environment is None:
            raise UnknownTool(f"NeMo Gym server {server!r} scores verify bodies only: it has no tools")
        return await nemo_gym_sessions.call_tool(request, server, tool)

    return router


# declared before `/{server}/{tool}` (mcp: routes/nemo_gym_mcp.py)
RESERVED_NAMES = ("verify", "seed_session", "aggregate_metrics", "mcp")


def tool_routes(router: APIRouter, config: NeMoGymConfig) -> ToolRoutes | None:
    """The tool calls of the servers that serve an environment (`router`: `make_router`'s), for the
    plain-ASGI path (hot_path/tool_call_asgi.py); None when no server does."""
    servers = [name for name, spec in config.servers.items() if spec.environment is not None]
    if not servers:
        return None
    path = f"{config.prefix}/{{server}}/{{tool}}"
    route = next(r for r in router.routes if isinstance(r, APIRoute) and r.path == path)
    return ToolRoutes(config.prefix, route, nemo_gym_sessions.call_tool, frozenset(servers), RESERVED_NAMES)


def _row_errors(rows: list[Any]) -> Iterator[dict[str, Any]]:
    for i, row in enumerate(rows):
        loc = ("body", "verify_responses", i)
        if not isinstance(row, Mapping):
            yield {"type": "dict_type", "loc": loc, "msg": "must be an object"}
            continue
        reward = row.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
            yield {"type": "float_type", "loc": (*loc, "reward"), "msg": "must be a finite number"}
        for key in ("_ng_task_index", "_ng_rollout_index"):
            value = row.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                yield {"type": "int_type", "loc": (*loc, key), "msg": "must be an integer"}


def _where(spec: NeMoGymServer) -> Callable[[int, str], list[str | int]]:
    """The verify body's field a `/score` field came from (errors name the body's field)."""
    where: dict[str, list[str | int]] = {
        "solution_str": ["response"],
        "messages": ["response", "output"],
        "ground_truth": [spec.ground_truth or "ground_truth"],
    }
    return lambda _, field: where.get(field, [field])


class AtRoot:
    """The gateway app seen from a server's own port: `/verify` there is `<prefix>/<name>/verify` here, so
    every limit, handler and metric of the gateway applies. The gateway's lifespan is not run again."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = self.prefix + scope["path"]
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)


class _Embedded(uvicorn.Server):
    """A uvicorn server run inside the gateway's loop: the gateway's own server owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class PortServers:
    """The per-server ports: started once the gateway is ready, stopped before it closes."""

    def __init__(self, app: FastAPI, config: NeMoGymConfig, host: str) -> None:
        self.servers = [
            _Embedded(
                uvicorn.Config(
                    AtRoot(app, f"{config.prefix}/{name}"),
                    host=host,
                    port=spec.port,
                    lifespan="off",
                    log_level="warning",
                    access_log=False,
                )
            )
            for name, spec in config.servers.items()
            if spec.port is not None
        ]
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for server in self.servers:
            self.tasks.append(asyncio.create_task(server.serve()))
        for server, task in zip(self.servers, self.tasks, strict=True):
            while not server.started:  # bounded by uvicorn itself: a port it cannot bind ends the task
                if task.done():
                    raise RuntimeError(f"a NeMo Gym port did not start: {server.config.port} (see the log)")
                await asyncio.sleep(0.01)

    async def stop(self) -> None:
        for server in self.servers:
            server.should_exit = True
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
