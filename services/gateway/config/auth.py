"""Config section `auth:`: the bearer keys of a gateway without tenants.

Config section `auth:`: the bearer keys of a gateway without tenants (services/common/api_keys.py checks
them on every route but /health). Kept in the config package, as tenants.py is: no gateway package owns auth.
With `tenants`, every key belongs to a tenant instead (gateway.py refuses both)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from rewardfleet.services.common.api_keys import check_api_keys, read_keys_file


class AuthConfig(BaseModel):
    """Keys given inline and/or in a file; none of either = no auth."""

    model_config = ConfigDict(extra="forbid")

    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Bearer keys (env: comma-separated), each at least 16 characters; empty with no file = "
        "no auth.",
    )
    api_keys_file: Path | None = Field(
        default=None,
        description="File of API keys, one per line (at least one, each at least 16 characters).",
    )
    auth_exempt_metrics: bool = Field(default=False, description="Serve /metrics without a key.")

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("api_keys")
    @classmethod
    def _strong_keys(cls, value: list[SecretStr]) -> list[SecretStr]:
        check_api_keys([key.get_secret_value() for key in value], "api_keys")
        return value

    @field_validator("api_keys_file")
    @classmethod
    def _keys_file_holds_keys(cls, value: Path | None) -> Path | None:
        if value is None:
            return value
        if not value.is_file():
            raise ValueError(f"api_keys_file: {str(value)!r} is not a file")
        keys = read_keys_file(value)
        if not keys:
            raise ValueError(
                f"api_keys_file: {str(value)!r} holds no key (an empty file would turn auth off)"
            )
        check_api_keys(keys, f"api_keys_file {str(value)!r}: key")
        return value
