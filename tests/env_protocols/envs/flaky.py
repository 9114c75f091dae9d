"""An environment whose tool fails with its own error, and one that echoes (for the tool-error tests)."""

from __future__ import annotations

from typing import Any

from rewardfleet.services.environments import Environment, NoTask, Session, ToolError, Verdict, tool


class Flaky(Environment):
    name = "flaky"
    Task = NoTask

    @tool
    async def fail(self, session: Session) -> dict[str, Any]:
        """Always fails with the tool's own error."""
        session.state["touched"] = True  # never saved: a failed call leaves the state as it was
        raise ToolError("the tool failed on purpose")

    @tool
    async def echo(self, session: Session, text: str) -> str:
        """Answers its text."""
        session.state["echoes"] = session.state.get("echoes", 0) + 1
        return text

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        return Verdict(reward=float(session.state.get("echoes", 0)))
