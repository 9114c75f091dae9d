"""A small in-memory `Sessions` (docs/agents_interface.md) serving the counter environment, for the
protocol tests until the gateway's own lands on this branch: same methods, same errors (GatewayError
subclasses with their statuses and `fields`), the counter's tools and reward as NeMo Gym's
example_session_state_mgmt has them, and a `fail` tool raising the tool's own error."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rewardfleet.services.gateway.errors import GatewayError

ENV = "example_session_state_mgmt"


class SessionNotFound(GatewayError):
    status_code = 404
    type = "SessionNotFound"


class UnknownTool(GatewayError):
    status_code = 404
    type = "UnknownTool"


class Invalid(GatewayError):
    status_code = 422
    type = "ToolArgumentsInvalid"


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Opened:
    token: str
    id: str
    env: str


@dataclass(frozen=True)
class Outcome:
    output: Any
    is_error: bool


@dataclass(frozen=True)
class Verdict:
    reward: float
    reward_components: dict[str, float] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)


class _Task(BaseModel):
    initial_count: int = 0


class _Increment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int


class _Nothing(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Verify(BaseModel):
    expected_count: int


_TOOLS: dict[str, tuple[str, type[BaseModel]]] = {
    "increment_counter": ("Adds count to the session's counter.", _Increment),
    "get_counter_value": ("The session's counter.", _Nothing),
    "fail": ("Always fails with the tool's own error.", _Nothing),
}


def _invalid(what: str, exc: ValidationError) -> Invalid:
    fields = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors(include_url=False)]
    summary = "; ".join(f"{'.'.join(str(p) for p in f['loc'])}: {f['msg']}" for f in fields)
    return Invalid(f"{what}: {summary}", fields=fields)


class MemorySessions:
    def __init__(self) -> None:
        self.open_sessions: dict[str, dict[str, Any]] = {}

    def environments(self) -> list[str]:
        return [ENV]

    def tools(self, env: str) -> list[Spec]:
        return [Spec(name, doc, model.model_json_schema()) for name, (doc, model) in _TOOLS.items()]

    async def open(self, tenant: str, env: str, task: Mapping[str, Any]) -> Opened:
        try:
            parsed = _Task.model_validate(task)
        except ValidationError as exc:
            raise _invalid("task", exc) from None
        token, id_ = secrets.token_urlsafe(32), secrets.token_hex(8)
        self.open_sessions[token] = {"tenant": tenant, "id": id_, "count": parsed.initial_count, "calls": 0}
        return Opened(token, id_, env)

    def _find(self, tenant: str, token: str) -> dict[str, Any]:
        found = self.open_sessions.get(token)
        if found is None or found["tenant"] != tenant:
            raise SessionNotFound("no such session (unknown, closed or expired)")
        return found

    async def call(self, tenant: str, token: str, tool: str, arguments: Mapping[str, Any]) -> Outcome:
        session = self._find(tenant, token)
        if tool not in _TOOLS:
            raise UnknownTool(f"environment {ENV!r} has no tool {tool[:64]!r}")
        try:
            parsed = _TOOLS[tool][1].model_validate(arguments)
        except ValidationError as exc:
            raise _invalid(tool, exc) from None
        session["calls"] += 1
        if tool == "fail":
            return Outcome("the tool failed on purpose", True)
        if isinstance(parsed, _Increment):
            session["count"] += parsed.count
            return Outcome({"success": True}, False)
        return Outcome({"count": session["count"]}, False)

    async def verify(self, tenant: str, token: str, body: Mapping[str, Any]) -> Verdict:
        session = self._find(tenant, token)
        try:
            expected = _Verify.model_validate(body).expected_count
        except ValidationError as exc:
            raise _invalid("verify", exc) from None
        return Verdict(reward=float(session["count"] == expected))

    async def state(self, tenant: str, token: str) -> dict[str, Any]:
        session = self._find(tenant, token)
        return {
            "id": session["id"],
            "env": ENV,
            "tool_calls": session["calls"],
            "state": {"count": session["count"]},
        }

    async def close(self, tenant: str, token: str) -> None:
        self._find(tenant, token)
        del self.open_sessions[token]
