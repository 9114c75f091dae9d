"""`--api-key`: every request needs `Authorization: Bearer <key>`, as SGLang 0.5.23 enforces it.

SGLang's rule (`sglang/srt/utils/auth.py`, `decide_request_auth`): OPTIONS requests and paths starting with
`/health`, `/ready` or `/metrics` are always allowed (probes and Prometheus carry no secrets); everything else
needs the Bearer scheme (any case) with the key, compared in constant time; a refusal is
401 `{"error": "Unauthorized"}`. Plain ASGI, so the client-disconnect watch of the request path still works.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PREFIXES = ("/health", "/ready", "/metrics")
_UNAUTHORIZED = json.dumps({"error": "Unauthorized"}).encode()


def is_authorized(method: str, path: str, authorization: str | None, api_key: str) -> bool:
    if method == "OPTIONS" or path.startswith(OPEN_PREFIXES):
        return True
    if not authorization:
        return False
    scheme, _, token = authorization.partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(token.encode(), api_key.encode())


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self._api_key = api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        authorization = None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                authorization = value.decode("latin-1")
                break
        if is_authorized(scope["method"], scope["path"], authorization, self._api_key):
            await self.app(scope, receive, send)
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(_UNAUTHORIZED)).encode()),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": _UNAUTHORIZED})
