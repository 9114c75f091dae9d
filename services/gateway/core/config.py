"""A reward function's own config section, `functions.<name>`.

A reward function's own config section: `functions.<name>` (`FunctionConfig`, with its `shadow` monitor),
and verl's four base arguments every call gets."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rewardfleet.services.gateway.execution.config import LoadingConfig

# verl's four arguments. They are always passed, so reward_kwargs may not override them.
BASE_PARAMS: tuple[str, ...] = ("data_source", "solution_str", "ground_truth", "extra_info")
# reward_fns/judging/steps.py's aggregates (the fleet reads this config without importing reward functions;
# tests/reward_fns/test_steps.py checks the two lists agree).
ScoreAggregate = Literal["min", "max", "mean", "sum", "last", "first", "product", "first_error"]


class ShadowConfig(BaseModel):
    """`functions.<name>.shadow`: a reference judge pool that re-scores a sampled fraction of the function's
    samples in the background (monitors/shadow.py)."""

    model_config = ConfigDict(extra="forbid")

    pool: str = Field(description="The reference pool (a router or an external pool), e.g. a stronger judge.")
    reward_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Merged over the function's reward_kwargs for the shadow call (model, template...); "
        "`pool` is set from `pool`.",
    )
    sample_rate: float = Field(default=0.05, gt=0, le=1, description="Fraction of ok samples re-scored.")
    window: int = Field(default=500, ge=2, description="Pairs kept for agreement, kappa and drift.")
    max_inflight: int = Field(
        default=4, ge=1, description="Shadow calls at once; a sample drawn beyond this is skipped (counted)."
    )
    pass_score: float = Field(
        default=0.5, description="Scores at or above are 'accept' for agreement and Cohen's kappa."
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Longest wait for one shadow call.")


class FunctionConfig(BaseModel):
    """Per-function settings; `functions.<name>` in the config."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        default=None,
        description="Explicit 'module.name:function' or '/path/to/file.py:function'. "
        "Omit it to configure a function discovered in a reward-function folder.",
    )
    timeout_s: float = Field(default=30.0, gt=0, description="Per-call time limit in seconds.")
    reward_kwargs: dict[str, Any] = Field(default_factory=dict, description="Merged into every call.")
    on_error_score: float | None = Field(
        default=None,
        description="Score reported when the call errors or times out (the result stays flagged).",
    )
    data_sources: list[str] = Field(
        default_factory=list, description="Extra data_source names or fnmatch globs this function claims."
    )
    # Limits for external judges (limits/function_limits.py): calls over a limit wait their turn.
    max_concurrency: int | None = Field(default=None, ge=1, description="Calls of this function at once.")
    requests_per_minute: float | None = Field(default=None, gt=0, description="Calls per minute.")
    tokens_per_minute: float | None = Field(
        default=None, gt=0, description="Estimated tokens per minute: ceil(chars/4) of prompt+solution+truth."
    )
    shadow: ShadowConfig | None = Field(
        default=None, description="A reference judge pool re-scoring a sample in the background (agreement)."
    )
    max_spend_usd: float | None = Field(
        default=None,
        gt=0,
        description="Hard cap on this function's judge spend in dollars (priced pools, `pool_prices`): a "
        "call is admitted only while the spend so far is below it; past it, samples get BudgetExhausted.",
    )
    score_aggregate: ScoreAggregate = Field(
        default="min",
        description="How `score` is made from the function's `step_scores` (else its `turn_scores`) when it "
        "returns none (reward_fns/judging/steps.py, docs/trajectories.md).",
    )
    score_aggregate_threshold: float = Field(
        default=0.5, description="`first_error`: a step scoring below this is wrong."
    )

    @field_validator("path")
    @classmethod
    def _path_shape(cls, value: str | None) -> str | None:
        if value is None:
            return value
        target, sep, attr = value.rpartition(":")
        if not sep or not target or not attr.isidentifier():
            raise ValueError(f"path {value!r} must look like 'module.name:function' or 'file.py:function'")
        return value

    @field_validator("reward_kwargs")
    @classmethod
    def _no_base_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        clash = sorted(set(value) & set(BASE_PARAMS))
        if clash:
            raise ValueError(f"reward_kwargs may not set {clash}: those come from each request")
        return value


class FunctionSources(Protocol):
    """What loading the functions reads of the gateway's config (`GatewayConfig` has it): where to find them,
    each one's section, and the dispatch targets that must name a loaded one."""

    @property
    def loading(self) -> LoadingConfig: ...

    @property
    def functions(self) -> dict[str, FunctionConfig]: ...

    @property
    def dispatch(self) -> dict[str, str]: ...

    @property
    def default_reward_fn(self) -> str | None: ...

    def function_config(self, name: str) -> FunctionConfig: ...
