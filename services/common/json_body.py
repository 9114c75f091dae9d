"""Request bodies parsed in the route, straight from bytes with pydantic-core, for every service.

Declaring a pydantic body parameter makes FastAPI decode JSON, solve dependencies and validate through its
own layers, and re-validate the response model; on a ~1 ms request that is a large share of the event loop's
time, which is the server's bottleneck under many single-sample clients. The routes call this themselves
(the schemas still reach /docs through `openapi_extra` and `response_model`). Content-Type is not checked
(trainers' clients do not all set it). Errors become `RequestValidationError` with `body.<field>`
locations, which each service's handler turns into its own envelope.
"""

from __future__ import annotations

from typing import TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


async def parse_json_body(request: Request, model: type[M]) -> M:
    return parse_json(await request.body(), model)


def parse_json(raw: bytes, model: type[M]) -> M:
    """`raw` as `model`, or a RequestValidationError with `body.<field>` locations."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        errors = [{**err, "loc": ("body", *err["loc"])} for err in exc.errors(include_url=False)]
        raise RequestValidationError(errors) from None
