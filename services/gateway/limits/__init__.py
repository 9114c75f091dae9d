"""Limits on work: `input_limits` (per-sample sizes), `function_limits` (per-function concurrency, RPM,
TPM), `redis_gate` (those fleet-wide), `redis_fair_slots` (a fleet-wide pool's slots shared by tenants, in
Lua), `slot_claim` (what a tenant's call tells that gate), `choose_store` (which gate for a state backend),
`rate_limits` (token buckets, what a 429 asks), `config` (the `limits:` and `body:` sections)."""
