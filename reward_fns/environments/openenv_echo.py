"""NeMo Gym's `openenv` server as its `openenv_echo` config runs it: OpenEnv's MCP echo environment.

Two tools, `echo_message {message}` (the message back) and `echo_with_length {message}` (the message and its
length), answering as NeMo Gym's OpenEnv adapter does: `{"result": <the MCP tool result as OpenEnv's
observation holds it: content, structured_content, data, ...>, "error": null}`. The echo environment gives
no reward, so every episode scores its steps' sum, 0.0, as upstream.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from rewardfleet.services.environments import Environment, Session, Verdict, tool

Message = Annotated[str, Field(max_length=100_000)]


def _answer(structured: dict[str, Any], data: Any, text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text, "annotations": None, "_meta": None}]
    result = {
        "content": content,
        "structured_content": structured,
        "meta": None,
        "data": data,
        "is_error": False,
    }
    return {"result": result, "error": None}


class OpenEnvEcho(Environment):
    name = "openenv_echo"

    @tool
    async def echo_message(self, session: Session, message: Message) -> dict[str, Any]:
        """Echo back the provided message."""
        return _answer({"result": message}, message, message)

    @tool
    async def echo_with_length(self, session: Session, message: Message) -> dict[str, Any]:
        """Echo back the message together with its length."""
        body = {"message": message, "length": len(message)}
        return _answer(body, body, json.dumps(body, separators=(",", ":"), ensure_ascii=False))

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        return Verdict(reward=0.0)
