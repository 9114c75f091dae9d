"""What the worker pool's fair queue (tenants/fair_pools.py `FairWorkerPool`) costs on the cheapest rule: a
burst of `calls` gsm8k calls submitted at once to a real `WorkerPool` (spawn workers), bare and behind the
fair queue, alternating in the same process; best of `rounds` each. A queued call is resumed once more than
a bare one (its grant), so the cost shows only while the pool is saturated; without tenants none of it runs.

With `--through-gateway`: the same burst as one `/score/batch` to a real gateway (uvicorn) with tenants off
and then on (the tenants' whole cost: keys, quotas, metrics and this queue), a sync rule of the tests.

    .venv/bin/python -m bench.fair_worker_pool [--calls 4096] [--workers 2] [--rounds 4] [--through-gateway]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client import CollectorRegistry

from rewardfleet.services.gateway.config.tenants import TenantConfig
from rewardfleet.services.gateway.execution.loader import FunctionRef
from rewardfleet.services.gateway.execution.pool import WorkerPool
from rewardfleet.services.gateway.tenants.context import Caller, current
from rewardfleet.services.gateway.tenants.fair_pools import FairWorkerPool
from rewardfleet.services.gateway.tenants.metrics import TenantMetrics

REF = FunctionRef("rewardfleet.reward_fns.gsm8k", "compute_score")
KWARGS = {"data_source": "openai/gsm8k", "solution_str": "#### 72", "ground_truth": "72"}


async def _burst(pool: Any, calls: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(pool.submit(REF, KWARGS, 10.0, None) for _ in range(calls)))
    return calls / (time.perf_counter() - started)


async def measure(calls: int, workers: int, rounds: int) -> dict[str, float]:
    inner = WorkerPool(workers, (REF,))
    try:
        await inner.warm_up()
        fair = FairWorkerPool(inner, TenantMetrics(CollectorRegistry()), last_rank=1)
        current.set(Caller("a", TenantConfig(), 1, "default", frozenset()))
        await _burst(inner, calls)  # the function's cost is measured: chunks as in service
        bare, queued = [], []
        for _ in range(rounds):
            bare.append(await _burst(inner, calls))
            queued.append(await _burst(fair, calls))
        return {"bare_per_s": max(bare), "fair_per_s": max(queued)}
    finally:
        inner.close()


def through_gateway(tenants: bool, tmp: Path, calls: int, workers: int, rounds: int) -> float:
    from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
    from bench.harness.tenants import KEY_A, auth, fair_pool_config

    path = tmp / f"gateway-{tenants}.yaml"
    path.write_text(yaml.safe_dump({**fair_pool_config(tenants), "cache": {"idempotency": "off"}}))
    port = free_port()
    argv = ["gateway", "--config", str(path), "--port", str(port), "--workers", str(workers)]
    proc = ChildProcess(rewardfleet_cmd(*argv), tmp / f"gateway-{tenants}.log")
    base = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(base + "/health", timeout_s=120)
        headers = auth(KEY_A) if tenants else {}
        samples = [{"data_source": "x", "reward_fn": "sleepy", "solution_str": f"s{i}", "ground_truth": ""}
                   for i in range(calls)]  # fmt: skip
        httpx.post(base + "/score/batch", json={"samples": samples}, headers=headers, timeout=300)  # warm
        best = 0.0
        for _ in range(rounds):
            started = time.perf_counter()
            resp = httpx.post(base + "/score/batch", json={"samples": samples}, headers=headers, timeout=300)
            elapsed = time.perf_counter() - started
            if resp.status_code != 200 or any(r["status"] != "ok" for r in resp.json()["results"]):
                raise RuntimeError(f"a call failed: {resp.text[:500]}")
            best = max(best, calls / elapsed)
        return best
    finally:
        proc.stop()


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--calls", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--through-gateway", action="store_true")
    args = parser.parse_args()
    if args.through_gateway:
        with tempfile.TemporaryDirectory() as folder:
            off = through_gateway(False, Path(folder), args.calls, args.workers, args.rounds)
            on = through_gateway(True, Path(folder), args.calls, args.workers, args.rounds)
        print(
            f"/score/batch of {args.calls} (cheap sync rule), {args.workers} workers, best of {args.rounds}: "
            f"tenants off {off:.0f}/s, on {on:.0f}/s, on/off {on / off:.2f}"
        )
        return
    out = asyncio.run(measure(args.calls, args.workers, args.rounds))
    ratio = out["fair_per_s"] / out["bare_per_s"]
    print(
        f"{args.calls} gsm8k calls at once, {args.workers} workers, best of {args.rounds}: "
        f"bare {out['bare_per_s']:.0f}/s, fair queue {out['fair_per_s']:.0f}/s, fair/bare {ratio:.2f}"
    )


if __name__ == "__main__":
    main()
