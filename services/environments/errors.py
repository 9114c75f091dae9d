"""What an environment raises on purpose: a tool's own failure, and a session that has no sandbox."""

from __future__ import annotations


class ToolError(Exception):
    """The tool's own failure, shown to the agent as the tool's output; the session's state is not saved.

    The message is the output (NeMo Gym: a 4xx with it; MCP: `isError: true`), so it must be written for the
    agent to read, and must not hold anything the agent may not see.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SandboxUnavailable(RuntimeError):
    """`session.sandbox()` on a session that has none: its environment's `sandbox_spec` gave None, or the
    session was built without a sandbox opener (a test driving an environment directly)."""
