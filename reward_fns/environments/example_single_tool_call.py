"""NeMo Gym's `example_single_tool_call`: one weather tool, every episode scoring 1.0.

The tool's answer is always the same.

Same tool, body and answer as NeMo Gym's server of that name (`get_weather {city}` answers
`{"city", "weather_description": "The weather in <city> is cold."}`), so its recorded rollouts replay here.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from rewardfleet.services.environments import Environment, Session, Verdict, tool


class Weather(BaseModel):
    city: str
    weather_description: str


class SingleToolCall(Environment):
    name = "example_single_tool_call"

    @tool
    async def get_weather(self, session: Session, city: Annotated[str, Field(max_length=1000)]) -> Weather:
        """The weather in a city."""
        return Weather(city=city, weather_description=f"The weather in {city} is cold.")

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        return Verdict(reward=1.0)
