"""API keys: `Authorization: Bearer <key>` on every request but the public ones, for every service.

`ApiKeyMiddleware` is plain ASGI (so the model server's client-disconnect watch still sees `receive`). Which
requests are public is the service's call: the gateway exempts `/health` (and `/metrics` when
`auth_exempt_metrics` is set) plus the forwarding route that checks a path token of its own; the model server
follows SGLang 0.5.23 (`sglang/srt/utils/auth.py`, `decide_request_auth`): OPTIONS and paths starting with
`/health`, `/ready` or `/metrics`. The Bearer scheme is matched in any case.

A presented key is compared with every configured key by `hmac.compare_digest`, without stopping at the first
match, so the time taken says nothing about which key or how much of it matched. Keys are never logged or
echoed: a refusal says only that the key was missing or not accepted.

A route that checks a secret of its own (`local_prefixes`: the gateway's external-pool forwarding route, whose
path token reward functions hold) skips the key only for callers on this host: the peer is a loopback address
or the very address the request came in on. A caller elsewhere needs a key as well. Behind a reverse proxy on
this host, the proxy must send `X-Forwarded-For` (uvicorn trusts it from 127.0.0.1), or every caller looks
local.

`check_api_keys` runs at start-up: an empty or short key (a YAML list holding `""`, a keys file with a stray
short line) would be a key anyone can guess, so the service refuses to start and names the setting.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Callable, Iterable
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

# 16 characters: a random key of that length from [A-Za-z0-9] holds ~95 bits. Shorter ones are refused.
MIN_API_KEY_CHARS = 16

# (status, error type, message) -> the JSON body of a refusal, in the service's own error envelope.
ErrorBody = Callable[[int, str, str], bytes]


def gateway_error_body(status: int, type_: str, message: str) -> bytes:
    """`{"error": {"type", "message"}}`: the gateway's envelope (and the default here)."""
    return json.dumps({"error": {"type": type_, "message": message}}).encode()


def check_api_keys(keys: Iterable[str], setting: str) -> list[str]:
    """The keys, unchanged; else ValueError naming `setting` and the empty or short entry (not its value)."""
    checked = list(keys)
    for index, key in enumerate(checked):
        where = setting if len(checked) == 1 else f"{setting}[{index}]"
        if not key.strip():
            raise ValueError(f"{where}: an API key must not be empty")
        if key != key.strip():
            raise ValueError(f"{where}: an API key must not start or end with whitespace")
        if len(key) < MIN_API_KEY_CHARS:
            raise ValueError(
                f"{where}: an API key needs at least {MIN_API_KEY_CHARS} characters, this one has {len(key)}"
            )
    return checked


def read_keys_file(path: Path) -> list[str]:
    """One key per line; blank lines and `#` comments are skipped. Call `check_api_keys` on the result."""
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


class ApiKeyMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        keys: Iterable[str],
        *,
        public_paths: Iterable[str] = (),
        public_prefixes: tuple[str, ...] = (),
        local_prefixes: tuple[str, ...] = (),
        public_methods: Iterable[str] = (),
        error_body: ErrorBody = gateway_error_body,
        challenge: bool = True,
    ) -> None:
        """`public_prefixes` are paths that need no key (probes, or routes checking a secret of their own);
        `local_prefixes` need no key from a caller on this host only (`from_this_host`);
        `challenge` adds `WWW-Authenticate: Bearer` to a 401 (RFC 9110 asks for it; SGLang sends none)."""
        self.app = app
        self.keys = tuple(k.encode() for k in check_api_keys(keys, "api keys"))
        if not self.keys:
            raise ValueError("ApiKeyMiddleware needs at least one key")
        self.public_paths = frozenset(public_paths)
        self.public_prefixes = public_prefixes
        self.local_prefixes = local_prefixes
        self.public_methods = frozenset(public_methods)
        self.error_body = error_body
        self.challenge = challenge

    def _accepted(self, presented: bytes) -> bool:
        ok = False
        for key in self.keys:
            ok |= hmac.compare_digest(presented, key)
        return ok

    def _is_public(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return (
            path in self.public_paths
            or path.startswith(self.public_prefixes)
            or scope["method"] in self.public_methods
            or (bool(self.local_prefixes) and path.startswith(self.local_prefixes) and from_this_host(scope))
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http" or self._is_public(scope):
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
        body = self.error_body(401, "Unauthorized", why)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if self.challenge:
            headers.append((b"www-authenticate", b'Bearer realm="rewardfleet"'))
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket handshake needs the key too (`Authorization: Bearer`); without it, it is refused."""
        presented = _bearer(scope)
        if presented is not None and self._accepted(presented):
            await self.app(scope, receive, send)
        else:
            await refuse_websocket(receive, send)


def _bearer(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else None
    return None


async def refuse_websocket(receive: Receive, send: Send) -> None:
    """Refuses a WebSocket handshake before accepting it: the server answers HTTP 403."""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})
