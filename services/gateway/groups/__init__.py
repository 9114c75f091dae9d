"""Group-wise scoring (`groups:`): `scorer` (GroupScorer), `store` (the GroupStore protocol it owns),
`memory_store`, `redis_store` (fleet-wide), `stores` (which one for a state backend), `config`."""
