"""Noisy neighbour: two tenants share one pool of fixed capacity (a stand-in judge: `slots` calls at once,
each about `latency_s`, behind the gateway's own `max_concurrency` gate). Tenant B posts at a fraction of its
fair share (half the pool): alone, then while tenant A posts ten times its share. With tenants on, the pool's
admission rule (tenants/shares.py: assured shares, and a headroom of free slots that A, over its share, leaves
for B, within its share) serves B at once and A's excess gets 429 (its `samples_in_flight` quota); the same
posts against the gateway with tenants off (today's FIFO gate) show B's latency growing with A's load. A's
client keeps at most `a_outstanding` posts open (bounded load). Every post is answered 200 or 429; anything
else (an error, a timeout, a dropped connection) counts as lost. Ratios are against B alone in the same run.
Targets with tenants on: B's p50 and p99 with A <= 1.2x alone, A's answered throughput 0.8-1.2x its share,
0 lost; the same with `--replicas 3` (gateways on one Redis behind HAProxy: the rule runs in Redis' Lua).

    .venv/bin/python -m bench.noisy_neighbour [--duration-s 12] [--slots 16] [--latency-s 0.4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.common import OFFLINE_ENV, BenchResult, Row, print_result, write_fn
from bench.harness.haproxy import HAPROXY, haproxy_config
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd, running
from bench.harness.redis_server import RedisServer
from rewardfleet.services.gateway.config.tenants import TenancyConfig
from rewardfleet.services.gateway.tenants.shares import headroom_slots

KEY_A = "noisy-tenant-a-key-0123456789"
KEY_B = "noisy-tenant-b-key-0123456789"
POOL_FN = """
import asyncio


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(extra_info["latency_s"])  # a judge call: the pool holds max_concurrency at once
    return 1.0
"""


def gateway_config(tenants: bool, slots: int, a_in_flight: int) -> dict[str, Any]:
    config: dict[str, Any] = {
        "builtin_package": None,
        "functions": {"pool_judge": {"max_concurrency": slots, "timeout_s": 120}},
    }
    if tenants:
        config["tenants"] = {
            "a": {"api_keys": [KEY_A], "quotas": {"samples_in_flight": a_in_flight}},
            "b": {"api_keys": [KEY_B]},
        }
    return config


@contextmanager
def gateway(tmp: Path, config: dict[str, Any], fns: Path, name: str) -> Iterator[str]:
    """`rewardfleet gateway` on `config`; ready once `/health` answers (`/ready` needs a tenant's key)."""
    port = free_port()
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    cmd = rewardfleet_cmd(
        "gateway",
        "--port",
        str(port),
        "--config",
        str(path),
        "--reward-fns",
        str(fns),
        "--log-level",
        "warning",
    )
    child = ChildProcess(cmd, tmp / f"{name}.log", env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/health", timeout_s=120)
        yield base
    finally:
        child.stop()


@contextmanager
def serving(tmp: Path, config: dict[str, Any], fns: Path, name: str, replicas: int) -> Iterator[str]:
    """One gateway, or `replicas` on a real redis-server (`state_url`) behind HAProxy (round robin)."""
    if replicas == 1:
        with gateway(tmp, config, fns, name) as url:
            yield url
        return
    redis = RedisServer(tmp).start()
    try:
        with ExitStack() as stack:
            shared = {**config, "state_url": redis.url, "state_key_prefix": f"{name}:"}
            urls = [stack.enter_context(gateway(tmp, shared, fns, f"{name}-{i}")) for i in range(replicas)]
            port = free_port()
            cfg = tmp / f"{name}-haproxy.cfg"
            cfg.write_text(haproxy_config(port, [int(url.rsplit(":", 1)[1]) for url in urls]))
            balancer = stack.enter_context(
                running([HAPROXY, "-db", "-f", str(cfg)], tmp / f"{name}-haproxy.log")
            )
            balancer.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=30)
            yield f"http://127.0.0.1:{port}"
    finally:
        redis.stop()


@dataclass
class Tally:
    latencies_s: list[float] = field(default_factory=list)
    answered: int = 0
    refused: int = 0
    lost: int = 0
    sent: int = 0
    held_back: int = 0  # not sent: the client already had `a_outstanding` of this tenant's posts open
    answered_in_window: int = 0  # answered before the phase's last post was due (throughput)
    window_end: float = float("inf")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _post(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], tally: Tally, latency_s: float
) -> None:
    body = json.dumps(
        {
            "data_source": "bench",
            "reward_fn": "pool_judge",
            "solution_str": "x",
            "extra_info": {"latency_s": latency_s},
        }
    )
    started = time.perf_counter()
    tally.sent += 1
    try:
        async with session.post(url + "/score", data=body, headers=headers) as resp:
            payload = await resp.read()
            if resp.status == 200 and json.loads(payload)["status"] == "ok":
                tally.answered += 1
                now = time.perf_counter()
                tally.latencies_s.append(now - started)
                tally.answered_in_window += now <= tally.window_end
            elif resp.status == 429:
                tally.refused += 1
            else:
                tally.lost += 1
    except (TimeoutError, aiohttp.ClientError):
        tally.lost += 1


async def _paced(
    session: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    rate_per_s: float,
    duration_s: float,
    tally: Tally,
    latencies: random.Random,
    mean_latency_s: float,
    outstanding: int | None = None,
) -> None:
    """Open loop: one post every 1/rate seconds for `duration_s` (not waiting for answers). Each call's
    latency is drawn from U(0.5, 1.5) x the mean, seeded: a real judge's latency varies, and a fixed one
    keeps every slot in step (all free at once, then none for a whole call: see docs/tenants.md)."""
    tasks: set[asyncio.Task[None]] = set()
    start = time.perf_counter()
    tally.window_end = start + duration_s
    n = 0
    while (due := start + n / rate_per_s) < start + duration_s:
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        n += 1
        if outstanding is not None and len(tasks) >= outstanding:
            tally.held_back += 1
            continue
        latency_s = mean_latency_s * latencies.uniform(0.5, 1.5)
        task = asyncio.create_task(_post(session, url, headers, tally, latency_s))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)


async def phase(
    url: str,
    tenants: bool,
    b_rate: float,
    a_rate: float,
    duration_s: float,
    a_outstanding: int,
    latency_s: float,
    seed: int,
) -> tuple[Tally, Tally]:
    b, a = Tally(), Tally()
    heads_b = {"content-type": "application/json"}
    heads_a = dict(heads_b)
    if tenants:
        heads_b["authorization"] = f"Bearer {KEY_B}"
        heads_a["authorization"] = f"Bearer {KEY_A}"
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        rng_b, rng_a = random.Random(seed), random.Random(seed + 1)
        runs = [_paced(session, url, heads_b, b_rate, duration_s, b, rng_b, latency_s)]
        if a_rate > 0:
            runs.append(_paced(session, url, heads_a, a_rate, duration_s, a, rng_a, latency_s, a_outstanding))
        await asyncio.gather(*runs)
    return b, a


def run(
    duration_s: float = 12.0,
    slots: int = 16,
    latency_s: float = 0.4,
    a_outstanding: int = 128,
    b_fractions: tuple[float, ...] = (1.0, 0.8),
    replicas: int = 1,
) -> BenchResult:
    """B at each of `b_fractions` of its share with tenants on; at the first one with tenants off. With
    `replicas` > 1: that many gateways on one Redis behind HAProxy."""
    result = BenchResult(
        "noisy neighbour" + (f" ({replicas} replicas, Redis, HAProxy)" if replicas > 1 else "")
    )
    capacity = slots / latency_s  # calls per second the pool can answer
    share = capacity / 2  # two tenants of equal weight
    a_in_flight = 4 * slots
    headroom_fraction = TenancyConfig().headroom_fraction
    figures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rf-noisy-") as tmp_name:
        tmp = Path(tmp_name)
        fns = write_fn(tmp / "fns", "pool_judge", POOL_FN)
        for tenants in (True, False):
            mode = "tenants on" if tenants else "tenants off"
            config = gateway_config(tenants, slots, a_in_flight)
            with serving(tmp, config, fns, mode.replace(" ", "-"), replicas) as url:
                args = (a_outstanding, latency_s)
                asyncio.run(phase(url, tenants, share, 0.0, 2.0, *args, seed=0))  # warm-up, not counted
                for fraction in b_fractions if tenants else b_fractions[:1]:
                    b_rate = fraction * share
                    alone, _ = asyncio.run(phase(url, tenants, b_rate, 0.0, duration_s, *args, seed=1))
                    flooded, flood = asyncio.run(
                        phase(url, tenants, b_rate, 10 * share, duration_s, *args, seed=1)
                    )
                    figures.append(
                        {
                            "mode": mode,
                            "fraction": fraction,
                            "alone": alone,
                            "flooded": flooded,
                            "flood": flood,
                        }
                    )
    result.notes = [
        f"pool: {slots} slots x {latency_s} s (mean; each call U(0.5, 1.5) x, seeded) = {capacity:.0f} "
        f"calls/s; fair share {share:.0f}/s per tenant (equal weights); A posts {10 * share:.0f}/s (10x) for "
        f"{duration_s:.0f} s and keeps <= {a_outstanding} posts open; with tenants A's samples_in_flight "
        f"quota is {a_in_flight} and the pool's headroom the default (tenancy.headroom_fraction "
        f"{headroom_fraction}: {headroom_slots(slots, headroom_fraction)} slot(s))",
    ]
    for fig in figures:
        _report(result, fig, share, duration_s)
    return result


def _report(result: BenchResult, fig: dict[str, Any], share: float, duration_s: float) -> None:
    alone, flooded, flood = fig["alone"], fig["flooded"], fig["flood"]
    mode, fraction = fig["mode"], fig["fraction"]
    p50 = percentile(flooded.latencies_s, 0.5) / percentile(alone.latencies_s, 0.5)
    p99 = percentile(flooded.latencies_s, 0.99) / percentile(alone.latencies_s, 0.99)
    a_share = flood.answered_in_window / duration_s / share
    lost = alone.lost + flooded.lost + flood.lost

    def ms(tally: Tally, q: float) -> str:
        return f"{percentile(tally.latencies_s, q) * 1000:.0f}"

    label = f"{mode}, B at {fraction:.0%} of its share"
    b_part = (
        f"B alone p50 {ms(alone, 0.5)} ms p99 {ms(alone, 0.99)} ms; with A p50 {ms(flooded, 0.5)} ms p99 "
        f"{ms(flooded, 0.99)} ms (ratios {p50:.2f} / {p99:.2f}); B answered {flooded.answered}/{flooded.sent}"
    )
    a_part = (
        f"A sent {flood.sent}, answered {flood.answered} ({flood.answered_in_window} within the "
        f"{duration_s:.0f} s: {a_share:.2f} x its share), 429 {flood.refused}, held back by the client "
        f"{flood.held_back}"
    )
    result.notes.append(f"{label}: {b_part}; {a_part}; lost {lost}")
    on = mode == "tenants on"
    target, met = ("<= 1.2", p50 <= 1.2) if on else ("", None)
    result.rows.append(Row(result.name, f"{label}: B p50 with A / alone", p50, target, met))
    target, met = ("<= 1.2", p99 <= 1.2) if on else ("", None)
    result.rows.append(Row(result.name, f"{label}: B p99 with A / alone", p99, target, met))
    if on:
        result.rows.append(
            Row(result.name, f"{label}: A answered / its share", a_share, "0.8-1.2", 0.8 <= a_share <= 1.2)
        )
    result.rows.append(Row(result.name, f"{label}: lost posts", lost, "0", lost == 0, fmt="{:.0f}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration-s", type=float, default=12.0)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--latency-s", type=float, default=0.4)
    ap.add_argument("--a-outstanding", type=int, default=128)
    ap.add_argument("--b-fractions", type=float, nargs="+", default=[1.0, 0.8], help="B's rates / its share")
    ap.add_argument("--replicas", type=int, default=1, help="gateways on one Redis behind HAProxy")
    args = ap.parse_args()
    fractions = tuple(args.b_fractions)
    print_result(
        run(args.duration_s, args.slots, args.latency_s, args.a_outstanding, fractions, args.replicas)
    )


if __name__ == "__main__":
    main()
