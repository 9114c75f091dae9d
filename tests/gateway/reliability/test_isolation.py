"""Failure isolation: hung, exiting, segfaulting and memory-hogging functions fail only their own samples,
/health keeps answering throughout, and an unreachable router is a typed error long before the call's limit.

No wall-clock bounds (the machine is shared): /health probes are shown to be answered *during* each hung call
(overlap of intervals), and the unreachable router is an `error` the gateway reports before `timeout_s`."""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench.harness.processes import free_port
from tests.support.reliability import report


def test_faulty_functions_fail_only_their_samples_and_health_stays_fast(gateway_factory: Any) -> None:
    gw = gateway_factory(
        {
            "worker_memory_limit_bytes": 2 * 1024**3,
            "functions": {"faulty": {"timeout_s": 2.0}, "rm_score": {"timeout_s": 5.0}},
            "routers": {"rm": f"127.0.0.1:{free_port()}"},  # nothing listens there
        }
    )
    probes: list[tuple[float, float]] = []  # (sent, answered) of each /health probe
    stop = threading.Event()

    def probe() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                started = time.monotonic()
                assert client.get(f"{gw.url}/health").status_code == 200
                probes.append((started, time.monotonic()))
                time.sleep(0.02)  # the probe's period (the behaviour measured), not a wait

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    faults = ["hang", "exit", "segv", "hog"] * 2
    plan = [None] * 24 + faults
    plan = [plan[i] for i in sorted(range(len(plan)), key=lambda i: (i * 7) % len(plan))]  # interleave

    intervals: dict[int, tuple[float, float]] = {}

    def score(i: int, fault: str | None) -> dict[str, Any]:
        body = {
            "data_source": "x",
            "reward_fn": "faulty",
            "solution_str": "s" * i,
            "extra_info": {"fault": fault},
        }
        sent = time.monotonic()
        answer: dict[str, Any] = httpx.post(f"{gw.url}/score", json=body, timeout=60).json()
        intervals[i] = (sent, time.monotonic())
        return answer

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(score, range(len(plan)), plan))
    unreachable = httpx.post(
        f"{gw.url}/score", json={"data_source": "x", "reward_fn": "rm_score", "solution_str": "a"}, timeout=30
    ).json()
    stop.set()
    prober.join()
    expected = {"hang": {"Timeout"}, "exit": {"WorkerCrashed"}, "segv": {"WorkerCrashed"},
                "hog": {"MemoryError", "WorkerCrashed"}}  # fmt: skip
    for i, (fault, answer) in enumerate(zip(plan, answers, strict=True)):
        if fault is None:
            assert answer["status"] == "ok" and answer["score"] == float(i % 7), answer
        else:
            assert answer["status"] in {"error", "timeout"}, answer
            assert answer["error"]["type"] in expected[fault], (fault, answer)
    assert unreachable["status"] == "error" and "Connect" in unreachable["error"]["type"], unreachable
    latencies = [b - a for a, b in probes]
    report("ISOLATION", samples=len(plan), faults=len(faults), good_ok=plan.count(None),
           health_probes=len(probes), health_p50_ms=statistics.median(latencies) * 1000,
           health_max_ms=max(latencies) * 1000,
           unreachable_router_s=unreachable["timings"]["total_s"])  # fmt: skip
    # While each hung call ran (2 s, then its worker was killed), /health was asked and answered.
    for i, fault in enumerate(plan):
        if fault == "hang":
            sent, answered = intervals[i]
            assert any(sent < a and b < answered for a, b in probes), (intervals[i], probes)
    # Refused at once: the status is "error" (a Connect error, asserted above), not the "timeout" the
    # function's own 5 s limit would have made of a slow failure. The gateway's verdict, not a stopwatch.
    assert unreachable["status"] != "timeout" and unreachable["error"]["type"] != "Timeout"
