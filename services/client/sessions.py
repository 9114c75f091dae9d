"""Environment sessions from the trainer's side: open one, call its tools, verify it, close it.

    async with client.session("example_session_state_mgmt", {"initial_count": 3}) as s:
        await s.call("increment_counter", count=4)
        verdict = await s.verify(expected_count=7)          # verdict.reward == 1.0

    with sync_client.session("example_session_state_mgmt", initial_count=3) as s:   # RewardClient: the same
        s.call("get_counter_value")

Spoken over the gateway's `/sessions/*` routes. The session's token is a bearer secret held here only.
A tool call is never sent twice (a lost answer raises `GatewayUnavailable`: the tool may have run); a
tool's own failure raises `ToolCallError` with its message, after which the session goes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rewardfleet.services.client._exceptions import RewardFleetError, SessionNotFound

if TYPE_CHECKING:
    from rewardfleet.services.client.async_client import AsyncRewardClient


@dataclass(frozen=True)
class SessionVerdict:
    reward: float
    reward_components: dict[str, float] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)


class ToolCallError(RewardFleetError):
    """The tool itself failed (the environment's `ToolError`); `message` is what the agent would read."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(f"tool {tool!r} failed: {message}")
        self.tool = tool
        self.message = message


class AsyncSession:
    """One session of an environment on the gateway; `id` is set once it is open."""

    def __init__(self, client: AsyncRewardClient, env: str, task: Mapping[str, Any]) -> None:
        self._client = client
        self.env = env
        self.task = dict(task)
        self.id: str | None = None
        self._token: str | None = None

    async def __aenter__(self) -> AsyncSession:
        return await self.open()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _require_token(self) -> str:
        if self._token is None:
            raise RuntimeError(
                f"the session of {self.env!r} is not open (use `async with` or `await open()`)"
            )
        return self._token

    async def open(self) -> AsyncSession:
        if self._token is not None:
            raise RuntimeError("the session is open already")
        data, _ = await self._client._request(
            "POST", "/sessions/open", {"env": self.env, "task": self.task}, None
        )
        self._token, self.id = data["token"], data["session_id"]
        return self

    async def call(self, tool: str, /, **arguments: Any) -> Any:
        """The tool's output; `ToolCallError` when the tool fails."""
        body = {"token": self._require_token(), "tool": tool, "arguments": arguments}
        data, _ = await self._client._request("POST", "/sessions/call", body, None, resend=False)
        if data["is_error"]:
            raise ToolCallError(tool, str(data["output"]))
        return data["output"]

    async def verify(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> SessionVerdict:
        """The environment's verdict on the session; `body` (or keyword fields) is what its verify reads."""
        payload = {"token": self._require_token(), "body": {**(body or {}), **fields}}
        data, _ = await self._client._request("POST", "/sessions/verify", payload, None, resend=False)
        return SessionVerdict(data["reward"], dict(data["reward_components"]), dict(data["extras"]))

    async def state(self) -> dict[str, Any]:
        """{id, env, tool_calls, state}."""
        data, _ = await self._client._request(
            "POST", "/sessions/state", {"token": self._require_token()}, None
        )
        return dict(data)

    async def close(self) -> None:
        """Frees the session on the gateway (one that expired meanwhile is gone already: no error)."""
        token, self._token = self._token, None
        if token is None:
            return
        with contextlib.suppress(SessionNotFound):
            await self._client._request("POST", "/sessions/close", {"token": token}, None)
