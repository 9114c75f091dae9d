"""The sessions' sandboxes: the provider `environments.sandbox` names (services/sandbox/settings.py), a
session's sandbox created on its first `session.sandbox()` from its environment's `sandbox_spec(task)`,
attached to by id on every later call (any gateway process of the host), stopped when the session closes or
expires. The id is the only thing kept, in the session's state under `sandbox_id`.

At start the provider reaps what a crashed gateway left (past its ttl, or its owner process gone); at stop
every sandbox this process created is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from rewardfleet.services.environments import (
    Environment,
    SandboxHandle,
    SandboxOpener,
    SandboxUnavailable,
    Session,
)
from rewardfleet.services.gateway.errors import LoadError
from rewardfleet.services.sandbox import SandboxError, SandboxNotFound, SandboxProvider
from rewardfleet.services.sandbox.settings import (
    KubernetesSandboxSettings,
    LocalSandboxSettings,
    make_provider,
)

logger = logging.getLogger(__name__)
SANDBOX_ID_KEY = "sandbox_id"


class SessionSandboxes:
    """The one provider of a gateway process, and the sandbox of each session it serves."""

    def __init__(self, provider: SandboxProvider) -> None:
        self.provider = provider

    @classmethod
    async def start(cls, settings: LocalSandboxSettings | KubernetesSandboxSettings) -> SessionSandboxes:
        """The provider, checked (a LoadError naming what this host lacks), after one reap."""
        try:
            provider = await asyncio.to_thread(make_provider, settings)
            reaped = await provider.reap()
        except SandboxError as exc:
            raise LoadError(f"environments.sandbox: {exc}") from None
        if reaped:
            logger.warning("sandboxes: stopped %d left by a gateway that did not stop cleanly", reaped)
        return cls(provider)

    def opener(self, environment: Environment, task: Mapping[str, Any], owner: str) -> SandboxOpener:
        """What `session.sandbox()` calls for a session of `environment` seeded with `task`."""

        async def open_sandbox(session: Session) -> SandboxHandle:
            known = session.state.get(SANDBOX_ID_KEY)
            if isinstance(known, str):
                return await self.provider.attach(known)
            spec = environment.sandbox_spec(environment.Task.model_validate(task))
            if spec is None:
                raise SandboxUnavailable(f"environment {environment.name!r} has no sandbox_spec")
            sandbox = await self.provider.create(spec, owner=owner)
            session.state[SANDBOX_ID_KEY] = sandbox.id
            return sandbox

        return open_sandbox

    async def stop(self, state: Mapping[str, Any]) -> None:
        """Stops the sandbox a session's state names, if any (already stopped or reaped: nothing to do)."""
        known = state.get(SANDBOX_ID_KEY)
        if isinstance(known, str):
            with contextlib.suppress(SandboxNotFound):
                await (await self.provider.attach(known)).stop()

    async def close(self) -> None:
        """Stops every sandbox this process created (the local provider; a remote one's pods are reaped)."""
        stop_owned = getattr(self.provider, "stop_owned", None)
        if stop_owned is not None:
            stopped = await stop_owned()
            if stopped:
                logger.info("sandboxes: stopped %d at the gateway's stop", stopped)
