"""An environment with a sandbox: tools write and read a file inside it, verify checks the file."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rewardfleet.services.environments import Environment, Session, Verdict, tool
from rewardfleet.services.sandbox import SandboxSpec


class BoxedTask(BaseModel):
    image: str


class Boxed(Environment):
    name = "boxed"
    Task = BoxedTask

    def sandbox_spec(self, task: BoxedTask) -> SandboxSpec:
        return SandboxSpec(image=task.image, ttl_s=600)

    @tool
    async def write(self, session: Session, text: str) -> dict[str, Any]:
        """Writes text to /tmp/note in the session's sandbox."""
        sandbox = await session.sandbox()
        await sandbox.write_file("/tmp/note", text.encode())
        return {"sandbox": sandbox.id}

    @tool
    async def read(self, session: Session) -> dict[str, Any]:
        sandbox = await session.sandbox()
        result = await sandbox.exec(["cat", "/tmp/note"], timeout_s=20)
        return {"text": result.stdout.decode(), "sandbox": sandbox.id}

    @tool
    async def write_then_crash(self, session: Session) -> None:
        sandbox = await session.sandbox()
        await sandbox.write_file("/tmp/note", b"lost")
        raise RuntimeError("a bug after the sandbox was made")

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        result = await (await session.sandbox()).exec(["cat", "/tmp/note"], timeout_s=20)
        return Verdict(float(result.stdout.decode() == body.get("expected")))
