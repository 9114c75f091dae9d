"""Optional API keys: `Authorization: Bearer <key>` on every route but `/health` (and `/metrics` when
`auth_exempt_metrics` is set).

Keys come from `api_keys` (`REWARDFLEET_GATEWAY_API_KEYS`, comma-separated) and/or `api_keys_file` (one key
per line, `#` comments). With no key configured the middleware is not installed at all. A presented key is
compared with every configured key by `hmac.compare_digest`, without stopping at the first match, so the time
taken says nothing about which key or how much of it matched. Keys are never logged or echoed: a refusal
says only that the key was missing or not accepted.

A route that checks a secret of its own (`self_authenticated_prefixes`: the external pools' forwarding
route, whose path token reward functions hold) skips the key only for callers on this host: the peer is a
loopback address or the very address the request came in on. A caller elsewhere needs a key as well. Behind
a reverse proxy on this host, the proxy must send `X-Forwarded-For` (uvicorn trusts it from 127.0.0.1), or
every caller looks local.
"""

from __future__ import annotations

import hmac
import ipaddress
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


def from_this_host(scope: Scope) -> bool:
    """The peer (after uvicorn's proxy headers) is a loopback address or the server's own address."""
    client, server = scope.get("client"), scope.get("server")
    if not client:
        return False
    try:
        if ipaddress.ip_address(client[0]).is_loopback:
            return True
    except ValueError:  # not an IP address (a unix socket's peer): not known to be local
        return False
    return server is not None and client[0] == server[0]


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
        # Routes that check a secret of their own (the external-pool forwarding route's path token): no key
        # needed from this host.
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
            or (scope["path"].startswith(self.self_authenticated_prefixes) and from_this_host(scope))
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
