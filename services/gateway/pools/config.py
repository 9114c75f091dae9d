"""`external_pools.<name>`: an OpenAI-compatible endpoint outside the fleet (external_pools.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


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
