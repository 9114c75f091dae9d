"""Config section `state:`: where gateway replicas share their state.

Config section `state:`: where gateway replicas share their state (groups, result cache, budgets, spend),
and how long a store operation and a crashed replica's leases may last (factory.py, redis_client.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class StateConfig(BaseModel):
    """None for `state_url`: in-process state (one replica); a Redis URL: every replica shares it."""

    model_config = ConfigDict(extra="forbid")

    state_url: str | None = Field(
        default=None,
        description="None = in-process state (one replica). redis://[:password@]host:port/db, rediss:// "
        "for TLS (?ssl_ca_certs=/path.pem), unix:///path.sock: every replica shares it.",
    )
    state_key_prefix: str = Field(default="rewardfleet:", min_length=1, description="Namespace in Redis.")
    state_timeout_s: float = Field(default=5.0, gt=0, description="Longest wait for one store operation.")
    state_lease_s: float = Field(
        default=10.0, gt=0, description="A crashed replica's runs and slots are free again after this."
    )

    @field_validator("state_url")
    @classmethod
    def _state_url_scheme(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("state_url must be redis://host:port/db, rediss://... (TLS) or unix:///path")
        return value
