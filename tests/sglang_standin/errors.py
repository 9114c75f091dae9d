"""The error bodies SGLang 0.5.23 answers, by where the fault is found (tests/sglang_conformance checks each
against SGLang's source):

- request validation (FastAPI refusing the body or a field's type), any route: `ErrorResponse` with
  `"type": "Bad Request"` (its RequestValidationError handler, `HTTPStatus.BAD_REQUEST.phrase`);
- the OpenAI serving layer refusing a request (`_validate_request`, a ValueError from the tokenizer manager):
  `ErrorResponse` from `create_error_response`, whose default type is `"BadRequestError"`, or
  `"InternalServerError"` for a 5xx;
- a native handler's ValueError: `{"error": {"message": ...}}`;
- `/generate`'s JSON-contract gate: `{"error": "<text>"}`;
- an unknown path or wrong method: `ErrorResponse` with `"type": str(status)`.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


class StandinError(Exception):
    """A request the serving layer refuses (the message is SGLang's where the stand-in has the same check)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class TypeInvalid(Exception):
    """A body SGLang's FastAPI validation (its request classes' field types) refuses: `ErrorResponse`."""


class ContractError(Exception):
    """A `/generate` body SGLang's JSON-contract gate refuses: answered as `{"error": "<text>"}`."""


def _error_response(status: int, message: str, err_type: str) -> JSONResponse:
    body = {"object": "error", "message": message, "type": err_type, "param": None, "code": status}
    return JSONResponse(body, status_code=status)


def openai_error(status: int, message: str) -> JSONResponse:
    """`create_error_response` of SGLang's OpenAI serving classes."""
    return _error_response(status, message, "BadRequestError" if status < 500 else "InternalServerError")


def native_error(status: int, message: str) -> JSONResponse:
    """What SGLang's native handlers answer for a ValueError from the tokenizer manager."""
    return JSONResponse({"error": {"message": message}}, status_code=status)


def validation_error(message: str) -> JSONResponse:
    """SGLang's RequestValidationError handler: `ErrorResponse` on every route, native and /v1/* alike."""
    return _error_response(400, message, "Bad Request")


def contract_error(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=400)


async def on_http_exception(_request: Request, exc: Exception) -> JSONResponse:
    """SGLang's HTTPException handler (unknown path, wrong method): `ErrorResponse` with type=str(status)."""
    if not isinstance(exc, StarletteHTTPException):
        raise TypeError(f"registered for HTTPException, got {type(exc).__name__}")
    return _error_response(exc.status_code, str(exc.detail), str(exc.status_code))
