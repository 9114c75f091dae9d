"""Group-wise scoring (`groups:`): `scorer` (GroupScorer), `store_protocol` (the GroupStore protocol it owns),
`memory_store`, `redis_store` (fleet-wide), `choose_store` (which one for a state backend), `config`."""
