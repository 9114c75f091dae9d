"""The one sandbox of each session (`session.sandbox()`): created on first use from the environment's
`sandbox_spec(task)` by the configured provider (`environments.sandbox`, services/sandbox), its id kept in the
session's record so any later call (any process of the host) attaches to it, stopped when the session is
closed, expires, or the call that created it fails before the id was saved."""

from __future__ import annotations

import logging

from rewardfleet.services.environments import (
    Environment,
    SandboxHandle,
    SandboxOpener,
    SandboxUnavailable,
    Session,
)
from rewardfleet.services.gateway.environments.records import SessionRecord
from rewardfleet.services.sandbox import SandboxNotFound, SandboxProvider

logger = logging.getLogger(__name__)


class SessionSandboxes:
    def __init__(self, provider: SandboxProvider | None) -> None:
        self.provider = provider

    def opener(self, environment: Environment, record: SessionRecord) -> SandboxOpener:
        async def open_sandbox(session: Session) -> SandboxHandle:
            if self.provider is None:
                raise SandboxUnavailable(
                    f"{record.env}: no sandbox provider is configured (environments.sandbox)"
                )
            if record.sandbox_id is not None:
                return await self.provider.attach(record.sandbox_id)
            spec = environment.sandbox_spec(type(environment).Task.model_validate(record.task))
            if spec is None:
                raise SandboxUnavailable(f"{record.env}: its sandbox_spec is None for this task")
            sandbox = await self.provider.create(spec, owner=f"session:{record.id}")
            record.sandbox_id = sandbox.id
            return sandbox

        return open_sandbox

    async def stop(self, sandbox_id: str | None) -> None:
        """Stops a session's sandbox, if it has one; a failure is logged (the provider's reaper stops what
        outlives its ttl), never raised: the session is gone either way."""
        if sandbox_id is None or self.provider is None:
            return
        try:
            await (await self.provider.attach(sandbox_id)).stop()
        except SandboxNotFound:
            pass
        except Exception as exc:
            logger.warning(
                "sandbox %s of a freed session not stopped: %s: %s", sandbox_id, type(exc).__name__, exc
            )
