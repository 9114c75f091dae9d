"""`SessionLimits`: what one session of an environment may use."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SessionLimits:
    """Bounds of one session; the gateway enforces them and names the one exceeded.

    `state_bytes`: the session's state as compact JSON. `tool_calls`: calls over the session's life.
    `wall_time_s`: seconds from open after which every call is refused (verify and close still answer).
    `ttl_s`: seconds without any call after which the session expires and its state is freed.
    """

    state_bytes: int = 1 << 20
    tool_calls: int = 1000
    wall_time_s: float = 3600.0
    ttl_s: float = 900.0

    def __post_init__(self) -> None:
        for name in ("state_bytes", "tool_calls", "wall_time_s", "ttl_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"SessionLimits.{name} must be a positive number, got {value!r}")
