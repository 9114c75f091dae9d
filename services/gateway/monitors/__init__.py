"""Judge monitors (docs/judge_monitoring.md): `probes` (master-key probes of judge pools), `shadow` (a
reference judge re-scoring samples: agreement, kappa, drift), `config` (`judge_probes:`)."""
