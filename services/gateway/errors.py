"""Every exception of the gateway, and the one function that builds the error envelope.

    GatewayError                  base: `status_code`, `type` (the envelope's `type`), `details`, `headers`
    ├── LoadError                 start-up / reload: a reward-function file or config entry is unusable
    ├── TokenizerUnavailable      start-up: `reward_model_tokenizer` cannot be loaded (no HTTP)
    ├── Unauthorized              401: missing or unknown API key (+ WWW-Authenticate)
    ├── InlineCodeRefused         403: an inline grader spec names code (`field` says where)
    ├── UnknownRewardFunction     404: `reward_fn` names no loaded function
    ├── Undispatchable            404: no function claims the `data_source` and there is no default
    ├── ReloadFailed              409: `POST /admin/reload` rejected; the previous functions keep serving
    ├── BatchTooLarge             413: more samples than `max_batch_samples` (/score/batch, /openrlhf)
    ├── PayloadTooLarge           413: body over `max_body_bytes` (answered by common/body_limits.py)
    ├── FieldTooLarge             413: one field of a sample over its `max_*_chars` (`field` names it)
    ├── TooDeep                   422: JSON nested deeper than `max_extra_info_depth` / `max_json_depth`
    ├── InvalidImage              422: an image that is not one (bad base64, not a known format) or a URL
                                  outside `allowed_image_url_hosts` (`field` names it; too large is 413)
    ├── GroupRequestError         422: inconsistent group fields (`group_id`, `group_size`, `group_index`)
    ├── Overloaded                429: admission is full (+ Retry-After)
    ├── RewardFunctionFailed      500: OpenRLHF/slime sample failed with no fallback score
    ├── Draining                  503: the gateway is shutting down (+ Retry-After)
    ├── TooManyOpenGroups         503: `max_open_groups` groups are waiting for members
    ├── StateStoreUnavailable     503: the shared state store (Redis) failed or is unreachable (+ Retry-After)
    │   └── GroupAnswerLost       503: a repeated group member's answer was never written (its replica died)
    └── RewardFunctionTimeout     504: OpenRLHF/slime sample timed out with no fallback score

    Raised inside a reward call; the sample gets a result with `status: "error"` and this `error.type`
    (a 200, never an HTTP error):
    InvalidReturn                 the function returned something that is not a score
    ComponentFailed               a composite's component or gate, or a fallback, failed (`type` names which;
                                  `result_extra` carries the components' reports)
    GraderError                   the sample does not fit a declarative grader
    BudgetExhausted               the function's or its judge pool's `max_spend_usd` is reached (the call is
                                  not made; spend/meter.py)
    (ResultTooLarge)              not an exception: the `error.type` of a call whose `extra` is over
                                  `max_result_extra_chars` (dropped, never cached)

    At config validation (a ValueError, so pydantic reports it under the key):
    FormulaError                  a multi grader's `calculate_output` is not a valid formula

Every error answer is the envelope `{"error": {"type", "message", ...details}}` built by `error_envelope`
(details: `fields`, `available_reward_fns`, `available_data_sources`, `field`, `samples`). Bad input is 4xx,
never 500. Standard library only: worker processes import this module.
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
