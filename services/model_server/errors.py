"""The model server's exceptions and the one place that turns them into SGLang's error shapes.

Exception tree:

    ModelServerError           base; 500 unless a subclass says otherwise
    ├── InvalidRequest         400: the input is wrong (empty, wrong type, too long for the context, ...)
    ├── NotReady               503: still loading or warming up
    ├── Overloaded             503 + Retry-After: the batch queue is full
    └── ClientGone             499 (nginx's "client closed request"): nobody is left to read the answer
    batcher.QueueFull          mapped like Overloaded

Shapes (as SGLang 0.5.23's http_server answers them; tests/sglang_conformance reads them from its source):
    /v1/*                             {"object": "error", "message", "type", "param", "code"}
    request validation (any route)    same, with "type": "Bad Request", "code": 400
    HTTPException (any route)         same, with "type": "<status code>"
    /generate sampling_params schema  {"error": "<text>"}   (SGLang's JSON-contract gate)
    native route, semantic refusal    {"error": {"message"}}   (a ValueError in SGLang's handler)
    /pooling (vLLM's API, any fault)  {"error": {"message", "type", "param", "code"}}   (vLLM's ErrorResponse)

A 4xx counts against the replica in sglang-router's circuit breaker, so bad input must be a clean 400 and
never a 500; only real server faults are 5xx.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rewardfleet.services.model_server.batcher import BatcherStopped, QueueFull

logger = logging.getLogger(__name__)


class ModelServerError(Exception):
    status_code: int = 500
    error_type: str = "InternalServerError"

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class InvalidRequest(ModelServerError):
    status_code = 400
    error_type = "BadRequestError"


class NotReady(ModelServerError):
    status_code = 503
    error_type = "ServiceUnavailableError"


class Overloaded(ModelServerError):
    status_code = 503
    error_type = "ServiceUnavailableError"


class ClientGone(ModelServerError):
    status_code = 499
    error_type = "ClientClosedRequest"


POOLING_PATH = "/pooling"


def is_openai_path(path: str) -> bool:
    return path.startswith("/v1/")


def vllm_error_body(message: str, status_code: int, error_type: str, param: str | None) -> dict[str, Any]:
    """vLLM's `ErrorResponse` (`vllm/entrypoints/serve/engine/protocol.py`), its envelope on `/pooling`."""
    return {"error": {"message": message, "type": error_type, "param": param, "code": status_code}}


def error_response(
    path: str,
    status_code: int,
    message: str,
    *,
    error_type: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any]
    if path == POOLING_PATH:
        body = vllm_error_body(message, status_code, error_type or HTTPStatus(status_code).phrase, param)
    elif is_openai_path(path):
        body = {
            "object": "error",
            "message": message,
            "type": error_type or HTTPStatus(status_code).phrase,
            "param": param,
            "code": status_code,
        }
    else:
        body = {"error": {"message": message}}
    return JSONResponse(body, status_code=status_code, headers=headers)


def error_response_body(message: str, status_code: int, error_type: str) -> dict[str, Any]:
    """SGLang's `ErrorResponse` (protocol.py), which it also sends on native routes for validation errors."""
    return {"object": "error", "message": message, "type": error_type, "param": None, "code": status_code}


# Range checks count as semantic: SGLang's SamplingParams.verify raises ValueError for them.
_SEMANTIC_TYPES = frozenset(
    {"value_error", "greater_than", "greater_than_equal", "less_than", "less_than_equal"}
)
# A `sampling_params` that is not an object (or list of objects) already fails SGLang's FastAPI validation.
_CONTAINER_TYPES = frozenset({"model_type", "model_attributes_type", "list_type", "dict_type"})


def _is_semantic(err: Mapping[str, Any]) -> bool:
    # Our validators raise ValueError for what SGLang's tokenizer manager refuses with a ValueError (no input,
    # empty text, unsupported option): SGLang answers those from the handler, not from request validation.
    return err.get("type") in _SEMANTIC_TYPES


def _in_sampling_params(err: Mapping[str, Any]) -> bool:
    return tuple(err.get("loc", ()))[:2] == ("body", "sampling_params")


def _contract_errors(errors: list[Any]) -> list[Any]:
    """The errors inside an object (or list of objects) given as `sampling_params`, or [] if there are others.

    `sampling_params` is a union (object | list): pydantic reports the branch that did not apply as well
    (`list_type` / `model_type`); those are dropped when a field inside the applying branch is at fault."""
    inner = [e for e in errors if _in_sampling_params(e) and e.get("type") not in _CONTAINER_TYPES]
    if not inner:
        return []
    rest = [e for e in errors if e not in inner]
    if all(_in_sampling_params(e) and e.get("type") in _CONTAINER_TYPES for e in rest):
        return inner
    return []


# serde's "expected" wording in SGLang's generated decoder (sglang/api/v1/api_types.py) per pydantic error.
_SERDE_EXPECTED = {
    "int_parsing": "i64",
    "int_type": "i64",
    "int_from_float": "i64",
    "float_parsing": "f64",
    "float_type": "f64",
    "bool_parsing": "a boolean",
    "bool_type": "a boolean",
}


def _serde_unexpected(value: Any) -> str:
    """serde's `Unexpected` display of a JSON value, as SGLang's contract decoder writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f'string "{value}"'
    return "sequence" if isinstance(value, list) else "map"


def _contract_text(err: Mapping[str, Any]) -> str:
    expected = _SERDE_EXPECTED.get(str(err.get("type")))
    if expected is None:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        return f"{loc}: {err.get('msg', 'invalid')}"
    return f"invalid type: {_serde_unexpected(err.get('input'))}, expected {expected}"


def validation_error_response(path: str, exc: RequestValidationError) -> JSONResponse:
    """A 400 for a body that fails validation, in the shape SGLang gives the same fault on that route.

    SGLang types `/generate`'s `sampling_params` as a plain dict, so a wrongly typed field there passes
    FastAPI and is refused by its JSON-contract gate as `{"error": "<text>"}` (first fault only, as serde
    stops there); a semantic refusal comes from the handler as `{"error": {"message"}}`; everything else is
    FastAPI's validation error, which SGLang answers as `ErrorResponse` on every route."""
    errors = list(exc.errors())
    if path == POOLING_PATH:
        return _vllm_validation_response(errors)
    if not is_openai_path(path) and errors:
        contract = _contract_errors(errors) if path == "/generate" else []
        if contract and not all(_is_semantic(e) for e in contract):
            first = next(e for e in contract if not _is_semantic(e))
            return JSONResponse({"error": _contract_text(first)}, status_code=400)
        if all(_is_semantic(e) for e in (contract or errors)):
            return JSONResponse({"error": {"message": _join(contract or errors)}}, status_code=400)
    body = error_response_body(_join(errors), 400, HTTPStatus.BAD_REQUEST.phrase)
    return JSONResponse(body, status_code=400)


# pydantic's names for the branch of a union it tried (`input` -> `str`, `list[int]`, ...): not fields.
_BRANCH_NAMES = frozenset({"str", "int", "float", "bool", "list", "dict", "none"})


def _names_a_field(part: Any) -> bool:
    """Whether a segment of a validation error's `loc` is a field name or a list index (as vLLM's `param`
    spells it: `body.input.0`), not a union branch such as `list[int]`."""
    return isinstance(part, int) or (str(part).isidentifier() and str(part) not in _BRANCH_NAMES)


def _vllm_validation_response(errors: list[Any]) -> JSONResponse:
    """vLLM's answers to a bad `/pooling` body: a field refused by name (its `VLLMValidationError`, here
    `schemas.RefusedField`) is a "BadRequestError" whose `param` is that field; any other validation error is
    a "Bad Request" whose `param` is the first error's `body.<field>` (None for a whole-body fault)."""
    for err in errors:
        refused = err.get("ctx", {}).get("error")
        if getattr(refused, "param", None):
            return JSONResponse(vllm_error_body(str(refused), 400, "BadRequestError", refused.param), 400)
    loc = [str(p) for p in errors[0].get("loc", ()) if _names_a_field(p)] if errors else []
    param = ".".join(loc) if len(loc) >= 2 else None
    return JSONResponse(vllm_error_body(_join(errors), 400, HTTPStatus.BAD_REQUEST.phrase, param), 400)


def _join(errors: list[Any]) -> str:
    """One readable line per problem: `body.sampling_params.max_new_tokens: Input should be ...`."""
    parts = []
    for err in errors:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid")))
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI, retry_after_s: int) -> None:
    """Map every exception the routes can raise to a status code and SGLang's envelope for the path."""

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        return validation_error_response(request.url.path, cast(RequestValidationError, exc))

    async def on_model_server_error(request: Request, exc: Exception) -> JSONResponse:
        exc = cast(ModelServerError, exc)
        headers = {"Retry-After": str(retry_after_s)} if isinstance(exc, Overloaded) else None
        if exc.status_code >= 500 and not isinstance(exc, NotReady | Overloaded | ClientGone):
            logger.error("%s %s failed: %s", request.method, request.url.path, exc.message)
        return error_response(
            request.url.path,
            exc.status_code,
            exc.message,
            error_type=exc.error_type,
            param=exc.param,
            headers=headers,
        )

    async def on_queue_full(request: Request, exc: Exception) -> JSONResponse:
        return error_response(
            request.url.path,
            503,
            str(exc),
            error_type="ServiceUnavailableError",
            headers={"Retry-After": str(retry_after_s)},
        )

    async def on_stopped(request: Request, exc: Exception) -> JSONResponse:
        return error_response(
            request.url.path, 503, "server is shutting down", error_type="ServiceUnavailableError"
        )

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        # SGLang's HTTPException handler answers `ErrorResponse` with type=str(status) on every route.
        exc = cast(StarletteHTTPException, exc)
        body = error_response_body(str(exc.detail), exc.status_code, str(exc.status_code))
        headers = dict(exc.headers) if exc.headers else None
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("%s %s: unexpected error", request.method, request.url.path)
        return error_response(request.url.path, 500, f"internal error: {type(exc).__name__}: {exc}")

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ModelServerError, on_model_server_error)
    app.add_exception_handler(QueueFull, on_queue_full)
    app.add_exception_handler(BatcherStopped, on_stopped)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
