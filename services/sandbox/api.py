"""The two protocols every provider implements: `Sandbox` (one running sandbox) and `SandboxProvider`
(creates, attaches to and reaps them). Environments and rewards see only these and `spec.py`'s types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from rewardfleet.services.sandbox.spec import ExecResult, SandboxSpec, VerifierMounts

DEFAULT_MAX_OUTPUT_BYTES = 1 << 20
DEFAULT_MAX_FILE_BYTES = 1 << 20


@runtime_checkable
class Sandbox(Protocol):
    """One running sandbox. Every method raises `SandboxNotFound` once it is stopped, and `SandboxFailed`
    when the sandbox itself broke."""

    id: str

    async def exec(
        self,
        cmd: Sequence[str] | str,
        *,
        timeout_s: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        verifier: VerifierMounts | None = None,
    ) -> ExecResult:
        """Runs `cmd` (argv, or a str for `/bin/sh -c`) to its end or `timeout_s`; every process it
        started is gone when this returns. `verifier` is for verifiers only (tools never pass it)."""
        ...

    async def read_file(self, path: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
        """The file's bytes; `FileNotFoundError` when it is absent, `FileTooLarge` over `max_bytes`."""
        ...

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        """Writes (creates or replaces) a file, making its parent folders; bounded by the disk limit."""
        ...

    async def stop(self) -> None:
        """Kills every process of the sandbox and removes its writable layer and mounts; idempotent."""
        ...


@runtime_checkable
class SandboxProvider(Protocol):
    """Makes sandboxes of one kind (`local`, `kubernetes`)."""

    name: str

    async def create(self, spec: SandboxSpec, *, owner: str) -> Sandbox:
        """A new sandbox from `spec`; `owner` says who answers for it (the reaper's unit: a process)."""
        ...

    async def attach(self, sandbox_id: str) -> Sandbox:
        """The same running sandbox, from any process of this host (local) or anywhere (remote)."""
        ...

    async def reap(self) -> int:
        """Stops every sandbox past its ttl or whose owner is gone; returns how many it stopped."""
        ...
