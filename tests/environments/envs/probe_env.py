"""Environments the session tests drive: a value per session, tools that race, fail, crash and grow."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import BaseModel, Field

from rewardfleet.services.environments import Environment, Session, SessionLimits, ToolError, Verdict, tool


class ProbeTask(BaseModel):
    start: int = 0


class ProbeVerify(BaseModel):
    expected: int


class Probe(Environment):
    name = "probe"
    Task = ProbeTask
    limits = SessionLimits(state_bytes=4096, tool_calls=40, wall_time_s=600, ttl_s=3600)

    async def seed(self, session: Session, task: ProbeTask) -> None:
        session.state["value"] = task.start

    @tool
    async def add(self, session: Session, n: int = Field(ge=-1000, le=1000)) -> dict[str, Any]:
        """Adds n to the value, after a pause (a read-modify-write across an await: only a lock keeps it)."""
        value = session.state["value"]
        await asyncio.sleep(0.01)
        session.state["value"] = value + n
        return {"value": session.state["value"], "pid": os.getpid()}

    @tool
    async def fail(self, session: Session) -> None:
        """Changes the value, then fails as a tool: the change is not kept."""
        session.state["value"] = -1
        raise ToolError("the tool says no")

    @tool
    async def crash(self, session: Session) -> None:
        session.state["value"] = -2
        raise RuntimeError("a bug in the environment")

    @tool
    async def nan(self, session: Session) -> float:
        return float("nan")

    @tool
    async def grow(self, session: Session, chars: int) -> None:
        session.state["blob"] = "x" * chars

    @tool
    async def put(self, session: Session, payload: dict[str, Any]) -> dict[str, int]:
        session.state["payload"] = payload
        return {"keys": len(payload)}

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        expected = ProbeVerify.model_validate(body).expected
        return Verdict(float(session.state["value"] == expected), {"value": session.state["value"]})


class Ephemeral(Probe):
    name = "ephemeral"
    limits = SessionLimits(ttl_s=0.3)


class Closing(Probe):
    """Records every close in a class-level list the test reads."""

    name = "closing"
    closed: list[str] = []  # noqa: RUF012 - the test's own record

    async def close(self, session: Session) -> None:
        type(self).closed.append(session.id)
