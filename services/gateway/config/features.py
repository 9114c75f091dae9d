"""Config sections of the features: `composites`, `fallbacks` and `groups` (`graders` is graders.py).

Kept apart from `gateway.py` so that file only lists them as fields. Checks that need the loaded functions
(does a component name a real function?) run when the catalog is built (`features/build.py`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

FallbackReason = Literal["circuit_open", "unreachable", "timeout"]
ALL_FALLBACK_REASONS: tuple[FallbackReason, ...] = ("circuit_open", "unreachable", "timeout")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComponentSpec(_Strict):
    fn: str = Field(description="A loaded reward function (or grader) name.")
    weight: float = 1.0
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Merged over the function's reward_kwargs."
    )


class GateSpec(_Strict):
    fn: str
    min_score: float = Field(description="Components run only when the gate's score is >= this.")
    kwargs: dict[str, Any] = Field(default_factory=dict)


class CompositeSpec(_Strict):
    """`composites.<name>`: a weighted sum of functions, optionally behind a gate."""

    components: list[ComponentSpec] = Field(min_length=1, max_length=32)  # reward_components' bound
    gate: GateSpec | None = None
    on_component_error: Literal["fail", "skip", "score"] = Field(
        default="fail",
        description="fail: the composite fails; skip: drop the component and renormalise the remaining "
        "weights; score: the component counts as `error_score`.",
    )
    error_score: float = 0.0
    gate_closed_score: float = Field(
        default=0.0, description="The composite's score when the gate is closed."
    )
    timeout_s: float = Field(default=120.0, gt=0)
    data_sources: list[str] = Field(default_factory=list)


class FallbackSpec(_Strict):
    """`fallbacks.<async function name>`: who scores when that function's model pool cannot answer."""

    fn: str = Field(description="The function (e.g. a rule check) that scores instead.")
    on: list[FallbackReason] = Field(default_factory=lambda: list(ALL_FALLBACK_REASONS))


class GroupFunctionConfig(_Strict):
    path: str | None = Field(
        default=None,
        description="'module:function' or 'file.py:function'; omit for a built-in group function.",
    )
    kwargs: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0)
    score_partial: bool = Field(
        default=True,
        description="At the group deadline, run the function over the members present (extra.group_partial); "
        "false: every present member gets status group_timeout.",
    )


class GroupsConfig(_Strict):
    """`groups:`: group-wise scoring of samples that carry `group_id` + `group_size`."""

    timeout_s: float = Field(default=300.0, gt=0, description="From the first member's arrival.")
    max_open_groups: int = Field(default=4096, ge=1)
    max_group_size: int = Field(default=1024, ge=1)
    finished_groups_kept: int = Field(
        default=4096, ge=0, description="Finished groups remembered so a late duplicate gets the same answer."
    )
    default_group_fn: str | None = None
    builtin_package: str | None = Field(default="rewardfleet.reward_fns.groups")
    functions: dict[str, GroupFunctionConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _paths(self) -> GroupsConfig:
        for name, cfg in self.functions.items():
            if cfg.path is not None and ":" not in cfg.path:
                raise ValueError(
                    f"groups.functions.{name}.path {cfg.path!r} must look like 'module:function'"
                )
        return self
