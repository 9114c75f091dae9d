"""The `sql` reward's parts: runner, sandbox, database, extraction and comparison.

The runner that executes queries inside the sandbox, the database's path under the configured root, SQL
extraction from a response, and result-set comparison (docs/verifiable_tasks.md): `runner`, `sandbox`,
`database`, `compare`, `errors` (its typed errors)."""
