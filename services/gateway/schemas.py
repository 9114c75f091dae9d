"""Request and response bodies of the gateway's routes."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from rewardfleet.services.gateway.trajectory import ChatMessage, rendered_solution, validated_messages

# Checked as `ChatMessage`s, kept as plain dicts (what functions receive): one validation, no model objects
# on the request. The OpenAPI document shows each message's role and fields (trajectory.py has the rules).
_MESSAGE_SCHEMA = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"enum": list(get_args(ChatMessage.model_fields["role"].annotation))},
        "content": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}, {"type": "null"}]
        },
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "tool_call_id": {"type": "string"},
        "name": {"type": "string"},
    },
}
Messages = Annotated[
    list[dict[str, Any]] | None,
    AfterValidator(validated_messages),
    WithJsonSchema({"anyOf": [{"type": "array", "items": _MESSAGE_SCHEMA}, {"type": "null"}]}),
]


def canonical_json(value: Any) -> bytes:
    """One byte string per value, whatever the dict order (models are dumped first): what digests and version
    hashes of request values and specs are computed over."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr).encode()


# "group_timeout": a group member whose group did not complete in time (groups/scorer.py).
Status = Literal["ok", "error", "timeout", "group_timeout"]


class ScoreRequest(BaseModel):
    """One sample to score. verl's names, with the aliases slime and OpenRLHF users reach for."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    data_source: str = Field(description="Dataset name; picks the function when `reward_fn` is not given.")
    solution_str: str = Field(
        default="",
        validation_alias=AliasChoices("solution_str", "response"),
        description="The model's response (alias `response`). Required unless `messages` is given: then, "
        "when left out, it is the last assistant turn's text (trajectory.py).",
    )
    ground_truth: Any = Field(
        default=None,
        validation_alias=AliasChoices("ground_truth", "label"),
        description="Reference answer, any JSON (alias `label`).",
    )
    extra_info: dict[str, Any] = Field(default_factory=dict, description="Passed through; null means {}.")
    prompt: str | list[dict[str, Any]] | None = Field(
        default=None, description="The prompt text or its chat messages; injected as `prompt`."
    )
    images: list[str] | None = Field(
        default=None,
        description="Images of the sample: `data:image/...;base64,` URLs, or http(s) URLs of allowed hosts "
        "(docs/multimodal.md); injected as `images`. `prompt` messages may also carry `image_url` parts.",
    )
    reward_fn: str | None = Field(default=None, description="Function name; overrides dispatch.")
    uid: str | int | None = Field(default=None, description="Echoed back; injected as `uid`.")
    group_id: str | int | None = Field(default=None, description="GRPO group this sample belongs to.")
    group_size: int | None = Field(default=None, ge=1, description="Members in the group (with group_id).")
    group_index: int | None = Field(
        default=None, ge=0, description="Member index in the group; identifies the member (else `uid`)."
    )
    group_fn: str | None = Field(default=None, description="Group function run once the group is complete.")
    messages: Messages = Field(
        default=None,
        description="The trajectory in OpenAI chat format (tool calls and results); injected as `messages`.",
    )

    @field_validator("extra_info", mode="before")
    @classmethod
    def _null_extra_info(cls, value: Any) -> Any:
        return {} if value is None else value

    @model_validator(mode="after")
    def _solution_or_messages(self) -> ScoreRequest:
        messages = self.messages
        if messages is None:
            if "solution_str" not in self.model_fields_set:
                raise ValidationError.from_exception_data(  # where pydantic's own "missing" would point
                    "ScoreRequest", [InitErrorDetails(type="missing", loc=("solution_str",), input=None)]
                )
        elif "solution_str" not in self.model_fields_set:
            self.solution_str = rendered_solution(messages)
        # The fields-set pydantic built one name at a time has a table larger than a sample's usual 5-8
        # fields need; a copy is sized for what it holds, and is held for as long as the post is in flight
        # (docs/architecture.md, the hot path). Still this sample's own set: pydantic adds to it on
        # assignment.
        object.__setattr__(self, "__pydantic_fields_set__", self.__pydantic_fields_set__.copy())
        return self


class BatchRequest(BaseModel):
    samples: list[ScoreRequest]


class ErrorInfo(BaseModel):
    type: str
    message: str


class Timings(BaseModel):
    queue_s: float | None = Field(default=None, description="Wait for a worker process (sync functions).")
    compute_s: float
    total_s: float


class ScoreResult(BaseModel):
    uid: str | int | None
    score: float | None
    step_scores: list[float] | None = Field(
        default=None, description="Per-step scores the function returned (docs/trajectories.md)."
    )
    turn_scores: list[float] | None = Field(
        default=None, description="Per-turn scores the function returned (docs/trajectories.md)."
    )
    reward_components: dict[str, float] | None = Field(
        default=None,
        description="Named reward components (`{name: number}`, at most 32 names of 1-64 characters of "
        "letters, digits and `_ . : / -`): a composite's components, or what the function returned under "
        "`reward_components` (docs/nemo_gym.md).",
    )
    extra: dict[str, Any]
    reward_fn: str
    data_source: str
    status: Status
    error: ErrorInfo | None
    fallback_score: bool = Field(
        default=False, description="True when `score` is the configured on_error_score, not a real score."
    )
    timings: Timings
    cached: bool = Field(
        default=False, description="True when answered from the result cache or a duplicate's running call."
    )
    version: str | None = Field(
        default=None, description="Version of the function that scored: hash of its source and config."
    )


class BatchResult(BaseModel):
    results: list[ScoreResult]


class RewardFunctionInfo(BaseModel):
    name: str
    source_file: str
    origin: Literal["builtin", "user", "config"]
    kind: Literal["sync", "async"]
    injected_params: list[str]
    data_sources: list[str]
    version: str
    timeout_s: float
    on_error_score: float | None


class RewardFunctionList(BaseModel):
    reward_fns: list[RewardFunctionInfo]
    dispatch: dict[str, str] = Field(description="Effective data_source -> function table (globs included).")
    default_reward_fn: str | None


class RouterCheck(BaseModel):
    address: str
    reachable: bool
    error: str | None = None


class StartupCheckStatus(BaseModel):
    ok: bool
    detail: str | None = None


class ReadyStatus(BaseModel):
    ready: bool
    reward_fns: int
    routers: dict[str, RouterCheck]
    # Each loaded function's start-up check (the `code` sandbox: whether it works here, else which setting
    # is missing). A failed check does not make the gateway unready: every other function still works.
    startup_checks: dict[str, StartupCheckStatus] = {}


class ErrorField(BaseModel):
    loc: list[str | int]
    msg: str


class ErrorBody(BaseModel):
    type: str
    message: str
    fields: list[ErrorField] | None = None
    available_reward_fns: list[str] | None = None
    available_data_sources: list[str] | None = None


class ErrorEnvelope(BaseModel):
    """Every non-2xx answer of the gateway has this shape."""

    error: ErrorBody
