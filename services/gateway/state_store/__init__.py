"""Where the gateway keeps state that replicas must share: results, groups and budgets.

base.py           the `StateBackend` and `Groups` protocols every backend implements
memory.py         in-process state (the default: one replica, no Redis)
redis_client.py   the Redis connection (redis-py asyncio), timed and error-mapped calls, the notifier
redis_scripts.py  the Lua scripts: every read-modify-write runs atomically inside Redis
redis_cache.py    fleet-wide result cache and in-flight join
redis_budget.py   fleet-wide max_concurrency, requests_per_minute, tokens_per_minute
redis_spend.py    fleet-wide spend in dollars (nano-dollar totals per function and pool)
redis_groups.py   the fleet-wide `GroupStore` (features/group_store.py) under the one group scorer
redis_backend.py  the Redis `StateBackend` that builds the three
redis_pipeline.py automatic pipelining: one event-loop turn's script calls in one round trip
redis_leases.py   one timer renewing the leases of the runs and concurrency slots a replica holds
factory.py        the backend for a `state_url` (none: memory; redis://, rediss://, unix://: Redis)
metrics.py        state-store latency and error metrics
"""
