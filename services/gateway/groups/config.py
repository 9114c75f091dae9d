"""Config section `groups:`: group-wise scoring and its group functions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
