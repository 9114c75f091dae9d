"""Tenants: one fleet shared by several training runs or teams, fairly and safely (docs/tenants.md).

    directory.py   API key -> tenant, re-read on `POST /admin/reload`
    context.py     the calling tenant of the request being served (a context variable)
    middleware.py  authentication, run label, requests-per-minute quota (replaces the plain key check)
    quotas.py      samples in flight, judge tokens per minute, dollars per day and in total -> 429
    counters.py    the quotas' counters: in-process, or shared in Redis (`state_url`)
    shares.py      who may take a pool's slot: assured shares, a headroom for tenants within their share
    fair.py        the fair gate: that rule and weighted fair order in front of each function gate
    fair_pools.py  fair queues in front of the worker pool, sandbox slots and external pools' budgets
    pool_tokens.py which tenant an external-pool call is for (a forwarding token per tenant)
    path_key.py    an API key carried in the URL path (`/k/<key>/...`) for clients that send no header
    scoped.py      per-tenant result cache keys, failure log and spend
    metrics.py     per-tenant Prometheus series (configured tenants only)
    routes.py      `GET /tenants/self`
    runtime.py     `Tenancy`: builds the above and wires them into the gateway
    errors.py      `TenantQuotaExceeded` (429 naming the quota) and the tenant-only refusals

The config sections `tenants:` and `tenancy:` are config/tenants.py's (the config layer sits below this
package). With no tenant configured nothing here is built: the gateway is as before.
"""
