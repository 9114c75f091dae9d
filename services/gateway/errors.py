"""Every exception of the gateway, and the one function that builds the error envelope.

`GatewayError` subclasses carry their HTTP status, envelope `type`, details and headers, so a route raises
and `error_envelope` answers: `{"error": {"type", "message", ...details}}`, bad input 4xx, never 500. Errors
raised inside a reward call become that sample's `status: "error"` result instead (a 200). The whole tree,
with each type's status and meaning, is in docs/gateway.md ("Error types"). Standard library only: worker
processes import this module.
"""

from __future__ import annotations

import json
from typing import Any, Self


def error_envelope(type_: str, message: str, **details: Any) -> dict[str, Any]:
    """The body of every non-2xx answer of the gateway."""
    return {"error": {"type": type_, "message": message, **details}}


class GatewayError(Exception):
    status_code = 500
    type = "GatewayError"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.headers: dict[str, str] = {}  # extra response headers (Retry-After, WWW-Authenticate, ...)

    def with_headers(self, **headers: str) -> Self:
        """Add response headers (`Retry_After="1"` → `Retry-After: 1`); returns self."""
        self.headers.update({name.replace("_", "-"): value for name, value in headers.items()})
        return self

    def body(self) -> dict[str, Any]:
        return error_envelope(self.type, self.message, **self.details)

    def asgi_response(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The `http.response.start` and `http.response.body` messages, for pure ASGI middleware."""
        body = json.dumps(self.body()).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *((name.lower().encode(), value.encode()) for name, value in self.headers.items()),
        ]
        start = {"type": "http.response.start", "status": self.status_code, "headers": headers}
        return start, {"type": "http.response.body", "body": body}


class LoadError(GatewayError):
    type = "LoadError"


class TokenizerUnavailable(GatewayError):
    type = "TokenizerUnavailable"


class Unauthorized(GatewayError):
    status_code = 401
    type = "Unauthorized"


class InlineCodeRefused(GatewayError):
    status_code = 403
    type = "InlineCodeRefused"


class UnknownRewardFunction(GatewayError):
    status_code = 404
    type = "UnknownRewardFunction"


class Undispatchable(GatewayError):
    status_code = 404
    type = "Undispatchable"


class ReloadFailed(GatewayError):
    status_code = 409
    type = "ReloadFailed"


class BatchTooLarge(GatewayError):
    status_code = 413
    type = "BatchTooLarge"


class PayloadTooLarge(GatewayError):
    status_code = 413
    type = "PayloadTooLarge"


class FieldTooLarge(GatewayError):
    status_code = 413
    type = "FieldTooLarge"


class TooDeep(GatewayError):
    status_code = 422
    type = "TooDeep"


class InvalidImage(GatewayError):
    status_code = 422
    type = "InvalidImage"


class GroupRequestError(GatewayError):
    status_code = 422
    type = "GroupRequestError"


class Overloaded(GatewayError):
    status_code = 429
    type = "Overloaded"


class RewardFunctionFailed(GatewayError):
    status_code = 500
    type = "RewardFunctionFailed"


class Draining(GatewayError):
    status_code = 503
    type = "Draining"


class TooManyOpenGroups(GatewayError):
    status_code = 503
    type = "TooManyOpenGroups"


class StateStoreUnavailable(GatewayError):
    """Raised before the reward function runs whenever possible, so a retry after Retry-After runs it once."""

    status_code = 503
    type = "StateStoreUnavailable"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.with_headers(Retry_After="1")


class GroupAnswerLost(StateStoreUnavailable):
    type = "GroupAnswerLost"


class RewardFunctionTimeout(GatewayError):
    status_code = 504
    type = "RewardFunctionTimeout"


# ---- failures inside a reward call (a result with status "error", not an HTTP answer) ----------------------
class InvalidReturn(Exception):
    """The function returned something that is not a score (see execution/results.py)."""


class ComponentFailed(Exception):
    """A composite's gate or component, or a fallback, failed. `type` is what the result's `error.type` says
    (`CompositeComponentFailed` or `FallbackFailed`); `result_extra` goes into the result's `extra`."""

    def __init__(self, type_: str, message: str, result_extra: dict[str, Any]) -> None:
        super().__init__(message)
        self.type = type_
        self.result_extra = result_extra


class BudgetExhausted(Exception):
    """A spend cap (`max_spend_usd` of the function or of a pool it uses) is reached: the call is not made."""


class GraderError(Exception):
    """The sample does not fit the grader (a template names a missing key, a formula divides by zero...)."""


class FormulaError(ValueError):
    """A `calculate_output` formula that does not parse or uses what is not allowed (graders/formula.py)."""
