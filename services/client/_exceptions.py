"""Every exception the client raises, in one tree.

    RewardFleetError                 base class; catch this to catch everything below
    ├── GatewayUnavailable           transient failures (connection errors, timeouts, 429, 503) that were
    │                                still failing when the retry budget ran out; carries the last cause
    └── GatewayHTTPError             an answer the gateway will give again if asked again (4xx other than
        │                            429, 5xx other than 503); carries status, type, message and fields
        ├── Unauthorized             401: missing or wrong API key (`api_key=`)
        ├── BadRequest               422: the sample does not validate (`fields` names the culprits)
        ├── UnknownRewardFunction    404: no function for this `reward_fn` / `data_source`
        ├── SessionNotFound          404: the environment session is unknown, closed or expired
        └── PayloadTooLarge          413: the body is over the gateway's limit

A reward *function* that fails is not an exception here: the gateway answers 200 with
`status: "error" | "timeout"`, and that arrives as a `ScoreResult` whose `ok` is False.
"""

from __future__ import annotations

from typing import Any


class RewardFleetError(Exception):
    """Base class of every error raised by `rewardfleet.services.client`."""


class GatewayUnavailable(RewardFleetError):
    """The gateway could not be reached (or kept refusing work) for the whole retry budget."""

    def __init__(self, message: str, *, attempts: int, last_status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_status = last_status


class GatewayHTTPError(RewardFleetError):
    """A non-retryable HTTP answer, with the gateway's error envelope decoded."""

    def __init__(
        self,
        status: int,
        type_: str,
        message: str,
        fields: list[Any] | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"HTTP {status} {type_}: {message}")
        self.status = status
        self.type = type_
        self.message = message
        self.fields = fields or []
        self.body = body


class Unauthorized(GatewayHTTPError):
    """401: the gateway requires an API key and got none, or one it does not accept."""


class BadRequest(GatewayHTTPError):
    """422: the gateway rejected the sample's shape."""


class UnknownRewardFunction(GatewayHTTPError):
    """404: the gateway has no function for this sample."""


class SessionNotFound(GatewayHTTPError):
    """404: the environment session is unknown, closed or expired (or another tenant's)."""


class PayloadTooLarge(GatewayHTTPError):
    """413: the request body is over the gateway's configured limit."""


_BY_TYPE: dict[str, type[GatewayHTTPError]] = {"SessionNotFound": SessionNotFound}
_BY_STATUS: dict[int, type[GatewayHTTPError]] = {
    401: Unauthorized,
    404: UnknownRewardFunction,
    413: PayloadTooLarge,
    422: BadRequest,
}


def http_error(status: int, body: Any) -> GatewayHTTPError:
    """Build the right `GatewayHTTPError` subclass from a status and a decoded (or raw) body."""
    type_, message, fields = f"http_{status}", "", []
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        type_ = str(envelope.get("type") or type_)
        message = str(envelope.get("message") or "")
        raw_fields = envelope.get("fields")
        fields = list(raw_fields) if isinstance(raw_fields, list) else []
    elif (
        isinstance(body, dict) and "detail" in body
    ):  # FastAPI's default shape, should the envelope be missing
        message = str(body["detail"])
    elif body is not None:
        message = str(body)[:500]
    cls = _BY_TYPE.get(type_) or _BY_STATUS.get(status, GatewayHTTPError)
    return cls(status, type_, message, fields, body)
