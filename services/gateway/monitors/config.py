"""Config of the judge monitors: `judge_probes` and `functions.<name>.shadow`.

Judge monitors (docs/judge_monitoring.md): `judge_probes`, master-key probes of judge pools
(monitors/probes.py), and `functions.<name>.shadow`, a reference judge re-scoring some of a function's samples
(monitors/shadow.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ReferenceQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    answer: str = Field(min_length=1, description="The reference answer the judge compares against.")


class JudgeProbesConfig(BaseModel):
    """Which judge functions to probe, how often, and what a pool that fails them becomes."""

    model_config = ConfigDict(extra="forbid")

    functions: list[str] = Field(
        default_factory=list,
        description="Judge functions to probe (each with its own reward_kwargs: template, model, pool). The "
        "pool label is the function's reward_kwargs `pool` (default 'judge'). Empty = no probes.",
    )
    interval_s: float = Field(default=600.0, gt=0, description="Time between two rounds of one function.")
    retry_s: float = Field(
        default=10.0,
        gt=0,
        description="Wait before the next round when no probe got an answer (not ready, or failing); doubled "
        "after each such round in a row, up to retry_max_s.",
    )
    retry_max_s: float = Field(
        default=600.0,
        gt=0,
        description="Longest wait between rounds that get no answer: retry_s doubles after each, up to this.",
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Longest wait for one probe call.")
    max_concurrency: int = Field(default=2, ge=1, description="Probe calls in flight at once, in all.")
    pass_score: float = Field(
        default=0.5, description="A master-key answer scored at or above this is a false positive."
    )
    answers: list[str] | None = Field(
        default=None, description="The master keys sent; None = the built-in list (monitors/probes.py)."
    )
    extra_answers: list[str] = Field(default_factory=list, description="Your own, sent as well.")
    questions: list[ReferenceQuestion] | None = Field(
        default=None, description="Reference questions; None = the built-in three."
    )
    pool_max_tokens: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict,
        description="Largest max_tokens each judge pool accepts (a CPU pool's max-new-tokens-limit): a probe "
        "of a function on that pool asks for at most this. The fleet fills it for the CPU pools it runs.",
    )
    degrade_above_ratio: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="A pool whose false-positive ratio in the last round is above this is degraded.",
    )
    on_degraded: Literal["report", "refuse"] = Field(
        default="report",
        description="report: shown in /monitors, status and rewardfleet_judge_pool_degraded only; refuse: "
        "samples of functions naming the pool get JudgePoolDegraded until a round passes again.",
    )

    @field_validator("functions")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("judge_probes.functions lists a function twice")
        return value
