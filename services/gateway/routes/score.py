"""`POST /score` and `POST /score/batch`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.datastructures import State

from rewardfleet.services.common.json_body import parse_json, parse_json_body
from rewardfleet.services.gateway.errors import BatchTooLarge, GatewayError
from rewardfleet.services.gateway.facade import gateway_of
from rewardfleet.services.gateway.routes.deps import get_gateway
from rewardfleet.services.gateway.schemas import (
    BatchRequest,
    BatchResult,
    ErrorEnvelope,
    ScoreRequest,
    ScoreResult,
)

router = APIRouter(tags=["score"])
PATH = "/score"


def _json(model: BaseModel) -> Response:
    return Response(model.model_dump_json(), media_type="application/json")


_SAMPLE_SCHEMA = ScoreRequest.model_json_schema()
_BATCH_SCHEMA = {
    "title": "BatchRequest",
    "type": "object",
    "properties": {"samples": {"type": "array", "items": _SAMPLE_SCHEMA}},
    "required": ["samples"],
}


def _body_doc(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorEnvelope, "description": "Unknown reward_fn, or no function for the data_source."},
    413: {
        "model": ErrorEnvelope,
        "description": "Body over max_body_bytes, too many samples, or a field over its bound (`field`).",
    },
    422: {"model": ErrorEnvelope, "description": "Malformed JSON, a field of the wrong type, or too deep."},
}


@router.post(PATH, response_model=ScoreResult, responses=_ERRORS, openapi_extra=_body_doc(_SAMPLE_SCHEMA))
async def score(request: Request) -> Response:
    """Score one sample. A function that fails still answers 200, with `status` "error" or "timeout"."""
    result = await score_sample(request.app.state, await request.body())
    return Response(result_json(result), media_type="application/json")


def score_sample(state: State, raw: bytes) -> Awaitable[ScoreResult]:
    """The scoring of one `POST /score` body (the app's `state` holds the gateway): the route's and the
    plain-ASGI path's (hot_path/score_asgi.py) one implementation. Parsing and resolving raise at once (what
    the error handlers answer); what is returned is the scorer's own awaitable, so a post in flight holds
    neither its raw body once parsed nor a frame of this function (issue 44)."""
    return gateway_of(state).score(parse_json(raw, ScoreRequest))


def result_json(result: ScoreResult) -> bytes:
    return ScoreResult.__pydantic_serializer__.to_json(result)


def declared_route() -> APIRoute:
    """The declared `POST /score` route (its endpoint, its OpenAPI entry), for the plain-ASGI path."""
    return next(r for r in router.routes if isinstance(r, APIRoute) and r.path == PATH)


@router.post(
    "/score/batch", response_model=BatchResult, responses=_ERRORS, openapi_extra=_body_doc(_BATCH_SCHEMA)
)
async def score_batch(request: Request) -> Response:
    """Score many samples concurrently; results come back in the order of `samples`."""
    gateway = get_gateway(request)
    batch = await parse_json_body(request, BatchRequest)
    limit = gateway.config.body.max_batch_samples
    if len(batch.samples) > limit:
        raise BatchTooLarge(f"{len(batch.samples)} samples; max_batch_samples is {limit}")
    catalog = gateway.catalog
    resolved = []
    for index, sample in enumerate(batch.samples):  # every sample is checked before any work starts
        try:
            resolved.append(gateway.resolve(sample, catalog))
        except GatewayError as exc:
            exc.message = f"samples[{index}]: {exc.message}"
            raise
    # With tenants, the whole batch takes its place in the tenant's quotas at once (or none of it runs).
    async with gateway.admitted(
        [(sample, fn) for sample, (fn, _) in zip(batch.samples, resolved, strict=True)]
    ):
        results = await asyncio.gather(
            *(
                gateway.score_resolved(sample, fn, label, catalog)
                for sample, (fn, label) in zip(batch.samples, resolved, strict=True)
            )
        )
    return _json(BatchResult(results=list(results)))
