"""OpenEnv's wire shapes (`openenv` 0.10, `openenv/core/env_server/`) for an environment of the fleet.

An action is one of OpenEnv's MCP-style actions, or `verify`:

    {"type": "list_tools"}                         -> {"tools": [{name, description, input_schema}]}
    {"type": "call_tool", "tool_name", "arguments"} -> {"tool_name", "result", "error"}
    {"type": "verify", "body": {...}}              -> reward, done: true, {reward_components, extras}

`call_tool` answers as OpenEnv's `CallToolObservation`: `result` is a tool result (`content`,
`structured_content`, `data`, `is_error`) and `error` a `ToolError` (`error_type`, `message`); OpenEnv's
`MCPToolClient.call_tool`
returns `result["data"]` or raises on `error`. A tool's own failure (`ToolError`) is `execution_error`, an
unknown tool `tool_not_found`, arguments its schema refuses `invalid_args` naming each field, as OpenEnv's own
MCP environments report them. `verify`'s body is the task given at reset with `body`'s keys over it.
Answers are `{"observation", "reward", "done"[, "metadata"]}` (OpenEnv's `serialize_observation`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from rewardfleet.services.environments import ToolSpec, Verdict

MAX_TEXT_CHARS = 1 << 20  # a tool output's text content, beyond which it is cut (its `data` is whole)


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: dict[str, Any] = Field(default_factory=dict)


class ListTools(_Action):
    type: Literal["list_tools"]


class CallTool(_Action):
    type: Literal["call_tool"]
    tool_name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Verify(_Action):
    type: Literal["verify"]
    body: dict[str, Any] = Field(default_factory=dict)


Action = Annotated[ListTools | CallTool | Verify, Field(discriminator="type")]
ACTION = TypeAdapter(Action)


class ResetBody(BaseModel):
    """OpenEnv's `ResetRequest`: `seed` and `episode_id` are its own; every other key is the task."""

    model_config = ConfigDict(extra="allow")
    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = Field(default=None, max_length=255)


class StepBody(BaseModel):
    """OpenEnv's `StepRequest`."""

    model_config = ConfigDict(extra="allow")
    action: dict[str, Any]
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = Field(default=None, max_length=255)


def task_of(reset: dict[str, Any]) -> dict[str, Any]:
    """The environment's task from reset kwargs: all of them but OpenEnv's `episode_id` (the fleet names
    episodes itself), and `seed` only when given."""
    return {k: v for k, v in reset.items() if k != "episode_id" and not (k == "seed" and v is None)}


def answer(observation: dict[str, Any], reward: float | None = None, done: bool = False) -> dict[str, Any]:
    return {"observation": observation, "reward": reward, "done": done}


def tools_observation(specs: list[ToolSpec]) -> dict[str, Any]:
    return {
        "tools": [
            {"name": s.name, "description": s.description, "input_schema": s.input_schema} for s in specs
        ]
    }


def tool_result(tool: str, output: Any, is_error: bool) -> dict[str, Any]:
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    if is_error:
        return {"tool_name": tool, "result": None, "error": tool_error("execution_error", text)}
    return {
        "tool_name": tool,
        "result": {
            "content": [{"type": "text", "text": text[:MAX_TEXT_CHARS]}],
            "structured_content": output if isinstance(output, dict) else {"result": output},
            "data": output,
            "is_error": False,
        },
        "error": None,
    }


def tool_error(error_type: str, message: str) -> dict[str, str]:
    return {"error_type": error_type, "message": message}


def tool_failed(tool: str, error_type: str, message: str) -> dict[str, Any]:
    return {"tool_name": tool, "result": None, "error": tool_error(error_type, message)}


def verdict_answer(verdict: Verdict) -> dict[str, Any]:
    observation = {"reward_components": dict(verdict.reward_components), "extras": dict(verdict.extras)}
    return answer(observation, reward=verdict.reward, done=True)


def schema(specs: list[ToolSpec]) -> dict[str, Any]:
    """`GET /schema`: the action schema lists each tool's call with its own argument schema."""
    calls = [
        {
            "type": "object",
            "title": f"call_tool {s.name}",
            "description": s.description,
            "properties": {
                "type": {"const": "call_tool"},
                "tool_name": {"const": s.name},
                "arguments": s.input_schema,
                "metadata": {"type": "object"},
            },
            "required": ["type", "tool_name"],
            "additionalProperties": False,
        }
        for s in specs
    ]
    action = ACTION.json_schema()
    return {
        "action": {
            "oneOf": [ListTools.model_json_schema(), *calls, Verify.model_json_schema()],
            **_defs(action),
        },
        "observation": _OBSERVATION,
        "reset_observation": _RESET_OBSERVATION,
        "state": _STATE,
    }


def _defs(schema_: dict[str, Any]) -> dict[str, Any]:
    return {"$defs": schema_["$defs"]} if "$defs" in schema_ else {}


_OBSERVATION: dict[str, Any] = {
    "type": "object",
    "title": "Observation",
    "description": "list_tools: tools; call_tool: tool_name, result, error; verify: reward_components, "
    "extras",
    "properties": {
        "tools": {"type": "array", "items": {"type": "object"}},
        "tool_name": {"type": "string"},
        "result": {},
        "error": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        "reward_components": {"type": "object", "additionalProperties": {"type": "number"}},
        "extras": {"type": "object"},
        "done": {"type": "boolean"},
        "reward": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        "metadata": {"type": "object"},
    },
}
_RESET_OBSERVATION: dict[str, Any] = {
    "type": "object",
    "title": "ResetObservation",
    "properties": {"episode_id": {"type": ["string", "null"]}, "tools": {"type": "array"}},
}
_STATE: dict[str, Any] = {
    "type": "object",
    "title": "State",
    "properties": {
        "episode_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "step_count": {"type": "integer", "minimum": 0},
        "state": {"type": "object", "description": "the session's state, as the environment keeps it"},
    },
}
