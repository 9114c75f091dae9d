"""The part of a NeMo Gym verify body the text-graded environments read: `response.output`.

Parsed with a model, so a body without it (or with items that are not objects) is refused naming the field
(the gateway's 422), never a crash of the environment.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")
    output: list[dict[str, Any]] = Field(max_length=10_000)


class _VerifyBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    response: _Response


def response_output(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The episode's Responses API output items; `pydantic.ValidationError` when the body has none."""
    return _VerifyBody.model_validate(body).response.output
