"""What every service uses, in one leaf package that imports nothing of the project (an import contract in
pyproject.toml checks it), as starlette's types and middlewares serve all of starlette.

- `api_keys`: `ApiKeyMiddleware` (Bearer keys, constant-time compare) and `check_api_keys` (empty or short
  keys refused at start-up).
- `body_limits`: `RequestBodyLimits`: 413 above `max_body_bytes`, 408 when a body does not arrive within
  `body_read_timeout_s`.
- `request_metrics`: `RequestMetrics`, which reports every request to the service's `RequestObserver`.
- `json_body`: `parse_json_body`, a route's body straight from bytes with pydantic-core.
- `retry_after`: `parse_retry_after` (delta-seconds or HTTP date).
- `redact`: secrets hidden from what is printed (argv, configs, URL passwords and secret query parameters).
- `hosts`: `connect_host`, the loopback address to dial for a wildcard bind address (IPv4 and IPv6).
- `router_http`: `post_json` and `RemoteCallError`, the one HTTP helper for calls to a model pool.
- `images`: a sample's images checked (size, format, allowed URL hosts) before anything uses them.
- `gguf_cache`: where converted copies of GGUF files are kept (`$XDG_CACHE_HOME/rewardfleet/...`).
- `open_files`: `raise_open_files_limit`, the soft RLIMIT_NOFILE lifted to what a server's connections need.
- `cpus`: `usable_cpus`, the CPUs this process may use (its affinity mask).
- `parent_death`: `die_with_parent`, a child killed by the kernel when the thread that started it exits.

ASGI types are starlette's (`starlette.types`); nothing here redefines them. Why there is no shared
micro-batching class: docs/architecture.md ("Five loops that gather work").
"""
