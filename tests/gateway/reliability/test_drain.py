"""SIGTERM drains: /ready and new work answer 503 + Retry-After, admitted work finishes, the process exits;
a client that retries through a gateway restart gets every sample scored, each function call exactly once."""

from __future__ import annotations

import asyncio
import collections
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.harness.processes import wait_until_in_flight
from bench.harness.waiting import eventually
from rewardfleet.services.client import AsyncRewardClient, RetryPolicy
from tests.support.reliability import report


def _config(log: Path, delay_s: float) -> dict[str, Any]:
    return {
        "default_reward_fn": "counted",
        "shutdown_grace_s": 20,
        "functions": {"counted": {"reward_kwargs": {"log_path": str(log), "delay_s": delay_s}}},
    }


def _wait_for_status(url: str, status: int, timeout_s: float = 30) -> httpx.Response:
    def answered() -> httpx.Response:
        response = httpx.get(url, timeout=5)
        assert response.status_code == status, f"{url} answered {response.status_code}, never {status}"
        return response

    return eventually(answered, timeout_s=timeout_s, retry_on=(AssertionError,))


def test_sigterm_finishes_admitted_work_and_refuses_new_work_with_503(
    gateway_factory: Any, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    gw = gateway_factory(_config(log, delay_s=1.0))
    body = {"data_source": "x", "solution_str": "abc"}
    with ThreadPoolExecutor(4) as pool:
        inflight = [
            pool.submit(httpx.post, f"{gw.url}/score", json={**body, "uid": f"in{i}"}, timeout=30)
            for i in range(4)  # 2 workers: two run, two wait for a worker
        ]
        wait_until_in_flight(gw.url, 4)  # not a fixed sleep: on a loaded machine requests arrive late
        sent = time.monotonic()
        gw.proc.signal(signal.SIGTERM)  # the whole process group, as a supervisor does
        ready = _wait_for_status(f"{gw.url}/ready", 503)  # once the signal is handled (the work takes >1 s)
        refused = httpx.post(f"{gw.url}/score", json={**body, "uid": "late"}, timeout=5)
        answers = [f.result() for f in inflight]
    code = gw.proc.proc.wait(timeout=30)
    drain_s = time.monotonic() - sent
    report(
        "DRAIN", in_flight=4, answered=sum(a.status_code == 200 for a in answers), exit=code, drain_s=drain_s
    )
    assert ready.status_code == 503
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["type"] == "Draining"
    assert [a.status_code for a in answers] == [200] * 4
    assert all(a.json()["status"] == "ok" for a in answers), [a.json() for a in answers]
    assert sorted(log.read_text().split()) == [f"in{i}" for i in range(4)]
    # It exited because the work was done, not because the 20 s grace ran out (the gateway says which).
    assert "drained in" in gw.proc.log() and "grace period over" not in gw.proc.log()


def test_gateway_restart_mid_load_loses_nothing_and_runs_nothing_twice(
    gateway_factory: Any, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    gw = gateway_factory(_config(log, delay_s=0.01))
    n = 1000
    samples = [{"data_source": "x", "solution_str": "s" * (i % 30), "uid": f"u{i}"} for i in range(n)]
    policy = RetryPolicy(max_attempts=100, initial_backoff_s=0.1, max_backoff_s=1.0, max_elapsed_s=120)
    results: list[Any] = []

    async def run() -> None:
        async with AsyncRewardClient(gw.url, max_concurrency=16, retry=policy, timeout_s=30) as client:
            results.extend(await client.score_many(samples))

    runner = threading.Thread(target=lambda: asyncio.run(run()))
    runner.start()
    eventually(lambda: log.exists() and len(log.read_text().split()) >= n // 3, timeout_s=60, interval_s=0.05)
    before_sigterm = len(log.read_text().split())
    gw.proc.signal(signal.SIGTERM)
    exit_code = gw.proc.proc.wait(timeout=60)
    gw.proc.stop()
    gw.start()  # same port; the client has been retrying meanwhile
    runner.join(timeout=120)
    assert not runner.is_alive()
    calls = collections.Counter(log.read_text().split())
    twice = {uid: c for uid, c in calls.items() if c > 1}
    lost = [r for r in results if not r.ok]
    retried = sum(r.attempts > 1 for r in results)
    report(
        "RESTART",
        samples=n,
        calls_before_sigterm=before_sigterm,
        exit=exit_code,
        retried_samples=retried,
        lost=len(lost),
        ran_twice=len(twice),
    )
    assert len(results) == n and not lost, lost[:3]
    assert [r.score for r in results] == [float(i % 30 % 7) for i in range(n)]
    assert not twice, list(twice.items())[:5]
    assert set(calls) == {f"u{i}" for i in range(n)}
