"""Which tenant an external-pool call is for: a forwarding token per tenant.

A reward function reaches an external pool through a forwarding address on the gateway
(`/pools/<token>/<pool>/<function>/...`, pools/external_pools.py): a second HTTP request, from the function
(in the gateway's process or a worker), which carries no tenant. So with tenants, the addresses a function is
given name its caller: `<token>` is the tenant's own, an HMAC of the gateway's secret token and the tenant's
name (unguessable without the secret, new at every start, masked like the secret in every log and error).
The forwarding request is then served as that tenant (context.current): the call is charged to the tenant's
spend and caps, and queued fairly at the pool's budget. A caller's run label other than `default` follows
the token after a `.` (`<token>.<run>`; a token has no `.`), so the forwarded call is counted under the
caller's run; it is the label already checked and folded at the caller's request, checked and folded again.

A token is compared with every tenant's by `hmac.compare_digest`, without stopping at a match; a token of
no tenant is passed on unchanged (the route's own check refuses it, with the same 404 as before).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Iterable
from typing import Any

from starlette.types import Scope

from rewardfleet.services.gateway.tenants.context import current

POOLS_PREFIX = "/pools/"
RUN_SEP = "."
DEFAULT_RUN = "default"


class TenantPoolTokens:
    def __init__(self, secret: str, tenants: Callable[[], Iterable[str]]) -> None:
        self.secret = secret
        self.tenants = tenants  # the configured tenants' names (re-read: a reload may add one)
        self._tokens: dict[str, str] = {}

    def token(self, tenant: str) -> str:
        found = self._tokens.get(tenant)
        if found is None:
            digest = hmac.new(self.secret.encode(), b"tenant:" + tenant.encode(), hashlib.sha256).digest()
            found = self._tokens[tenant] = base64.urlsafe_b64encode(digest[:24]).decode()
        return found

    def resolve(self, presented: str) -> str | None:
        """The configured tenant whose token `presented` is, else None (constant time over the tenants)."""
        found: str | None = None
        raw = presented.encode()
        for tenant in self.tenants():
            if hmac.compare_digest(raw, self.token(tenant).encode()):
                found = tenant
        return found

    def segment(self, tenant: str, run: str) -> str:
        """The path segment naming `tenant` and its caller's `run` label."""
        token = self.token(tenant)
        return token if run == DEFAULT_RUN else f"{token}{RUN_SEP}{run}"

    def rewrite(self, scope: Scope) -> tuple[str, str] | None:
        """For a forwarding request with a tenant's token: (the tenant, the run label as sent; the caller
        checks it), with the path's segment swapped for the gateway's own token (so the route checks and
        serves it as before); else None, the scope untouched."""
        path: str = scope["path"]
        if not path.startswith(POOLS_PREFIX):
            return None
        presented, sep, rest = path[len(POOLS_PREFIX) :].partition("/")
        token, dot, run = presented.partition(RUN_SEP)
        tenant = self.resolve(token) if sep and (run or not dot) else None
        if tenant is None:
            return None
        scope["path"] = f"{POOLS_PREFIX}{self.secret}/{rest}"
        raw = scope.get("raw_path")
        if isinstance(raw, bytes):
            scope["raw_path"] = raw.replace(presented.encode(), self.secret.encode(), 1)
        return tenant, run or DEFAULT_RUN


class TenantInjectables:
    """The scorer's `Injectables`, whose `router_addresses` name the calling tenant's forwarding token (and
    its run label). One mapping kept per (tenant, run): both are bounded (configured tenants, folded runs)."""

    def __init__(self, inner: Any, tokens: TenantPoolTokens) -> None:
        self.inner = inner
        self.tokens = tokens
        self._cache: dict[tuple[str, str], tuple[dict[str, str], dict[str, str]]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def router_addresses(self) -> dict[str, str]:
        addresses: dict[str, str] = self.inner.router_addresses
        caller = current.get()
        if caller is None:
            return addresses
        key = (caller.tenant, caller.run)
        cached = self._cache.get(key)
        if cached is not None and cached[0] is addresses:
            return cached[1]
        mine = f"{POOLS_PREFIX}{self.tokens.segment(*key)}/"
        ours = f"{POOLS_PREFIX}{self.tokens.secret}/"
        swapped = {pool: address.replace(ours, mine, 1) for pool, address in addresses.items()}
        self._cache[key] = (addresses, swapped)
        return swapped
