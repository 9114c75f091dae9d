"""`nemo_gym:` in the gateway config: one entry per resources server the gateway stands in for.

    nemo_gym:
      servers:
        mcqa:                       # served at /nemo_gym/mcqa/verify (and at /verify on `port`, if set)
          reward_fn: mcqa
          ground_truth: expected_answer
          extra_info: [options, grading_mode, template_metadata]
          answer_field: extracted_answer
        counter:                    # an environment: seed_session opens a session, /<tool> calls its tools
          environment: example_session_state_mgmt

A verify body's task fields (everything but `responses_create_params` and `response`) become the sample:
`ground_truth` names the field that is the reference (None: no reference), `extra_info` the fields passed
in `extra_info` ("*": every task field), `response` whether the function gets the response's output text
(`output_text`) or also the whole exchange as chat `messages` (`messages`: input, reasoning left out,
assistant text and tool calls, tool results), `result_fields` the extra keys echoed at the top of the
answer (None: every extra key that does not collide with a body field), `answer_fields` further answer keys
a NeMo Gym response model requires, named after the function's extras (`{extracted_answer: pred}`).

A server naming an `environment` (environments/, docs/environments.md) instead of a `reward_fn` keeps a
session per rollout: `seed_session` opens it (a cookie), each tool is `POST /<tool>`, `verify` scores the
session; the mapping fields above do not apply to it.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


class NeMoGymServer(BaseModel):
    """How one resources server's verify bodies are scored."""

    model_config = ConfigDict(extra="forbid")

    reward_fn: str | None = Field(
        default=None, description="The function that scores this server's verify bodies."
    )
    environment: str | None = Field(
        default=None, description="Or: the environment whose sessions this server serves (its tools, verify)."
    )
    ground_truth: str | None = Field(default=None, description="Task field that becomes `ground_truth`.")
    extra_info: list[str] | Literal["*"] = Field(
        default="*", description="Task fields passed in `extra_info` ('*': all of them)."
    )
    response: Literal["output_text", "messages"] = "output_text"
    result_fields: list[str] | None = Field(
        default=None,
        description="Extra keys echoed at the top of the answer (None: all that do not collide).",
    )
    answer_fields: dict[str, str | None] = Field(
        default_factory=dict,
        description="Answer keys the server's response model needs, each from an extra key of the function, "
        "'reward' (the reward), or null: e.g. {extracted_answer: pred, library_reward: reward}.",
    )
    answer_field: str | None = Field(
        default=None, description="Answer key for majority@k in /aggregate_metrics (e.g. extracted_answer)."
    )
    data_source: str | None = Field(default=None, description="Default: nemo_gym/<server name>.")
    error_score: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Reward for a failed sample (flagged `reward_failed`); None: answer 500/504.",
    )
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Also serve this server at the root of its own port."
    )
    expose_tools_over_mcp: bool = Field(
        default=False,
        description="An environment server: also serve its tools over MCP at <server>/mcp, each session's "
        "token in the X-NeMo-Gym-Session-Token header, given by seed_session's answer (`mcp`).",
    )

    @model_validator(mode="after")
    def _one_scorer(self) -> NeMoGymServer:
        if (self.reward_fn is None) == (self.environment is None):
            raise ValueError(
                "a server names exactly one of reward_fn (verify only) or environment (sessions)"
            )
        if self.expose_tools_over_mcp and self.environment is None:
            raise ValueError("expose_tools_over_mcp: only a server with an environment has tools")
        return self


class NeMoGymConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prefix: str = Field(default="/nemo_gym", description="Routes are <prefix>/<server>/verify, ...")
    servers: dict[str, NeMoGymServer] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, NeMoGymServer]) -> dict[str, NeMoGymServer]:
        for name in servers:
            if not _NAME.fullmatch(name):
                raise ValueError(f"server name {name!r}: 1-64 letters, digits, '_', '.', '-'")
        ports = [s.port for s in servers.values() if s.port is not None]
        if len(ports) != len(set(ports)):
            raise ValueError("two servers share a port")
        return servers

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, prefix: str) -> str:
        if not re.fullmatch(r"(/[A-Za-z0-9_.-]+)+", prefix):
            raise ValueError("prefix must look like /nemo_gym")
        return prefix
