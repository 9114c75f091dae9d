"""A session as the stores keep it, and its bearer token.

The token is the only secret: 256 random bits (`secrets.token_urlsafe(32)`). Stores never see it, only
`token_key(token)` (SHA-256), so a dump of the store cannot be replayed as tokens. The public `id` is a
separate random value (logs, metrics, `state`). A record travels as compact JSON, the same bytes that
`SessionLimits.state_bytes` bounds the state part of.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass, field, fields
from typing import Any

TOKEN_BYTES = 32
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{43}")  # what token_urlsafe(32) gives


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def new_id() -> str:
    return secrets.token_hex(8)


def token_key(token: str) -> str | None:
    """The store key of a token; None for anything that cannot be a token (no store lookup for it)."""
    if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
        return None
    return hashlib.sha256(token.encode()).hexdigest()


def dump_json(value: Any) -> str:
    """Compact JSON; ValueError for what JSON cannot hold (NaN, an int of more than 4300 digits, a cycle)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@dataclass
class SessionRecord:
    id: str
    tenant: str
    env: str
    task: dict[str, Any]
    state: dict[str, Any] = field(default_factory=dict)
    tool_calls: int = 0
    opened_at: float = 0.0
    last_active_at: float = 0.0
    expires_at: float = 0.0
    version: int = 0
    sandbox_id: str | None = None

    def to_json(self) -> str:
        return dump_json({name: getattr(self, name) for name in _FIELDS})

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionRecord:
        return cls(**json.loads(text))


_FIELDS = tuple(f.name for f in fields(SessionRecord))
