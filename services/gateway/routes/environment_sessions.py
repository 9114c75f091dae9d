"""What the OpenEnv and MCP routes need of environment sessions: the `Sessions` object's shape
(docs/agents_interface.md), the caller's tenant, and an error as a protocol other than HTTP reports it.

The routes hold no session state of their own: every call goes to `Sessions`, whose errors are `GatewayError`s
carrying their status (404 unknown session / environment / tool, 422 bad arguments with each field's `loc`,
409 a session limit, 429 the `sessions_open` quota).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from starlette.requests import HTTPConnection

from rewardfleet.services.gateway.errors import GatewayError
from rewardfleet.services.gateway.tenants.context import current

NO_TENANT = ""  # the tenant of every call when no tenant is configured


class ToolSpecLike(Protocol):
    name: str
    description: str
    input_schema: dict[str, Any]


class OpenedLike(Protocol):
    token: str
    id: str
    env: str


class OutcomeLike(Protocol):
    output: Any
    is_error: bool


class VerdictLike(Protocol):
    reward: float
    reward_components: dict[str, float]
    extras: dict[str, Any]


class Sessions(Protocol):
    """The gateway's environment sessions, as every protocol route calls them."""

    def environments(self) -> list[str]: ...

    def tools(self, env: str) -> list[Any]: ...  # ToolSpecLike

    async def open(self, tenant: str, env: str, task: Mapping[str, Any]) -> Any: ...  # OpenedLike

    async def call(
        self, tenant: str, token: str, tool: str, arguments: Mapping[str, Any]
    ) -> Any: ...  # OutcomeLike

    async def verify(self, tenant: str, token: str, body: Mapping[str, Any]) -> Any: ...  # VerdictLike

    async def state(self, tenant: str, token: str) -> dict[str, Any]: ...

    async def close(self, tenant: str, token: str) -> None: ...


SessionsOf = Callable[[HTTPConnection], Sessions]


def sessions_of(connection: HTTPConnection) -> Sessions:
    """The app's `Sessions`, put on `app.state.sessions` by the gateway's lifespan."""
    sessions: Sessions | None = getattr(connection.app.state, "sessions", None)
    if sessions is None:
        raise GatewayError("environment sessions are not started")
    return sessions


def tenant() -> str:
    """The calling tenant (set by the tenant middleware for HTTP and WebSocket alike), or `NO_TENANT`."""
    caller = current.get()
    return NO_TENANT if caller is None else caller.tenant


def field_errors(exc: GatewayError) -> list[dict[str, Any]]:
    """The `{loc, msg}` of each bad field a 422 carries (its `fields` or `errors` detail), else []."""
    raw = exc.details.get("fields") or exc.details.get("errors") or []
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


class UnknownEnvironment(GatewayError):
    status_code = 404
    type = "UnknownEnvironment"


def known(sessions: Sessions, env: str) -> str:
    """`env`, or UnknownEnvironment (404) naming it and the ones served."""
    names = sessions.environments()
    if env not in names:
        raise UnknownEnvironment(
            f"no environment {env[:64]!r} is served (environments: {', '.join(names)})", field="env"
        )
    return env
