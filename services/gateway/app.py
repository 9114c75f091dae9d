"""`create_app(config)`: the FastAPI application, and its composition root.

Admission (and the pool backlog it watches) is built with the app: the middleware needs it. Everything else
is built in the lifespan, once, in one direction, each part complete before the parts that use it; every
part that holds a resource pushes its own stop on one `AsyncExitStack`, so stopping (or a failed start)
undoes exactly what was started, in reverse:

    reward functions   core/registry.py      loaded and checked; a broken file stops start-up
    spend, pools       spend/, pools/         prices and caps over the backend's ledger; external pools
    state backend      state_store/           in-process, or Redis shared by every replica (state_url)
    worker pool        execution/pool.py      when some function is sync
    scorer             core/scoring.py        with its result cache (cache/), gates (limits/), spend meter
    catalog, reloader  catalog/               composites, fallbacks, graders over the scorer; dispatch
    tenants            tenants/               keys, quotas and fair queues per tenant (none configured: off)
    monitors           monitors/              shadow judge (the scorer's after-answer hook), judge prober
                                              (run by one process of the fleet: its lease, monitors/jobs.py)
    environments       environments/          drop-in environments and their sessions (over the backend)
    groups, facade     groups/, facade.py     the `Gateway` the routes use
    drain              admission/drain.py     SIGTERM handlers, once ready
    NeMo Gym ports     routes/nemo_gym.py     resources servers on ports of their own, when configured
    MCP                routes/mcp.py          the MCP SDK's session manager of `/mcp/<env>`

Nothing happens at import time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any

import aiohttp
from fastapi import FastAPI
from starlette.routing import Route

from rewardfleet.services.common.api_keys import ApiKeyMiddleware, check_api_keys, read_keys_file
from rewardfleet.services.common.body_limits import RequestBodyLimits
from rewardfleet.services.common.hosts import connect_host
from rewardfleet.services.common.request_metrics import RequestMetrics
from rewardfleet.services.gateway.admission.admission import Admission, AdmissionMiddleware, Backlog
from rewardfleet.services.gateway.admission.drain import Drain
from rewardfleet.services.gateway.cache.choose_store import results_for
from rewardfleet.services.gateway.catalog.build import build_catalog
from rewardfleet.services.gateway.catalog.reload import Reloader
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.core.registry import RewardFunction, load_functions
from rewardfleet.services.gateway.core.scoring import Injectables, Scorer
from rewardfleet.services.gateway.environments.choose_store import session_store_for
from rewardfleet.services.gateway.environments.loading import load_environments
from rewardfleet.services.gateway.environments.metrics import SessionMetrics
from rewardfleet.services.gateway.environments.sandboxes import SessionSandboxes
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.gateway.errors import LoadError, StateStoreUnavailable, TokenizerUnavailable
from rewardfleet.services.gateway.execution.pool import WorkerPool
from rewardfleet.services.gateway.execution.tokenizer import load_tokenizer
from rewardfleet.services.gateway.facade import Gateway
from rewardfleet.services.gateway.groups.choose_store import group_scorer_for
from rewardfleet.services.gateway.hot_path.gc_tuning import tune_for_own_process
from rewardfleet.services.gateway.hot_path.score_asgi import ScoreFastPath
from rewardfleet.services.gateway.hot_path.score_front import GatewayApp
from rewardfleet.services.gateway.hot_path.tool_call_asgi import ToolCallFastPath, ToolRoutes, may_take
from rewardfleet.services.gateway.limits.choose_store import gate_for
from rewardfleet.services.gateway.limits.function_limits import function_gates
from rewardfleet.services.gateway.limits.input_limits import SampleLimits
from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.monitors.choose_store import job_board_for
from rewardfleet.services.gateway.monitors.probes import JudgeProber
from rewardfleet.services.gateway.monitors.shadow import ShadowJudge
from rewardfleet.services.gateway.pools.external_pools import ACCESS_LOGGER, ExternalPools, RedactPoolTokens
from rewardfleet.services.gateway.routes import (
    admin,
    graders,
    meta,
    monitors,
    nemo_gym,
    nemo_gym_mcp,
    openenv,
    openrlhf,
    pools,
    score,
    sessions,
    slime,
)
from rewardfleet.services.gateway.routes import mcp as mcp_route
from rewardfleet.services.gateway.routes.environment_sessions import sessions_of
from rewardfleet.services.gateway.routes.error_handlers import install_error_handlers
from rewardfleet.services.gateway.routes.mcp import McpEndpoints
from rewardfleet.services.gateway.routes.trainer_protocol import gateway_backend
from rewardfleet.services.gateway.spend.choose_store import spend_ledger_for
from rewardfleet.services.gateway.spend.meter import SpendMeter
from rewardfleet.services.gateway.state_store.base import StateBackend
from rewardfleet.services.gateway.state_store.factory import build_backend
from rewardfleet.services.gateway.tenants import routes as tenant_routes
from rewardfleet.services.gateway.tenants.middleware import TenantMiddleware
from rewardfleet.services.gateway.tenants.path_key import PathKey, RedactPathKeys
from rewardfleet.services.gateway.tenants.runtime import Tenancy
from rewardfleet.services.sandbox import SandboxError
from rewardfleet.services.sandbox.settings import make_provider

logger = logging.getLogger(__name__)


def create_app(
    config: GatewayConfig, metrics: GatewayMetrics | None = None, freeze_startup: bool = False
) -> FastAPI:
    """`freeze_startup`: the process is this gateway's own (the CLI's): once started, the garbage collector
    is set for it (hot_path/gc_tuning.py)."""
    metrics = metrics or GatewayMetrics()
    backlog = Backlog()
    metrics.pool_queue_depth.set_function(lambda: backlog.depth)
    admission = Admission(
        config.admission.max_inflight_requests,
        config.admission.max_inflight_body_bytes,
        config.admission.max_queued_requests,
        config.admission.queue_timeout_s,
        config.admission.retry_after_s,
        config.admission.max_pool_queue,
        backlog,
        metrics,
    )
    # tenants/ (docs/tenants.md): None without tenants, and the gateway is as before.
    tenancy = Tenancy(config, metrics.registry) if config.tenants else None
    mcp_endpoints = McpEndpoints(sessions_of)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            app.state.gateway = await start_gateway(stack, config, metrics, admission, backlog, tenancy)
            app.state.tenancy = tenancy
            gym_ports = nemo_gym.PortServers(app, config.nemo_gym, config.host)
            stack.push_async_callback(gym_ports.stop)
            await gym_ports.start()
            await stack.enter_async_context(mcp_endpoints.run())
            if freeze_startup:
                tune_for_own_process()
            yield

    app = GatewayApp(
        title="Reward Fleet gateway",
        summary="POST /score runs drop-in (verl-compatible) reward functions, isolated, timed out, measured.",
        version="0.1.0",
        lifespan=lifespan,
    )
    tools = install_routes(app, config, tenancy, mcp_endpoints)
    install_middleware(app, config, metrics, admission, tenancy, tools)
    return app


async def start_gateway(
    stack: AsyncExitStack,
    config: GatewayConfig,
    metrics: GatewayMetrics,
    admission: Admission,
    backlog: Backlog,
    tenancy: Tenancy | None = None,
) -> Gateway:
    """Start every part in order; each pushes its stop on `stack`. Returns the gateway, ready."""
    backend = build_backend(
        config.state.state_url,
        metrics,
        config.state.state_key_prefix,
        config.state.state_timeout_s,
        config.state.state_lease_s,
    )
    with _startup_step():
        loaded = load_functions(config)
        tokenizer = None
        if config.loading.reward_model_tokenizer is not None:
            tokenizer = await asyncio.to_thread(load_tokenizer, config.loading.reward_model_tokenizer)
        spend = _spend_meter(config, backend, loaded, metrics)
        external = ExternalPools(config.pools.external_pools, metrics.registry, metrics.pool_tokens, spend)
    await _start_backend(stack, backend)
    if tenancy is not None:
        stack.push_async_callback(tenancy.close)
        await tenancy.start(backend, config.state.state_lease_s)
    pool = _worker_pool(stack, config, loaded, backlog)
    http_client = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=config.pools.http_max_connections),
        timeout=aiohttp.ClientTimeout(total=None),
    )
    stack.push_async_callback(http_client.close)
    scorer = _scorer(config, backend, loaded, pool, metrics, http_client, tokenizer, external, spend)
    if tenancy is not None:
        tenancy.wire_scorer(scorer, loaded)
    with _startup_step():
        reloader = Reloader(config, scorer, http_client, build_catalog(config, loaded, scorer, http_client))
        shadow = _shadow_judge(stack, config, loaded, scorer, metrics)
        prober = None
        if config.judge_probes.functions:
            prober = JudgeProber(
                config.judge_probes,
                scorer,
                lambda: reloader.catalog.functions,
                metrics.registry,
                board=job_board_for(backend, "judge-probes"),
                renew_s=config.state.state_lease_s / 3,
            )
            stack.push_async_callback(prober.close)
    env_sessions = await _sessions(stack, config, backend, metrics)
    gateway = Gateway(
        config=config,
        metrics=metrics,
        http_client=http_client,
        limits=SampleLimits(config.limits),
        scorer=scorer,
        groups=group_scorer_for(backend, config.groups, scorer),
        reloader=reloader,
        external_pools=external,
        spend=spend,
        prober=prober,
        shadow=shadow,
        sessions=env_sessions,
    )
    if tenancy is not None:
        tenancy.wire_gateway(gateway)
    if pool is not None:
        await pool.warm_up()
    _log_functions(reloader.catalog.functions)
    gateway.ready = True
    stack.callback(setattr, gateway, "ready", False)
    drain = Drain(
        admission, config.admission.shutdown_grace_s, on_drain=lambda: setattr(gateway, "ready", False)
    )
    drain.install()
    stack.callback(drain.uninstall)
    # Installed here, after uvicorn configured its loggers: the access log never shows the secret.
    for redact in (RedactPoolTokens(), RedactPathKeys()):
        logging.getLogger(ACCESS_LOGGER).addFilter(redact)
        stack.callback(logging.getLogger(ACCESS_LOGGER).removeFilter, redact)
    if prober is not None:
        prober.start()  # background rounds; the first as soon as the judge answers
    return gateway


@contextmanager
def _startup_step() -> Iterator[None]:
    """A bad config or function file stops start-up with one clear line (uvicorn then exits non-zero)."""
    try:
        yield
    except (LoadError, TokenizerUnavailable, ValueError) as exc:
        logger.error("gateway start-up failed: %s", exc)
        # The message again as the traceback's last line, which is what a log's tail shows.
        raise RuntimeError(f"gateway start-up failed: {exc}") from None


def _spend_meter(
    config: GatewayConfig, backend: StateBackend, loaded: dict[str, RewardFunction], metrics: GatewayMetrics
) -> SpendMeter:
    return SpendMeter(
        config.pool_prices,
        spend_ledger_for(backend),
        metrics.registry,
        known_pools=set(config.pools.routers) | set(config.pools.external_pools),
        function_caps={
            name: fn.config.max_spend_usd
            for name, fn in loaded.items()
            if fn.config.max_spend_usd is not None
        },
    )


async def _start_backend(stack: AsyncExitStack, backend: StateBackend) -> None:
    stack.push_async_callback(backend.close)  # also after a failed start: it closes what the start opened
    try:
        await backend.start()
    except StateStoreUnavailable as exc:
        logger.error("gateway start-up failed: %s", exc.message)
        raise RuntimeError("gateway start-up failed: the state store is unreachable; see above") from None
    logger.info("state backend: %s", backend.name)


async def _sessions(
    stack: AsyncExitStack, config: GatewayConfig, backend: StateBackend, metrics: GatewayMetrics
) -> Sessions:
    """The environments (built-ins, then `environments.folders`), the sandbox provider of their sessions
    (its reaper run first: a crashed gateway's sandboxes), and the sessions' reaper."""
    with _startup_step():
        environments = load_environments(
            config.environments.builtin_package, config.environments.folders, config.environments.settings
        )
        for name, server in config.nemo_gym.servers.items():
            if server.environment is not None and server.environment not in environments:
                raise LoadError(
                    f"nemo_gym.servers.{name}.environment: {server.environment!r} is not loaded "
                    f"({', '.join(sorted(environments)) or 'none'})"
                )
        provider = None
        if config.environments.sandbox is not None:
            try:
                provider = make_provider(config.environments.sandbox)
            except SandboxError as exc:
                raise LoadError(f"environments.sandbox: {exc}") from exc
    if provider is not None:
        await provider.reap()
    found = Sessions(
        environments,
        session_store_for(backend),
        SessionMetrics(metrics.registry),
        config.environments,
        sandboxes=SessionSandboxes(provider),
    )
    stack.push_async_callback(found.stop)
    found.start()
    return found


def _worker_pool(
    stack: AsyncExitStack, config: GatewayConfig, loaded: dict[str, RewardFunction], backlog: Backlog
) -> WorkerPool | None:
    """The sync process pool, when some function is sync."""
    sync_refs = tuple(fn.ref for fn in loaded.values() if not fn.is_async)
    if not sync_refs:
        return None
    pool = WorkerPool(
        config.sync_pool.workers,
        sync_refs,
        on_queue_depth=backlog.set,
        memory_limit_bytes=config.sync_pool.worker_memory_limit_bytes,
        chunking=config.sync_pool.pool_chunking,
        max_extra_size=config.limits.max_result_extra_chars,
    )
    stack.push_async_callback(asyncio.to_thread, pool.close)
    return pool


def _scorer(
    config: GatewayConfig,
    backend: StateBackend,
    loaded: dict[str, RewardFunction],
    pool: WorkerPool | None,
    metrics: GatewayMetrics,
    http_client: aiohttp.ClientSession,
    tokenizer: Any,
    external: ExternalPools,
    spend: SpendMeter,
) -> Scorer:
    """The scorer with what it injects, its result cache (cache/) and its gates (limits/) over the backend."""
    return Scorer(
        pool,
        metrics,
        Injectables(
            reward_router_address=config.reward_router_address,
            router_addresses={**config.pools.routers, **external.addresses(_self_address(config))},
            http_client=http_client,
            reward_model_tokenizer=tokenizer,
            tokenizer_path=config.loading.reward_model_tokenizer,
            fleet_pools=frozenset(config.pools.routers) - frozenset(config.pools.external_pools),
            pool_token=external.token if external.pools else None,
        ),
        cache=None
        if config.cache.idempotency == "off"
        else results_for(
            backend, config.cache.idempotency, config.cache.result_cache_size, config.cache.result_cache_ttl_s
        ),
        max_result_extra_chars=config.limits.max_result_extra_chars,
        gates=function_gates(
            {name: fn.config for name, fn in loaded.items()},
            lambda name, cfg: gate_for(
                backend,
                name,
                cfg.max_concurrency,
                cfg.requests_per_minute,
                cfg.tokens_per_minute,
                config.state.state_lease_s,
            ),
        ),
        spend=spend,
    )


def _shadow_judge(
    stack: AsyncExitStack,
    config: GatewayConfig,
    loaded: dict[str, RewardFunction],
    scorer: Scorer,
    metrics: GatewayMetrics,
) -> ShadowJudge | None:
    shadows = {n: fn.config.shadow for n, fn in loaded.items() if fn.config.shadow is not None}
    if not shadows:
        return None
    known = set(config.pools.routers) | set(config.pools.external_pools)
    shadow = ShadowJudge(shadows, scorer, known, metrics.registry)
    scorer.on_scored = shadow.scored
    stack.push_async_callback(shadow.close)
    return shadow


def install_routes(
    app: FastAPI, config: GatewayConfig, tenancy: Tenancy | None = None, mcp: McpEndpoints | None = None
) -> ToolRoutes | None:
    """Returns NeMo Gym's tool calls for the plain-ASGI path (None: no server serves an environment)."""
    install_error_handlers(app)
    for module in (score, meta, graders, admin, pools, monitors, sessions):
        app.include_router(module.router)
    if tenancy is not None:
        app.include_router(tenant_routes.router)
    trainers = gateway_backend(app, config)  # OpenRLHF + slime, over the gateway's own scoring path
    app.include_router(openrlhf.make_router(trainers))
    app.include_router(slime.make_router(trainers))
    gym = nemo_gym.make_router(config.nemo_gym, trainers)
    if mcp is not None and any(s.expose_tools_over_mcp for s in config.nemo_gym.servers.values()):
        # ahead of the router's `/{server}/{tool}`
        app.router.routes.append(
            Route(
                nemo_gym_mcp.path(config.nemo_gym),
                endpoint=nemo_gym_mcp.GymMcpEndpoint(config.nemo_gym, mcp),
                methods=["GET", "POST", "DELETE"],
                include_in_schema=False,
            )
        )
    app.include_router(gym)
    # Environments over OpenEnv and MCP, both calling the Gateway's environment sessions
    app.include_router(openenv.make_router(sessions_of))
    if mcp is not None:
        app.router.routes.append(
            Route(mcp_route.PATH, endpoint=mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)
        )
    return nemo_gym.tool_routes(gym, config.nemo_gym)


def install_middleware(
    app: FastAPI,
    config: GatewayConfig,
    metrics: GatewayMetrics,
    admission: Admission,
    tenancy: Tenancy | None = None,
    tools: ToolRoutes | None = None,
) -> None:
    # Innermost first. POST /score and the environments' tool calls skip the router
    # (hot_path/score_asgi.py, tool_call_asgi.py), inside every limit below.
    exact = {sessions.CALL_PATH: (sessions.declared_call_route(), sessions.call)}
    app.add_middleware(ToolCallFastPath, exact=exact, tools=tools)
    if isinstance(app, GatewayApp):
        app.also_fast = may_take(exact, tools)
    app.add_middleware(
        ScoreFastPath,
        route=score.declared_route(),
        score_sample=score.score_sample,
        result_json=score.result_json,
    )
    # The body limits sit inside admission: a body that is too large or too slow (408)
    # unwinds the app, and the slot it held is released on the way out.
    app.add_middleware(
        RequestBodyLimits,
        max_body_bytes=config.body.max_body_bytes,
        body_read_timeout_s=config.body.body_read_timeout_s,
        on_refused=metrics.body_refused,
    )
    # After auth: refused keys take no slot.
    app.add_middleware(AdmissionMiddleware, admission=admission, max_body_bytes=config.body.max_body_bytes)
    keys = api_keys(config)
    public = {"/health", "/metrics", "/monitors"} if config.auth.auth_exempt_metrics else {"/health"}
    if tenancy is not None:  # every key is a tenant's (tenants/middleware.py)
        app.add_middleware(
            TenantMiddleware, tenancy=tenancy, public_paths=public, local_prefixes=(pools.PREFIX,)
        )
    elif keys:
        # The external-pool forwarding route checks a path token of its own.
        app.add_middleware(ApiKeyMiddleware, keys=keys, public_paths=public, local_prefixes=(pools.PREFIX,))
    app.add_middleware(RequestMetrics, observer=metrics)  # every refusal above is counted
    if tenancy is not None or keys:
        app.add_middleware(PathKey)  # outermost: `/k/<key>/...` becomes a header before anything sees it


def _self_address(config: GatewayConfig) -> str:
    """How reward functions on this machine reach this gateway (for the external-pool forwarding route)."""
    return f"{connect_host(config.host)}:{config.port}"


def api_keys(config: GatewayConfig) -> list[str]:
    keys = [key.get_secret_value() for key in config.auth.api_keys]
    if config.auth.api_keys_file is not None:
        keys += read_keys_file(config.auth.api_keys_file)
    return check_api_keys(keys, "api_keys")


def _log_functions(functions: dict[str, RewardFunction]) -> None:
    for fn in functions.values():
        logger.info(
            "reward function %-20s %-5s %-7s %s claims=%s",
            fn.name,
            "async" if fn.is_async else "sync",
            fn.origin,
            fn.source_file,
            list(fn.data_sources),
        )
