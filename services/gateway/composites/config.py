"""Config sections `composites` and `fallbacks`.

Checks that need the loaded functions (does a component name a real function?) run when the catalog is built
(`catalog/build.py`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
