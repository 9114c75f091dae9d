"""Config section `admission:`: how much work is taken at once and what waits.

Config section `admission:`: how much work is taken at once and what waits (admission.py), and the
SIGTERM grace (drain.py). It bounds what costs memory or CPU, not requests awaiting I/O."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AdmissionConfig(BaseModel):
    """Bounds on work in flight and queued; over them, 429 with Retry-After."""

    model_config = ConfigDict(extra="forbid")

    max_inflight_requests: int = Field(
        default=16384,
        ge=1,
        description="Work requests handled at once. One awaiting a remote judge costs tens of kilobytes and "
        "two sockets, so this is high enough for a whole GRPO step posted at once.",
    )
    max_inflight_body_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=1024,
        description="Request bodies in flight, by Content-Length (a chunked body counts max_body_bytes): "
        "the memory of the samples being scored. At least max_body_bytes.",
    )
    max_queued_requests: int = Field(
        default=1024, ge=0, description="More that wait for room (requests or body bytes); then 429."
    )
    queue_timeout_s: float = Field(default=30.0, gt=0, description="Longest wait for a slot before 429.")
    max_pool_queue: int = Field(default=4096, ge=0, description="Sync calls waiting for a worker; then 429.")
    retry_after_s: int = Field(default=1, ge=0, description="Retry-After sent with 429 and 503.")
    shutdown_grace_s: float = Field(default=30.0, ge=0, description="SIGTERM: in-flight work may finish.")
