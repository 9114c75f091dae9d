"""Sandbox settings of the `code` reward: which backend, how many sandboxes at once, time and size limits.

Given as the function's `reward_kwargs` (`sandbox: {...}`, plus verl's own `sandbox_fusion_url` and
`memory_limit_mb` at the top level so a verl config carries over). A bad value fails the call with a
message naming the field.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

MIB = 1024 * 1024


class SandboxSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["bubblewrap", "sandbox_fusion"] | None = Field(
        default=None, description="Default: sandbox_fusion when sandbox_fusion_url is set, else bubblewrap."
    )
    sandbox_fusion_url: str | None = Field(
        default=None, description="Sandbox Fusion's run_code URL, as verl's sandbox_fusion_url."
    )
    slots: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        ge=1,
        description="Sandboxes running at once (per process).",
    )
    case_timeout_s: float = Field(default=5.0, gt=0, description="Per test case, first pass (verl: 5).")
    retry_case_timeout_s: float = Field(
        default=10.0, gt=0, description="Per test case, retry pass (verl: 10)."
    )
    retry_cases: int = Field(
        default=10, ge=0, description="Cases re-run one by one after a failure (verl: 10)."
    )
    sample_timeout_s: float = Field(
        default=120.0, gt=0, description="Whole sample; then everything is killed."
    )
    memory_limit_mb: int = Field(default=1024, ge=64, description="Address space per sandboxed process.")
    max_processes: int = Field(default=64, ge=4, description="Processes in one sandbox (RLIMIT_NPROC).")
    max_file_bytes: int = Field(default=16 * MIB, ge=0, description="Largest file a program may write.")
    tmp_bytes: int = Field(default=64 * MIB, ge=MIB, description="Size of the sandbox's private /tmp.")
    max_output_bytes: int = Field(default=16 * MIB, ge=1024, description="Output captured per test case.")
    python: str | None = Field(
        default=None, description="Interpreter inside the sandbox; default: the gateway's."
    )
    warm: bool = Field(
        default=True,
        description="One sandbox per pass whose zygote forks a fresh process per case (zygote.py); "
        "false: one sandbox and one interpreter start per case.",
    )
    fusion_request_timeout_s: float = Field(default=30.0, gt=0, description="Extra HTTP slack over the run.")

    @model_validator(mode="after")
    def _backend_has_what_it_needs(self) -> SandboxSettings:
        if self.backend == "sandbox_fusion" and not self.sandbox_fusion_url:
            raise ValueError("backend 'sandbox_fusion' needs sandbox_fusion_url")
        return self

    @property
    def chosen_backend(self) -> Literal["bubblewrap", "sandbox_fusion"]:
        if self.backend is not None:
            return self.backend
        return "sandbox_fusion" if self.sandbox_fusion_url else "bubblewrap"


def settings_from_kwargs(
    sandbox: dict[str, Any] | None, sandbox_fusion_url: str | None, memory_limit_mb: int | None
) -> SandboxSettings:
    """The settings, or ValueError naming the offending `sandbox.<field>`."""
    values: dict[str, Any] = dict(sandbox or {})
    if sandbox_fusion_url is not None:
        values["sandbox_fusion_url"] = sandbox_fusion_url
    if memory_limit_mb is not None:
        values["memory_limit_mb"] = memory_limit_mb
    try:
        return SandboxSettings.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"sandbox.{'.'.join(str(p) for p in err['loc']) or '(settings)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ValueError(problems) from None
