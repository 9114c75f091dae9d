"""`POST /pools/<token>/<pool>/<function>/<path>`: the forwarding route of external pools.

Reward functions get these addresses in `router_addresses` (see pools/external_pools.py) and post to
them as they would to an sglang-router: `.../v1/chat/completions`. The leading `v1/` of the path is the
OpenAI API root that the pool's `base_url` already ends in, so `v1/chat/completions` goes to
`<base_url>/chat/completions`.

Who may call: the path token is the route's secret (new at every start, handed only to reward functions, and
masked in every error and log line). When the gateway has API keys, a caller that is not on this host needs
one as well (services/common/api_keys.py): reward functions, which run in the gateway's process or its
workers, call from this host and hold no key. What it reaches: only the configured pools, only for a
configured function (the name selects the budget and the metric label: an unknown one is refused before
either exists), only the routes of `FORWARDED_ROUTES` (`POOLING_ROUTES` for a vLLM pooling pool). Every
refusal is the same 404, which reveals nothing.
"""

from __future__ import annotations

import json

import aiohttp
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from rewardfleet.services.gateway.facade import Gateway
from rewardfleet.services.gateway.pools.external_pools import GRADERS_CALLER, forwarded_route
from rewardfleet.services.gateway.routes.deps import GatewayDep

PREFIX = "/pools/"
router = APIRouter(tags=["pools"], include_in_schema=False)


def _error(status: int, message: str) -> JSONResponse:
    # OpenAI's error shape, which `rewardfleet.services.common.router_http` shows as the body of a
    # RemoteCallError.
    return JSONResponse({"error": {"message": message, "type": "pool_error"}}, status_code=status)


def _known_function(gateway: Gateway, function: str) -> bool:
    """A function of the served catalog (composites and configured graders included), or the graders'
    runtime (inline `score_model` specs of `/graders/run`)."""
    return function == GRADERS_CALLER or function in gateway.catalog.functions


@router.post("/pools/{token}/{pool}/{function}/{path:path}")
async def forward(
    token: str, pool: str, function: str, path: str, request: Request, gateway: GatewayDep
) -> Response:
    pools = gateway.external_pools
    if pools is None or not pools.check_token(token) or pool not in pools.pools:
        return _error(404, "no such pool")
    route = forwarded_route(path, pools.pools[pool].config.api)
    if route is None or not _known_function(gateway, function):
        return _error(404, "no such pool")
    try:
        body = json.loads(await request.body())
    except ValueError as exc:
        return _error(400, f"the body is not JSON: {exc}")
    if not isinstance(body, dict):
        return _error(400, "the body must be a JSON object")
    try:
        answer = await pools.pools[pool].forward(gateway.http_client, function, route, body)
    except TimeoutError:
        return _error(504, f"pool {pool!r} did not answer in time")
    except aiohttp.ClientError as exc:
        return _error(502, f"pool {pool!r} is unreachable: {type(exc).__name__}")
    return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
