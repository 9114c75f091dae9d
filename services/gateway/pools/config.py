"""Config section `pools:`: the routers and external pools the gateway reaches, and `external_pools.<name>`.

Its keys were once flat at the top of the gateway config; that spelling still works (config/sections.py).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_ADDRESS_RE = re.compile(r"^[A-Za-z0-9._\-\[\]:]+:\d{1,5}$")


def check_address(key: str, value: str) -> str:
    """A bare `host:port`, exactly what verl passes as `reward_router_address` (no scheme, no path)."""
    if "://" in value or "/" in value or not _ADDRESS_RE.match(value):
        raise ValueError(f"{key}: {value!r} is not a bare host:port (e.g. '127.0.0.1:30000', no http://)")
    port = int(value.rsplit(":", 1)[1])
    if not 0 < port < 65536:
        raise ValueError(f"{key}: port {port} is out of range 1-65535")
    return value


class ExternalPoolConfig(BaseModel):
    """Fleet config `pools.<name>` with `backend: external`; gateway config `external_pools.<name>`."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(
        description="The API root, e.g. https://api.openai.com/v1 (paths /chat/completions...); for "
        "api vllm_pooling the vLLM server's root, e.g. http://prm-host:8000 (path /pooling)."
    )
    api: Literal["openai", "vllm_pooling"] = Field(
        default="openai",
        description="openai: chat/completions, completions and embeddings are forwarded below base_url; "
        "vllm_pooling: only vLLM's /pooling is (a process reward model pool, the `prm` built-in).",
    )
    model: str = Field(
        description="The provider's model name; replaces the `model` of every forwarded request."
    )
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the API key (sent as Authorization: Bearer)."
    )
    rpm: int | None = Field(default=None, ge=1, description="Requests per minute, per function.")
    tpm: int | None = Field(
        default=None, ge=1, description="Prompt+completion tokens per minute, per function."
    )
    max_retries: int = Field(default=5, ge=0, description="Retries of a 429 (or a 503 that says when).")
    max_backoff_s: float = Field(default=60.0, gt=0, description="Longest single wait a 429 may impose.")
    timeout_s: float = Field(default=120.0, gt=0)
    constrained_decoding: bool = Field(
        default=False,
        description="Forward SGLang's regex/ebnf/json_schema fields (true for SGLang or our CPU server); "
        "otherwise they are dropped, since OpenAI-style APIs reject unknown fields.",
    )

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/")


class PoolsConfig(BaseModel):
    """The model pools the gateway calls: fleet routers by name, external pools, and the client's bounds."""

    model_config = ConfigDict(extra="forbid")

    routers: dict[str, str] = Field(default_factory=dict, description="Router name -> bare host:port.")
    default_router: str | None = Field(
        default=None, description="Router passed as reward_router_address; the only router if just one."
    )
    external_pools: dict[str, ExternalPoolConfig] = Field(
        default_factory=dict,
        description="OpenAI-compatible endpoints outside the fleet, reached via this gateway (no router).",
    )
    http_max_connections: int = Field(
        default=16384,
        ge=1,
        description="Connection limit of the shared aiohttp session (http_client): one per judge call in "
        "flight, so as many as max_inflight_requests, or the judge calls of a step wait in line.",
    )
    ready_check_timeout_s: float = Field(
        default=1.0, gt=0, description="How long /ready waits for each router's health answer."
    )

    @field_validator("routers")
    @classmethod
    def _router_addresses(cls, value: dict[str, str]) -> dict[str, str]:
        return {name: check_address(f"router {name!r}", addr) for name, addr in value.items()}

    @model_validator(mode="after")
    def _default_router(self) -> PoolsConfig:
        if self.default_router is not None and self.default_router not in self.routers:
            raise ValueError(
                f"default_router: {self.default_router!r} is not one of routers {sorted(self.routers)}"
            )
        if self.default_router is None and len(self.routers) == 1:
            self.default_router = next(iter(self.routers))
        return self

    @property
    def reward_router_address(self) -> str | None:
        return self.routers[self.default_router] if self.default_router else None
