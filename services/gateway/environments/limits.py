"""The bounds of one session (`SessionLimits`), checked by `Sessions` on every call: each refusal names the
limit, and nothing of the refused call is saved."""

from __future__ import annotations

from typing import Any

from rewardfleet.services.environments import SessionLimits
from rewardfleet.services.gateway.environments.errors import EnvironmentFailed, SessionLimitExceeded
from rewardfleet.services.gateway.environments.records import SessionRecord, dump_json


def check_call(limits: SessionLimits, record: SessionRecord, now: float) -> None:
    if record.tool_calls >= limits.tool_calls:
        raise SessionLimitExceeded(
            "tool_calls",
            limits.tool_calls,
            f"the session made its {limits.tool_calls} tool calls (limit)",
        )
    if now - record.opened_at > limits.wall_time_s:
        raise SessionLimitExceeded(
            "wall_time_s",
            limits.wall_time_s,
            f"the session is past its wall time of {limits.wall_time_s:g}s",
        )


def check_state(limits: SessionLimits, record: SessionRecord) -> None:
    try:
        size = len(dump_json(record.state).encode())
    except (
        TypeError,
        ValueError,
    ) as exc:  # a set, NaN, an int past 4300 digits: the state stays as it was
        raise SessionLimitExceeded(
            "state_json", 0, f"the new state cannot be stored as JSON ({exc}); it was not saved"
        ) from None
    if size > limits.state_bytes:
        raise SessionLimitExceeded(
            "state_bytes",
            limits.state_bytes,
            f"the state would be {size} bytes; the limit is {limits.state_bytes}",
        )


def check_json(value: Any, env: str, what: str) -> None:
    """An answer the protocols can send: JSON without NaN (else it is the environment's bug)."""
    try:
        dump_json(value)
    except (TypeError, ValueError) as exc:
        raise EnvironmentFailed(f"{env}.{what} answered what JSON cannot hold: {exc}") from None


def expiry(limits: SessionLimits, opened_at: float, active_at: float) -> float:
    """`ttl_s` after the last call, never more than `ttl_s` past the wall time."""
    return min(active_at, opened_at + limits.wall_time_s) + limits.ttl_s
