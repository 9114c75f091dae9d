"""An API key carried in the URL path, for trainers whose HTTP clients send no header.

OpenRLHF's remote reward client and slime's `remote_rm` post JSON to a URL with no `Authorization` header
(docs/client.md). With keys or tenants configured, such a trainer points at
`http://gateway:8000/k/<key>/openrlhf/gsm8k`: this middleware, outermost, moves `<key>` into
`Authorization: Bearer <key>` and serves the request as `/openrlhf/gsm8k`. The key check is then the usual
one (tenants/middleware.py or services/common/api_keys.py): constant-time, the same 401 for a bad key as for a
bad header, and an unknown key creates no state (nothing here keeps anything).

The key never reaches a log line, a metric or an error of the gateway: the path is rewritten in the ASGI
scope itself (the one uvicorn's access log reads), before any other middleware sees it, and `RedactPathKeys`
masks `/k/<key>/` in uvicorn's access log as well, should a line be written from the raw request. A path key
replaces any `Authorization` header of the request.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from rewardfleet.services.common.api_keys import gateway_error_body

PREFIX = "/k/"
MAX_KEY_CHARS = 512
_PATH_KEY_RE = re.compile(r"/k/[^/\s'\"?#]+")
PATH_KEY_MASK = "/k/<key>"


class PathKey:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        key, sep, rest = scope["path"][len(PREFIX) :].partition("/")
        # Key bytes go into a header: printable ASCII only. Anything else is refused like an unknown key.
        if not sep or not key or len(key) > MAX_KEY_CHARS or not (key.isascii() and key.isprintable()):
            await _unauthorized(send)
            return
        raw = scope.get("raw_path")
        if isinstance(raw, bytes):
            raw_key, _, raw_rest = raw[len(PREFIX) :].partition(b"/")
            # An encoded "/" in the key ("%2F") would split the path and the raw path differently: refused.
            if not raw.startswith(PREFIX.encode()) or unquote(raw_key.decode("latin-1")) != key:
                await _unauthorized(send)
                return
            scope["raw_path"] = b"/" + raw_rest
        scope["path"] = "/" + rest
        headers = [(n, v) for n, v in scope["headers"] if n != b"authorization"]
        headers.append((b"authorization", b"Bearer " + key.encode()))
        scope["headers"] = headers
        await self.app(scope, receive, send)


async def _unauthorized(send: Send) -> None:
    body = gateway_error_body(401, "Unauthorized", "the API key is not accepted")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="rewardfleet"'),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def redact_path_keys(text: str) -> str:
    return _PATH_KEY_RE.sub(PATH_KEY_MASK, text)


class RedactPathKeys(logging.Filter):
    """On uvicorn's access log: `/k/<key>/...` is never written with the key."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_path_keys(a) if isinstance(a, str) else a for a in record.args)
        return True
