"""Where the gateway keeps the state replicas share: the shared plumbing only, no feature.

base.py           the `StateBackend` protocol: where state lives (`redis`: the shared store, or None)
memory.py         in-process (the default: one replica, no Redis)
redis_backend.py  Redis: one `RedisStore` every feature's Redis store shares
redis_client.py   the Redis connection (redis-py asyncio), timed and error-mapped calls, the notifier
redis_scripts.py  the Lua scripts: every read-modify-write runs atomically inside Redis
redis_pipeline.py automatic pipelining: one event-loop turn's script calls in one round trip
redis_leases.py   one timer renewing the leases of the runs and concurrency slots a replica holds
factory.py        the backend for a `state_url` (none: memory; redis://, rediss://, unix://: Redis)
config.py         the `state:` config section (state_url, key prefix, timeout, lease)
metrics.py        state-store latency and error metrics

The features' stores over it: cache/ (results), limits/ (gates), spend/ (ledger), groups/ (group store).
"""
