"""What every service uses, in one leaf package that imports nothing of the project (an import contract in
pyproject.toml checks it), as starlette's `types.py` and `middleware/` serve all of starlette.

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

ASGI types are starlette's (`starlette.types`); nothing here redefines them.

**No shared micro-batching class.** Five loops gather work, and only two follow the same algorithm (wait for
the first item, collect until a size or a window timed from it): the model server's `Batcher` (Ray Serve's
algorithm with a bounded queue, forward passes on one executor thread, per-item exceptions, and its
measures: batch size, queue wait and forward time per operation) and verl's batch adapter
(`integrations/verl_batch.py`, which runs in the trainer's process, across the trainer's threads and event
loops, and measures nothing). The other three are different algorithms that a coalescer would only hide:
the `ContinuousBatcher` never closes a batch (queued requests join a running decode loop between steps, its
unit is one step); the pool's chunking (`gateway/execution/chunking.py`) does not wait at all, it sizes
chunks of calls already submitted by each function's measured cost; the Redis `Pipeliner` closes a batch at
the end of one event-loop turn, with no timer, and matches replies in order on a transport it owns. A common
class would serve two users whose threading and measures differ, so each loop keeps its own.
"""
