"""The tenant of the request being served: set by the middleware, read by the parts it wraps.

A context variable: asyncio copies it into every task a request starts (a group member's background scoring,
a batch's gathered samples), and another request never sees it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from rewardfleet.services.gateway.config.tenants import TenantConfig


@dataclass(frozen=True)
class Caller:
    """Who is calling: the tenant's name and config (as of the request's start), its priority rank (0 is
    served first) and the request's run label (already folded)."""

    tenant: str
    config: TenantConfig
    rank: int
    run: str
    shared: frozenset[str]  # functions whose cache is shared by every tenant


current: ContextVar[Caller | None] = ContextVar("rewardfleet_tenant", default=None)
# Samples of this request already counted by `Quotas.admitted` (a batch counts all of its samples once).
admitted: ContextVar[bool] = ContextVar("rewardfleet_tenant_admitted", default=False)


def scope(fn_name: str | None = None) -> str:
    """The namespace of the caller's state: its tenant name, or "" (no tenant, or a function shared across
    tenants)."""
    caller = current.get()
    if caller is None or (fn_name is not None and fn_name in caller.shared):
        return ""
    return caller.tenant
