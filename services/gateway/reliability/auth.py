"""Optional API keys: `Authorization: Bearer <key>` on every route but `/health` (and `/metrics` when
`auth_exempt_metrics` is set).

Keys come from `api_keys` (`REWARDFLEET_GATEWAY_API_KEYS`, comma-separated) and/or `api_keys_file` (one key
per line, `#` comments). With no key configured the middleware is not installed at all. A presented key is
compared with every configured key by `hmac.compare_digest`, without stopping at the first match, so the time
taken says nothing about which key or how much of it matched. Keys are never logged or echoed: a refusal
says only that the key was missing or not accepted.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from rewardfleet.services.gateway.errors import Unauthorized

PUBLIC_PATHS: frozenset[str] = frozenset({"/health"})


def read_keys_file(path: Path) -> list[str]:
    keys = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.append(line)
    return keys


class ApiKeyAuth:
    def __init__(
        self,
        app: ASGIApp,
        keys: Iterable[str],
        public_paths: Iterable[str] = PUBLIC_PATHS,
        self_authenticated_prefixes: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.keys = tuple(k.encode() for k in keys)
        if not self.keys:
            raise ValueError("ApiKeyAuth needs at least one key")
        self.public_paths = frozenset(public_paths)
        # Routes that check a secret of their own (the external-pool forwarding route's path token).
        self.self_authenticated_prefixes = self_authenticated_prefixes

    def _accepted(self, presented: bytes) -> bool:
        ok = False
        for key in self.keys:
            ok |= hmac.compare_digest(presented, key)
        return ok

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] in self.public_paths
            or scope["path"].startswith(self.self_authenticated_prefixes)
        ):
            await self.app(scope, receive, send)
            return
        presented: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, token = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    presented = token.strip()
                break
        if presented is not None and self._accepted(presented):
            await self.app(scope, receive, send)
            return
        why = "missing Authorization: Bearer <key>" if presented is None else "the API key is not accepted"
        refusal = Unauthorized(why).with_headers(WWW_Authenticate='Bearer realm="rewardfleet"')
        start, body = refusal.asgi_response()
        await send(start)
        await send(body)
