"""`Session`: what one call of an environment sees of its session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardfleet.services.environments.errors import SandboxUnavailable


class SandboxHandle(Protocol):
    """The part of a sandbox (`rewardfleet.services.sandbox.Sandbox`) an environment calls.

    Declared here so the authoring API does not depend on a provider being importable; any `Sandbox` of
    `services/sandbox` satisfies it.
    """

    id: str

    async def exec(
        self,
        cmd: Sequence[str] | str,
        *,
        timeout_s: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        max_output_bytes: int = 1 << 20,
    ) -> Any: ...

    async def read_file(self, path: str, *, max_bytes: int = 1 << 20) -> bytes: ...

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None: ...

    async def stop(self) -> None: ...


SandboxOpener = Callable[["Session"], Awaitable[SandboxHandle]]


@dataclass(eq=False)
class Session:
    """One episode of an environment, as a tool, `seed`, `verify` or `close` sees it.

    `id` is public (logs, metrics, `state`), never the bearer token. `state` is a JSON object: the gateway
    saves it after a call that returns normally and refuses it past `limits.state_bytes`; a call that raises
    saves nothing. `tool_calls` counts the calls made before this one. Build one directly to drive an
    environment in a test: `Session(id="s", tenant="t", env="counter")`.
    """

    id: str
    tenant: str
    env: str
    state: dict[str, Any] = field(default_factory=dict)
    tool_calls: int = 0
    sandbox_opener: SandboxOpener | None = field(default=None, repr=False)
    _sandbox: SandboxHandle | None = field(default=None, init=False, repr=False)

    async def sandbox(self) -> SandboxHandle:
        """The session's one sandbox: created on first use from the environment's `sandbox_spec(task)`,
        attached to again by any later call (from any gateway process of the host), stopped with the session.
        """
        if self._sandbox is None:
            if self.sandbox_opener is None:
                raise SandboxUnavailable(f"session {self.id} of {self.env!r} has no sandbox")
            self._sandbox = await self.sandbox_opener(self)
        return self._sandbox
