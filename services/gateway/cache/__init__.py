"""The in-flight join and result cache (`idempotency: uid|inputs`): `idempotency` (the Results protocol,
in-process cache), `redis_cache` (fleet-wide), `choose_store` (which one for a state backend), `config` (the
`cache:` section)."""
