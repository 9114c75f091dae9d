"""What the OpenEnv and MCP routes share.

They share the app's environment `Sessions` (environments/sessions.py), and a Sessions error as a protocol
other than HTTP reports it. The caller's tenant is `sessions.current_tenant()` (wired by tenants/, which sets
it for HTTP requests and WebSocket connections alike; "" without tenants).

The routes hold no session state of their own: every call goes to `Sessions`, whose errors are
`GatewayError`s carrying their status (environments/errors.py: 404 unknown session / environment / tool,
422 bad task or arguments with each field's `loc` in `fields`, 409 a session limit, 429 `sessions_open`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import HTTPConnection

from rewardfleet.services.gateway.environments.errors import UnknownEnvironment
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.errors import GatewayError
from rewardfleet.services.gateway.facade import gateway_of

SessionsOf = Callable[[HTTPConnection], Sessions]


def sessions_of(connection: HTTPConnection) -> Sessions:
    """The sessions of the app's `Gateway` (started by the gateway's lifespan)."""
    sessions = gateway_of(connection.app.state).sessions
    if sessions is None:
        raise GatewayError("environment sessions are not started")
    return sessions


def known(sessions: Sessions, env: str) -> str:
    """`env`, or UnknownEnvironment (404) naming it and the ones served."""
    names = sessions.environments()
    if env not in names:
        raise UnknownEnvironment(
            f"no environment {env[:64]!r} is loaded (loaded: {', '.join(names) or 'none'})", field="env"
        )
    return env


def field_errors(exc: GatewayError) -> list[dict[str, Any]]:
    """The `{loc, msg}` of each bad field a 422 carries (its `fields` detail), else []."""
    raw = exc.details.get("fields") or []
    return [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in raw if isinstance(e, Mapping)
    ]


def described(exc: GatewayError) -> str:
    """The error's message, followed by each bad field as `a.b: msg` when it names none itself."""
    fields = field_errors(exc)
    named = "; ".join(f"{'.'.join(str(p) for p in f['loc'])}: {f['msg']}" for f in fields[:5])
    if named and named not in exc.message:
        return f"{exc.message} ({named})"
    return exc.message
