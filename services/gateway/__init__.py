"""The reward gateway: `POST /score` runs drop-in (verl-compatible) reward functions, isolated and measured.

Read it in this order (top to bottom is the direction of every import; import-linter checks it):

    processes/      `--processes N`: N gateway processes on one port, their state server, merged /metrics
    app.py          create_app(): the composition root; each feature contributes its start and stop
    cli.py          `rewardfleet gateway` / `python -m rewardfleet.services.gateway`
    tenants/        one fleet shared by many runs: keys -> tenants, quotas, fair queues (docs/tenants.md)
    routes/         HTTP: /score, /health /ready /reward_fns /metrics, /graders, /admin, /openrlhf,
                    /slime, /pools, /nemo_gym
    facade.py       `Gateway`: what the routes call (resolve, score)
    catalog/        what is served: functions + composites, fallbacks, graders, groups; hot reload
    config/         GatewayConfig, assembled from the features' own section models
    groups/ composites/ graders/ monitors/ nemo_gym/     features built over the scorer
    environments/   environments: drop-in loading, sessions in the state store, limits, sessions_open
    core/           the scoring path: dispatch -> registry -> scoring; `functions.<name>` (core/config.py)
    pools/          external pools (OpenAI-compatible endpoints outside the fleet)
    limits/ cache/ spend/ admission/           per-sample and per-function limits, result cache, judge spend,
                    bounded work and drain
    state_store/    the shared Redis plumbing (client, scripts, pipeline, leases) and the backend choice
    execution/      running user code: loader, sync process pool, its workers
    schemas.py metrics.py     request/response bodies; Prometheus metrics
    errors.py sizes.py trajectory.py    the leaves
    hot_path/       a leaf too: what a POST /score passes outside its handler (the app class, the plain-ASGI
                    path, the HTTP protocol, plain metrics, the collector's tuning)

A feature that keeps shared state owns its store protocol, its in-process store and its Redis store
(`*/choose_store.py` picks one for the backend); storage imports no feature.
"""
