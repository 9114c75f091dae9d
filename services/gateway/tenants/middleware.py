"""Authentication by tenant: the key check when tenants are configured.

The gateway's key check when tenants are configured (in place of services/common/api_keys.py's
`ApiKeyMiddleware`, with the same public paths and the same 401).

A WebSocket handshake is checked the same way (a refused one is closed before it is accepted: HTTP 403).
For every other request: the key names its tenant (else 401, and nothing is counted or kept for it: an
unknown key creates no state), `/admin/*`, `/metrics` and `/monitors` need an `admin: true` tenant (else
403: they show every tenant), the run label is checked
and folded, and a work request (POST) is counted against requests_per_minute (429 when over). The caller is
then set for the rest of the request (context.current).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from rewardfleet.reward_fns.contract import slot_queue
from rewardfleet.services.common.api_keys import from_this_host, gateway_error_body, refuse_websocket
from rewardfleet.services.gateway.errors import GatewayError
from rewardfleet.services.gateway.tenants.context import current
from rewardfleet.services.gateway.tenants.errors import Forbidden, InvalidRunLabel

if TYPE_CHECKING:
    from rewardfleet.services.gateway.tenants.runtime import Tenancy

RUN_LABEL_RE = re.compile(rb"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
DEFAULT_RUN = "default"
OPERATOR_PATHS = frozenset({"/metrics", "/monitors"})


class TenantMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        tenancy: Tenancy,
        *,
        public_paths: Iterable[str] = (),
        local_prefixes: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.tenancy = tenancy
        self.public_paths = frozenset(public_paths)
        self.local_prefixes = local_prefixes

    def _is_public(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return path in self.public_paths or (
            bool(self.local_prefixes) and path.startswith(self.local_prefixes) and from_this_host(scope)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        websocket = scope["type"] == "websocket"
        if not websocket and self._is_public(scope):
            await self._public(scope, receive, send)
            return
        presented: bytes | None = None
        run: bytes | None = None
        run_header = self.tenancy.run_header
        for name, value in scope["headers"]:
            if name == b"authorization" and presented is None:
                scheme, _, token = value.partition(b" ")
                presented = token.strip() if scheme.lower() == b"bearer" else b""
            elif name == run_header:
                run = value
        tenant = self.tenancy.directory.resolve(presented) if presented else None
        if tenant is None:
            if websocket:
                await refuse_websocket(receive, send)
                return
            await _unauthorized(send, presented is None)
            return
        try:
            caller = self.tenancy.caller(tenant, self._run(run))
            if _operators_only(scope["path"]) and not caller.config.admin:
                raise Forbidden(f"tenant {tenant!r} may not call {scope['path']} (needs admin: true)")
            if not websocket and scope["method"] == "POST" and not scope["path"].startswith("/admin"):
                await self.tenancy.quotas.request(caller)
        except GatewayError as exc:
            if websocket:
                await refuse_websocket(receive, send)
                return
            start, body = exc.asgi_response()
            await send(start)
            await send(body)
            return
        self.tenancy.metrics.requests.labels(caller.tenant, caller.run).inc()
        token = current.set(caller)
        queue = slot_queue.set(self.tenancy.fair_slots)  # the sandboxes' slots, queued fairly
        try:
            await self.app(scope, receive, send)
        finally:
            slot_queue.reset(queue)
            current.reset(token)

    async def _public(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A public path; a forwarding request with a tenant's pool token (pool_tokens.py) is served as that
        tenant, under the caller's run label it carries (folded as at any request)."""
        tokens = self.tenancy.pool_tokens
        found = tokens.rewrite(scope) if tokens is not None else None
        if found is None or found[0] not in self.tenancy.directory.table.tenants:
            await self.app(scope, receive, send)
            return
        tenant, run = found
        if not RUN_LABEL_RE.match(run.encode()):
            run = DEFAULT_RUN  # not a label the gateway wrote: counted as the tenant's default run
        caller = self.tenancy.caller(tenant, run)
        self.tenancy.metrics.pool_calls.labels(caller.tenant, caller.run).inc()
        token = current.set(caller)
        try:
            await self.app(scope, receive, send)
        finally:
            current.reset(token)

    def _run(self, raw: bytes | None) -> str:
        if raw is None:
            return DEFAULT_RUN
        if not RUN_LABEL_RE.match(raw):
            raise InvalidRunLabel(
                f"header {self.tenancy.run_header.decode()}: a run label is 1-64 characters of "
                "[A-Za-z0-9_.:-], starting with a letter or digit",
                field=self.tenancy.run_header.decode(),
            )
        return raw.decode()


def _operators_only(path: str) -> bool:
    """/admin/*, and the fleet-wide views: /metrics and /monitors show every tenant's series and spend (public
    instead with `auth_exempt_metrics`, for a scraper on a private network)."""
    return path.startswith("/admin") or path in OPERATOR_PATHS


async def _unauthorized(send: Send, missing: bool) -> None:
    why = "missing Authorization: Bearer <key>" if missing else "the API key is not accepted"
    body = gateway_error_body(401, "Unauthorized", why)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="rewardfleet"'),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
