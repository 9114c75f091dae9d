"""Config section `environments:`: which environments the gateway serves, and how their sessions run.

environments:
  folders: [/srv/envs]          # every module there defining Environment subclasses (like reward_fns_dirs)
  builtin_package: rewardfleet.reward_fns.environments    # null: no built-in environment
  tool_timeout_s: 60            # one tool call, seed, verify or close
  reap_interval_s: 5            # how often expired sessions are freed (and the open gauge re-read)
  lock_wait_s: 30               # how long a call waits for another call of its session to finish
  sandbox: {provider: local, root: /var/lib/rewardfleet/sandboxes}   # for environments with a sandbox_spec
  settings:                     # an environment's own `Settings`, by environment name
    workplace_assistant: {data_dir: /srv/workplace_assistant/csv_data}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rewardfleet.services.sandbox.settings import SandboxSettings


class EnvironmentsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    folders: list[Path] = Field(
        default_factory=list, description="Folders of environment modules, loaded after the built-ins."
    )
    builtin_package: str | None = Field(
        default="rewardfleet.reward_fns.environments",
        description="Package whose modules are the built-in environments; null = none.",
    )
    tool_timeout_s: float = Field(default=60.0, gt=0, description="Longest seed, tool call, verify or close.")
    reap_interval_s: float = Field(default=5.0, gt=0, description="Seconds between two sweeps of expiries.")
    lock_wait_s: float = Field(
        default=30.0, gt=0, description="Longest wait of a call for the session's previous call to end."
    )

    sandbox: SandboxSettings | None = Field(
        default=None,
        description="The provider of sessions' sandboxes (services/sandbox); None: no sandboxes.",
    )

    settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Environment name -> its settings (the environment's `Settings` model validates them "
        "at start-up; an environment without settings, or not loaded, is refused by name).",
    )

    @field_validator("folders")
    @classmethod
    def _folders_exist(cls, value: list[Path]) -> list[Path]:
        for folder in value:
            if not folder.is_dir():
                raise ValueError(f"environments.folders: {str(folder)!r} is not a directory")
        return value
