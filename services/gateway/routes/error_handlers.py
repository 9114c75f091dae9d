"""The one place that turns exceptions into HTTP answers, in the gateway's error envelope.

The one place that turns exceptions into HTTP answers, all in the envelope of `errors.error_envelope`:
`GatewayError` → its own status and type; FastAPI's validation errors → 422 `ValidationError` with `fields`;
Starlette's HTTP errors (unknown route, wrong method) → `HTTPError`; anything else → 500 `InternalError`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rewardfleet.services.gateway.errors import GatewayError, error_envelope


def _validation_fields(errors: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"loc": list(err.get("loc", ())), "msg": str(err.get("msg", ""))} for err in errors]


async def _gateway_error(request: Request, exc: Exception) -> JSONResponse:
    err = cast(GatewayError, exc)  # registered for GatewayError only
    return JSONResponse(err.body(), status_code=err.status_code, headers=err.headers or None)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    fields = _validation_fields(cast(RequestValidationError, exc).errors())
    summary = (
        "; ".join(f"{'.'.join(str(p) for p in f['loc'])}: {f['msg']}" for f in fields[:5])
        or "invalid request"
    )
    return JSONResponse(error_envelope("ValidationError", summary, fields=fields), status_code=422)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    err = cast(StarletteHTTPException, exc)
    return JSONResponse(
        error_envelope("HTTPError", str(err.detail)), status_code=err.status_code, headers=err.headers
    )


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(error_envelope("InternalError", f"{type(exc).__name__}: {exc}"), status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(GatewayError, _gateway_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
