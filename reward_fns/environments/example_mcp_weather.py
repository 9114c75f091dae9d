"""NeMo Gym's `example_mcp_weather`: ask the weather of the task's city, then answer with it.

Same tool and reward as NeMo Gym's server of that name: `get_weather {city}` answers
`{"weather": "The weather in <city> is sunny and 72 F."}`; the reward is 1.0 when the session called it
for the expected city (case-insensitive) and the response's assistant text contains that sentence. The
expected city is the task's `verifier_metadata.expected_city` (default Paris), read at seed.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from rewardfleet.reward_fns.environments._responses import response_output
from rewardfleet.services.environments import Environment, Session, Verdict, tool


class Metadata(BaseModel):
    expected_city: str = Field(default="Paris", max_length=1000)


class McpWeatherTask(BaseModel):
    verifier_metadata: Metadata | None = None


class Weather(BaseModel):
    weather: str


def sentence(city: str) -> str:
    return f"The weather in {city} is sunny and 72 F."


def assistant_text(body: dict[str, Any]) -> str:
    texts: list[str] = []
    for item in response_output(body):
        if item.get("type") != "message" or item.get("role") != "assistant":
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "\n".join(texts).strip()


class McpWeather(Environment):
    name = "example_mcp_weather"
    Task = McpWeatherTask

    async def seed(self, session: Session, task: McpWeatherTask) -> None:
        session.state.update(expected_city=(task.verifier_metadata or Metadata()).expected_city, cities=[])

    @tool
    async def get_weather(self, session: Session, city: Annotated[str, Field(max_length=1000)]) -> Weather:
        """Get a deterministic weather report for a city."""
        session.state["cities"].append(city)
        return Weather(weather=sentence(city))

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        city: str = session.state["expected_city"]
        expected = sentence(city)
        seen = any(called.casefold() == city.casefold() for called in session.state["cities"])
        mentioned = expected.casefold() in assistant_text(body).casefold()
        return Verdict(
            reward=float(seen and mentioned),
            extras={
                "expected_weather": expected,
                "tool_call_seen": seen,
                "final_response_mentions_weather": mentioned,
            },
        )
