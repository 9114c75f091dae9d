"""Supervisor: restarts a crashed child with exponential backoff and a cap, and stops without orphans."""

from __future__ import annotations

import os
import signal
import sys
from itertools import pairwise
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import free_port
from bench.harness.waiting import eventually_async
from rewardfleet.router import RouterConfig
from rewardfleet.services.fleet.plan import router_child_spec
from rewardfleet.services.fleet.supervisor import Backoff, ChildFailed, ChildSpec, ChildState, Supervisor
from tests.support.router import FAST_HEALTH, ReplicaFactory, pid_exists


def test_backoff_grows_and_is_capped() -> None:
    backoff = Backoff(initial_s=0.5, multiplier=2.0, max_s=3.0)
    assert [backoff.delay_s(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="multiplier"):
        Backoff(multiplier=0.5)
    with pytest.raises(ValueError, match="argv"):
        ChildSpec(name="x", argv=())
    with pytest.raises(ValueError, match="events_kept"):
        Supervisor(ChildSpec(name="x", argv=("true",)), events_kept=0)


def test_display_argv_hides_secrets() -> None:
    spec = ChildSpec(name="x", argv=("sglang-router", "--api-key", "sk-1", "--redis", "redis://:pw@h:6379"))
    assert spec.display_argv == ["sglang-router", "--api-key", "***", "--redis", "redis://:***@h:6379"]
    assert "sk-1" in spec.argv  # the child itself gets the real key


async def test_events_keep_only_the_most_recent(tmp_path: Path) -> None:
    # A crash loop must not grow memory: 20 restarts make ~60 events, the supervisor keeps the last 5.
    spec = ChildSpec(name="crasher", argv=(sys.executable, "-c", "import sys; sys.exit(3)"))
    sup = Supervisor(spec, Backoff(initial_s=0.0, max_s=0.0, max_restarts=20), events_kept=5)
    await sup.start()
    try:
        await eventually_async(lambda: sup.state is ChildState.FAILED, timeout_s=60)
    finally:
        await sup.stop()
    assert sup.restarts == 20
    assert len(sup.events) == 5
    assert [e.kind for e in sup.events][-2:] == ["gave_up", "stopped"]
    with pytest.raises(ChildFailed, match="after 20 restarts"):  # the last detail survives the trimming
        await sup.wait_ready(timeout_s=0.1)


async def test_supervisor_restarts_killed_router(start_replica: ReplicaFactory, tmp_path: Path) -> None:
    replica = start_replica("judge", "s1")
    cfg = RouterConfig(
        port=free_port(), prometheus_port=free_port(), worker_urls=[replica.url], policy="round_robin",
        **FAST_HEALTH,
    )  # fmt: skip
    spec = router_child_spec(cfg, "judge-router", tmp_path / "router.log")
    assert spec.readiness_url == f"{cfg.url}/readiness"
    sup = Supervisor(spec, Backoff(initial_s=0.3, multiplier=2.0, max_s=1.0))
    async with httpx.AsyncClient(timeout=10) as client:
        async with sup:
            await sup.wait_ready(timeout_s=30)
            first_pid = sup.pid
            assert first_pid is not None and sup.state is ChildState.READY
            resp = await client.post(f"{cfg.url}/generate", json={"text": "before"})
            assert resp.status_code == 200

            os.kill(first_pid, signal.SIGKILL)  # a crash
            await eventually_async(lambda: sup.restarts >= 1, timeout_s=30)
            await sup.wait_ready(timeout_s=30)
            assert sup.restarts == 1
            assert sup.pid is not None and sup.pid != first_pid
            kinds = [e.kind for e in sup.events]
            assert kinds[:2] == ["started", "ready"] and "exited" in kinds and "restarting" in kinds
            assert sup.last_exit_code == -signal.SIGKILL
            resp = await client.post(f"{cfg.url}/generate", json={"text": "after"})
            assert resp.status_code == 200
            second_pid = sup.pid
        assert sup.state is ChildState.STOPPED
        assert not pid_exists(first_pid) and not pid_exists(second_pid)
        with pytest.raises(httpx.ConnectError):
            await client.get(f"{cfg.url}/liveness")


async def test_crash_loop_backs_off_then_gives_up(tmp_path: Path) -> None:
    spec = ChildSpec(
        name="crasher", argv=(sys.executable, "-c", "import sys; sys.exit(3)"), log_path=tmp_path / "c.log"
    )
    sup = Supervisor(spec, Backoff(initial_s=0.2, multiplier=2.0, max_s=0.5, max_restarts=3))
    await sup.start()
    try:
        with pytest.raises(ChildFailed, match="gave_up"):
            # Ready immediately (no readiness URL) but keeps dying; wait until the supervisor gives up.
            await eventually_async(lambda: sup.state is ChildState.FAILED, timeout_s=20)
            await sup.wait_ready(timeout_s=0.1)
    finally:
        await sup.stop()
    assert sup.restarts == 3 and sup.last_exit_code == 3 and sup.state is ChildState.FAILED
    delays = [e.detail for e in sup.events if e.kind == "restarting"]
    assert delays == ["in 0.20s", "in 0.40s", "in 0.50s"]
    starts = [e.at for e in sup.events if e.kind == "started"]
    gaps = [b - a for a, b in pairwise(starts)]
    assert gaps[0] >= 0.2 and gaps[1] >= 0.4 and gaps[2] >= 0.5


async def test_stop_kills_the_whole_group_and_not_ready_times_out(tmp_path: Path) -> None:
    # The child starts a grandchild in its group and ignores SIGTERM; stop() must still leave nothing.
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        # the grandchild sleeps past its parent (the behaviour): the supervisor must reap it
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"  # the child, too, stays until killed
    )
    log = tmp_path / "g.log"
    port = free_port()
    spec = ChildSpec(
        name="stubborn",
        argv=(sys.executable, "-c", script),
        readiness_url=f"http://127.0.0.1:{port}/never",
        log_path=log,
        stop_timeout_s=1.0,
    )
    sup = Supervisor(spec)
    await sup.start()
    with pytest.raises(TimeoutError, match="not ready"):
        await sup.wait_ready(timeout_s=0.5)
    await eventually_async(lambda: bool(log.read_text().strip()), timeout_s=10)
    grandchild = int(log.read_text().split()[0])
    child = sup.pid
    assert child is not None and pid_exists(grandchild)
    await sup.stop()
    assert not pid_exists(child)
    await eventually_async(
        lambda: not pid_exists(grandchild), timeout_s=5
    )  # SIGKILL sent to the group; the exit is asynchronous
    assert sup.restarts == 0  # a stop is not a crash
