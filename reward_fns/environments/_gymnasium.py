"""What the Gymnasium-style environments (`blackjack`, `grl_sokoban`) share: the `step` body and its answer.

NeMo Gym runs these with its `gymnasium_agent`: the model answers in text, the agent posts the model's whole
response to `/step`, and the environment reads the move out of the response's text. Here `step` takes that
same body (`response`, the rest of the row ignored) or just the move's text (`action`), and answers as
NeMo Gym's `EnvStepResponse` does: `observation`, `reward`, `terminated`, `truncated`, `info`. The episode's
reward is the sum of its steps' rewards (what the agent records), so `verify` only reads the session.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rewardfleet.services.environments import Verdict

MAX_TEXT_CHARS = 65_536  # one move's text: far above any move, far below what would cost memory
MAX_OUTPUT_ITEMS = 256


class OutputPart(BaseModel):
    """One content part of a response message; only `output_text` parts carry the move."""

    model_config = ConfigDict(extra="ignore")
    type: str = Field(max_length=64)
    text: str = Field(default="", max_length=MAX_TEXT_CHARS)


class OutputItem(BaseModel):
    """One item of a Responses API `output`: messages are read, other items (reasoning, calls) skipped."""

    model_config = ConfigDict(extra="ignore")
    type: str = Field(max_length=64)
    content: str | list[OutputPart] | None = Field(default=None, max_length=MAX_TEXT_CHARS)


class ModelResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")
    output: list[OutputItem] = Field(max_length=MAX_OUTPUT_ITEMS)

    def text(self) -> str:
        """Every message's text joined, as NeMo Gym's `extract_text` reads a response."""
        parts: list[str] = []
        for item in self.output:
            if item.type != "message" or item.content is None:
                continue
            if isinstance(item.content, str):
                parts.append(item.content)
            else:
                parts.extend(part.text for part in item.content if part.type == "output_text")
        return "".join(parts)


class StepBody(BaseModel):
    """The move: `action` (its text) or `response` (the model's NeMo Gym response); exactly one of them."""

    model_config = ConfigDict(extra="ignore")
    action: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    response: ModelResponse | None = None

    @model_validator(mode="after")
    def _one_move(self) -> StepBody:
        if (self.action is None) == (self.response is None):
            raise ValueError(
                "give exactly one of `action` (the move's text) or `response` (the model's response)"
            )
        return self

    def text(self) -> str:
        return self.action if self.action is not None else self.response.text()  # type: ignore[union-attr]


class StepResult(BaseModel):
    """NeMo Gym's `EnvStepResponse`."""

    observation: str | None
    reward: float
    terminated: bool
    truncated: Literal[False] = False
    info: dict[str, Any] = {}


class Observation(BaseModel):
    observation: str | None


def episode_verdict(state: dict[str, Any]) -> Verdict:
    """The episode so far: the steps' summed reward; an episode not over when verified is `truncated`."""
    terminated = bool(state["terminated"])
    return Verdict(
        reward=state["total_reward"],
        extras={"terminated": terminated, "truncated": not terminated, "info": state["info"]},
    )
