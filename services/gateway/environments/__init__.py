"""Environments served by the gateway: drop-in loading, sessions in the state store, limits, quota, reaping.

    config.py        the `environments:` config section (folders, built-ins, timeouts, reap interval)
    loading.py       finding the Environment subclasses of the built-in package and the folders
    sessions.py      `Sessions`: open / call / verify / state / close / tools, what every protocol calls
    limits.py        the SessionLimits checks (tool calls, wall time, state bytes, JSON) and the expiry time
    sandboxes.py     each session's one sandbox: made on first use, its id in the record, stopped when freed
    records.py       a session as stored (`SessionRecord`); tokens (256 random bits, stored hashed)
    store_protocol.py  the `SessionStore` protocol
    memory_store.py  in the process (no `state_url`, one process)
    redis_store.py   in Redis (the `--processes` state server, or `state_url` shared by replicas)
    choose_store.py  picks one for the state backend
    metrics.py       open, created, closed, expired sessions; tool calls by outcome
    errors.py        the refusals (404 / 409 / 422 / 429 / 500 / 504), in the gateway's envelope

The authoring API environments import is `rewardfleet.services.environments`; docs/environments.md.
"""
