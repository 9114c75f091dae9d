"""NeMo Gym's `example_tool_call_multireward`: one expected weather call, scored on three separate parts.

Same tool and scores as NeMo Gym's server of that name: `get_weather {city}` answers
`{"city", "weather_description": "The weather in <city> is sunny."}`; `reward_components` are
`correctness` (some call of the response has the expected name and at least the expected arguments),
`schema_valid` (the first call's arguments are a JSON object holding every required parameter of its tool)
and `format` (exactly one call and no message); `reward` is their sum. These judge the response's own
shape, so they read the verify body's `response.output`; the expected call and the tools' required
parameters come from the session's task, never from the verify body.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, Field

from rewardfleet.reward_fns.environments._responses import response_output
from rewardfleet.services.environments import Environment, Session, Verdict, tool


class ExpectedCall(BaseModel):
    name: str = ""
    arguments: dict[str, Any] = {}


class DeclaredTool(BaseModel):
    name: str = ""
    parameters: dict[str, Any] = {}


class DeclaredTools(BaseModel):
    tools: list[DeclaredTool] = Field(default=[], max_length=256)


class MultiRewardTask(BaseModel):
    expected_call: ExpectedCall | None = None
    responses_create_params: DeclaredTools = DeclaredTools()


class Weather(BaseModel):
    city: str
    weather_description: str


def _arguments(raw: Any) -> tuple[dict[str, Any], bool]:
    """(the arguments as an object, whether they were one), as NeMo Gym parses a call's arguments."""
    if isinstance(raw, dict):
        return raw, True
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}, False
        return (value, True) if isinstance(value, dict) else ({}, False)
    return {}, False


class ToolCallMultiReward(Environment):
    name = "example_tool_call_multireward"
    Task = MultiRewardTask

    async def seed(self, session: Session, task: MultiRewardTask) -> None:
        required = {
            t.name: t.parameters.get("required") or [] for t in reversed(task.responses_create_params.tools)
        }
        session.state.update(
            expected_call=task.expected_call.model_dump() if task.expected_call else None, required=required
        )

    @tool
    async def get_weather(self, session: Session, city: Annotated[str, Field(max_length=1000)]) -> Weather:
        """Get the weather in a city."""
        return Weather(city=city, weather_description=f"The weather in {city} is sunny.")

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        items = response_output(body)
        calls = [
            {"name": _name(i.get("name")), "arguments": i.get("arguments")}
            for i in items
            if i.get("type") == "function_call"
        ]
        expected = session.state["expected_call"]
        fmt = float(len(calls) == 1 and not any(i.get("type") == "message" for i in items))
        schema = 0.0
        if calls:
            parsed, is_object = _arguments(calls[0]["arguments"])
            required = session.state["required"].get(calls[0]["name"], [])
            schema = float(is_object and all(key in parsed for key in required))
        correct = float(any(_matches(call, expected) for call in calls))
        components = {"correctness": correct, "schema_valid": schema, "format": fmt}
        return Verdict(
            reward=sum(components.values()),
            reward_components=components,
            extras={
                **components,
                "predicted_calls": [
                    {"name": c["name"], "arguments": _arguments(c["arguments"])[0]} for c in calls
                ],
            },
        )


def _name(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _matches(call: dict[str, Any], expected: dict[str, Any] | None) -> bool:
    if not expected or call["name"] != expected["name"]:
        return False
    arguments, _ = _arguments(call["arguments"])
    return all(arguments.get(key) == value for key, value in expected["arguments"].items())
