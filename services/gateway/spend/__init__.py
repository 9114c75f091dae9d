"""Judge spend (`pool_prices`, `max_spend_usd`): `meter` (SpendMeter, the ledger protocol and the in-process
ledger), `redis_ledger` (fleet-wide), `choose_store` (which one for a state backend), `config`."""
