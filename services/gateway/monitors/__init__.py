"""Judge monitors (docs/judge_monitoring.md): `probes` (master-key probes of judge pools), `shadow` (a
reference judge re-scoring samples: agreement, kappa, drift), `config` (`judge_probes:`), `jobs` (a background
job run by one process of the fleet: its lease and board), `redis_jobs` (that on Redis), `choose_store` (which
one for a state backend)."""
