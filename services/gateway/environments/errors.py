"""The refusals of environment sessions, in the gateway's one error envelope (errors.py).

    SessionNotFound          404  unknown, closed or expired token, or another tenant's (the same answer)
    UnknownEnvironment       404  no environment of that name is loaded
    UnknownTool              404  the session's environment has no tool of that name
    TaskInvalid              422  the seed body does not fit the environment's Task (`fields`: each `loc`)
    ToolArgumentsInvalid     422  a tool's arguments do not fit its schema (`fields`: each `loc`)
    VerifyBodyInvalid        422  verify's body does not fit what the environment reads (`fields`)
    SessionLimitExceeded     409  a SessionLimits bound (`limit`: state_bytes, tool_calls, wall_time_s), or
                                  a state JSON cannot hold (`state_json`): the state is not saved
    SessionBusy              409  another call of the session held it longer than lock_wait_s
    SessionQuotaExceeded     429  the tenant's `sessions_open` quota; Retry-After
    EnvironmentFailed        500  the environment's own code raised (seed, a tool, verify): logged
    EnvironmentTimeout       504  it ran past tool_timeout_s

A tool's `ToolError` is none of these: it is the tool's output (`ToolOutcome.is_error`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rewardfleet.services.gateway.errors import GatewayError

MAX_FIELDS = 20  # field errors listed in one answer


class SessionNotFound(GatewayError):
    status_code = 404
    type = "SessionNotFound"

    def __init__(self) -> None:
        super().__init__("no such session (unknown, closed or expired)")


class UnknownEnvironment(GatewayError):
    status_code = 404
    type = "UnknownEnvironment"


class UnknownTool(GatewayError):
    status_code = 404
    type = "UnknownTool"


class _Invalid(GatewayError):
    """422 listing each bad field as the gateway's ValidationError does: `fields: [{loc, msg}]`."""

    status_code = 422

    def __init__(self, what: str, errors: Sequence[Any]) -> None:
        fields = [
            {
                "loc": [str(p) if not isinstance(p, int) else p for p in e.get("loc", ())],
                "msg": str(e.get("msg")),
            }
            for e in list(errors)[:MAX_FIELDS]
        ]
        summary = "; ".join(f"{'.'.join(str(p) for p in f['loc']) or what}: {f['msg']}" for f in fields[:5])
        super().__init__(f"{what}: {summary}", fields=fields)
        self.fields = fields


class TaskInvalid(_Invalid):
    type = "TaskInvalid"


class ToolArgumentsInvalid(_Invalid):
    type = "ToolArgumentsInvalid"


class VerifyBodyInvalid(_Invalid):
    type = "VerifyBodyInvalid"


class SessionLimitExceeded(GatewayError):
    status_code = 409
    type = "SessionLimitExceeded"

    def __init__(self, limit: str, value: float, message: str) -> None:
        super().__init__(message, limit=limit, value=value)
        self.limit = limit


class SessionBusy(GatewayError):
    status_code = 409
    type = "SessionBusy"


class SessionQuotaExceeded(GatewayError):
    """429 naming the tenant quota `sessions_open`; the message says how many are open."""

    status_code = 429
    type = "SessionQuotaExceeded"

    def __init__(self, tenant: str, limit: int, retry_after_s: float) -> None:
        super().__init__(
            f"tenant {tenant!r}: {limit} sessions open already (quota sessions_open); close one or wait",
            quota="sessions_open",
            tenant=tenant,
            limit=limit,
        )
        self.with_headers(Retry_After=str(max(1, math.ceil(retry_after_s))))


class EnvironmentFailed(GatewayError):
    status_code = 500
    type = "EnvironmentFailed"


class EnvironmentTimeout(GatewayError):
    status_code = 504
    type = "EnvironmentTimeout"
