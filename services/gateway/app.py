"""`create_app(config)`: the FastAPI application. Its lifespan loads the reward functions and owns every
resource (the aiohttp session, the worker pool); nothing happens at import time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
from fastapi import FastAPI

from services.gateway.admission import Admission, AdmissionMiddleware, FunctionGate
from services.gateway.auth import ApiKeyAuth, read_keys_file
from services.gateway.config import GatewayConfig
from services.gateway.dispatch import Dispatcher
from services.gateway.drain import Drain
from services.gateway.errors import LoadError, install_error_handlers
from services.gateway.extensions import attach, build_features
from services.gateway.idempotency import ResultCache
from services.gateway.limits import SampleLimits
from services.gateway.metrics import GatewayMetrics
from services.gateway.middleware import BodySizeLimit, RequestMetrics
from services.gateway.registry import load_functions
from services.gateway.reload import Reloader
from services.gateway.routes import admin, graders, meta, score
from services.gateway.scoring import Injectables, Scorer
from services.gateway.state import Gateway
from services.gateway.tokenizer import TokenizerUnavailable, load_tokenizer
from services.gateway.workers import WorkerPool
from services.integrations.routes import gateway_check, gateway_score_one, make_protocol_router

log = logging.getLogger("rewardfleet.gateway")


def create_app(config: GatewayConfig, metrics: GatewayMetrics | None = None) -> FastAPI:
    metrics = metrics or GatewayMetrics()
    admission = Admission(
        config.max_inflight_requests,
        config.max_queued_requests,
        config.queue_timeout_s,
        config.retry_after_s,
        config.max_pool_queue,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            functions = load_functions(config)
            features, functions = build_features(config, functions)  # composites, graders, fallbacks
            tokenizer = None
            if config.reward_model_tokenizer is not None:
                tokenizer = await asyncio.to_thread(load_tokenizer, config.reward_model_tokenizer)
        except (LoadError, TokenizerUnavailable) as exc:
            log.error("gateway start-up failed: %s", exc)
            # A short exception: uvicorn prints its traceback after the message above and exits non-zero.
            raise RuntimeError("gateway start-up failed; see the error above") from None
        dispatcher = Dispatcher(functions, config.dispatch, config.default_reward_fn)
        sync_refs = tuple(fn.ref for fn in functions.values() if not fn.is_async)
        pool = (
            WorkerPool(
                config.workers,
                sync_refs,
                on_queue_depth=metrics.pool_queue_depth.set,
                memory_limit_bytes=config.worker_memory_limit_bytes,
            )
            if sync_refs
            else None
        )
        http_client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=config.http_max_connections),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        injectables = Injectables(
            reward_router_address=config.reward_router_address,
            router_addresses=dict(config.routers),
            http_client=http_client,
            reward_model_tokenizer=tokenizer,
            tokenizer_path=config.reward_model_tokenizer,
        )
        gateway = Gateway(
            config=config,
            metrics=metrics,
            functions=functions,
            scorer=Scorer(dispatcher, pool, metrics, injectables),
            http_client=http_client,
        )
        app.state.gateway = gateway
        attach(features, config, gateway.scorer, http_client)
        features.reloader = Reloader(config, gateway, features, has_pool=pool is not None)
        gateway.features = features
        install_reliability(gateway, admission, pool)
        drain = Drain(admission, config.shutdown_grace_s, on_drain=lambda: setattr(gateway, "ready", False))
        try:
            if pool is not None:
                await pool.warm_up()
            for fn in functions.values():
                log.info(
                    "reward function %-20s %-5s %-7s %s claims=%s",
                    fn.name,
                    "async" if fn.is_async else "sync",
                    fn.origin,
                    fn.source_file,
                    list(fn.data_sources),
                )
            gateway.ready = True
            drain.install()
            yield
        finally:
            drain.uninstall()
            gateway.ready = False
            await http_client.close()
            if pool is not None:
                await asyncio.to_thread(pool.close)

    app = FastAPI(
        title="Reward Fleet gateway",
        summary="POST /score runs drop-in (verl-compatible) reward functions, isolated, timed out, measured.",
        version="0.1.0",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.include_router(score.router)
    app.include_router(meta.router)
    app.include_router(graders.router)
    app.include_router(admin.router)
    protocols = make_protocol_router(gateway_score_one(app), check=gateway_check(app))
    app.include_router(protocols)  # OpenRLHF + slime (issue 6)
    # Outermost first: metrics see the 413s the size limit sends.
    app.add_middleware(BodySizeLimit, max_body_bytes=config.max_body_bytes)
    app.add_middleware(AdmissionMiddleware, admission=admission)  # after auth: refused keys take no slot
    keys = api_keys(config)
    if keys:
        public = {"/health", "/metrics"} if config.auth_exempt_metrics else {"/health"}
        app.add_middleware(ApiKeyAuth, keys=keys, public_paths=public)
    app.add_middleware(RequestMetrics, metrics=metrics)
    return app


def api_keys(config: GatewayConfig) -> list[str]:
    keys = [key.get_secret_value() for key in config.api_keys]
    if config.api_keys_file is not None:
        keys += read_keys_file(config.api_keys_file)
    return keys


def install_reliability(gateway: Gateway, admission: Admission, pool: WorkerPool | None) -> None:
    """Issue 7's parts that need the started gateway: pool backlog, cache, per-function and input limits."""
    config = gateway.config
    if pool is not None:
        admission.backlog = lambda: pool.queue_depth
    scorer = gateway.scorer
    if config.idempotency != "off":
        scorer.cache = ResultCache(config.idempotency, config.result_cache_size, config.result_cache_ttl_s)
    scorer.gates = {
        fn.name: FunctionGate(
            fn.config.max_concurrency, fn.config.requests_per_minute, fn.config.tokens_per_minute
        )
        for fn in gateway.functions.values()
        if fn.config.max_concurrency or fn.config.requests_per_minute or fn.config.tokens_per_minute
    }
    scorer.limits = SampleLimits(
        config.max_solution_chars,
        config.max_ground_truth_chars,
        config.max_prompt_chars,
        config.max_extra_info_depth,
    )
