"""The reward gateway: `POST /score` runs drop-in (verl-compatible) reward functions, isolated and measured.

Read it in this order:

    app.py          create_app(): builds every part once, in one direction, and owns them in its lifespan
    cli.py          `rewardfleet gateway` / `python -m rewardfleet.services.gateway`
    config/         GatewayConfig and its sections (functions, composites, fallbacks, groups, graders,
                    external pools)
    schemas.py      request and response bodies
    errors.py       every gateway exception (the tree is in its docstring) and the one error envelope
    sizes.py        the size of a JSON value, as the input and result limits count it
    trajectory.py   a sample's `messages` (OpenAI chat format), checked before any work starts
    collector.py    the garbage collector's settings for the gateway's own process
    metrics.py      the Prometheus metrics
    plain_metrics.py  the per-request and per-call ones: plain attributes, families built at scrape time
    routes/         HTTP: /score, /health /ready /reward_fns /metrics, /graders, /admin, /openrlhf, /slime,
                    /pools (external pools)
    state_store/    what replicas share (result cache, groups, budgets): in-process, or Redis (`state_url`)
    core/           the scoring path: dispatch -> registry -> scoring
    execution/      running user code: the loader, the sync process pool and what runs in its workers
    reliability/    admission, drain, idempotency, input and per-function limits, external pools
                    (its middlewares, shared with the model server, are in rewardfleet.services.common)
    features/       composites, fallbacks, groups, graders, hot reload

Dependencies point one way: app -> routes -> features -> core -> state_store -> reliability | execution ->
config | schemas | metrics -> errors | sizes | plain_metrics; nothing imports upwards, no folder has a cycle
(import-linter checks it: pyproject.toml). Storage implements small protocols the logic above it owns
(features/group_store.py `GroupStore`, reliability's `Gate` / `Charge` / `Results`); only the backends'
`groups()` assemble the group scorer over their store.
"""
