"""Fair queuing of the CPU worker pool and the code sandbox's slots over a real gateway (uvicorn, one worker
process, real bubblewrap sandboxes): a tenant posting after another's flood is served at once, interleaved
with the flood; a priority class goes first; without tenants the pool is first come, first served (the
scheduler's effect is measured against it, not assumed). Order is read from what the pool ran (the worker's
start stamps) or the order answers came back in (one slot: one sandbox at a time), never from timings."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.tenants import ADMIN, KEY_A, KEY_B, KEY_E, KEY_HEAVY, KEY_LIGHT, auth, fair_pool_config
from bench.harness.waiting import eventually_async
from tests.gateway.tenants.helpers import gateway

FLOOD = 12
LATE = 3
PLUGS = 2  # long calls posted first: the pool is full before the flood comes
PLUG_S = 2.0
PROGRAM = "```python\nimport time\ntime.sleep(%s)\nprint(input())\n```"  # its own work (the behaviour)
CASES = {"inputs": ["1\n"], "outputs": ["1\n"]}


def body(fn: str, delay_s: float = 0.1) -> dict[str, Any]:
    if fn == "sleepy":
        return {"data_source": "x", "reward_fn": fn, "solution_str": "s", "ground_truth": "", "extra_info":
                {"delay_s": delay_s}}  # fmt: skip
    program = PROGRAM % delay_s
    return {"data_source": "apps", "reward_fn": fn, "solution_str": program, "ground_truth": CASES}


def _gauge(text: str, name: str, tenant: str | None = None) -> float:
    label = f'{{tenant="{tenant}"}}' if tenant else ""
    found = re.search(rf"^rewardfleet_{name}{re.escape(label)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


async def _at_least(count: Awaitable[float], n: float) -> bool:
    return await count >= n


async def _flood_then_late(base: str, fn: str, flood_key: str, late_key: str, tenants: bool) -> list[str]:
    """`PLUGS` long calls and `FLOOD` calls of the flooding tenant, then (once all are waiting) `LATE` of the
    late one; the order the pool served them in ('a' / 'late')."""
    served: list[tuple[int, str]] = []
    async with httpx.AsyncClient(timeout=120) as client:

        async def one(key: str, who: str, delay_s: float = 0.1) -> None:
            sent = body(fn, delay_s)
            resp = await client.post(base + "/score", json=sent, headers=auth(key) if tenants else {})
            assert resp.status_code == 200 and resp.json()["status"] == "ok", resp.text
            stamp = resp.json()["extra"].get("started_ns")
            served.append((stamp if stamp is not None else len(served), who))

        async def until(ready: Any) -> None:
            async def check() -> bool:
                metrics = (await client.get(base + "/metrics", headers=auth(ADMIN) if tenants else {})).text
                return bool(ready(metrics))

            await eventually_async(check, timeout_s=30, what="the pool filled")

        def admitted(metrics: str) -> float:
            if tenants:
                return _gauge(metrics, "tenant_samples_total", "a")
            return _gauge(metrics, "gateway_inflight_requests")

        before = admitted((await client.get(base + "/metrics", headers=auth(ADMIN) if tenants else {})).text)
        flood = [asyncio.create_task(one(flood_key, "a", PLUG_S)) for _ in range(PLUGS)]
        await until(lambda m: admitted(m) - before >= PLUGS)  # the plugs hold the pool first
        flood += [asyncio.create_task(one(flood_key, "a")) for _ in range(FLOOD)]
        if tenants:  # the flood waits in the fair queue (one call of it at its head, waiting for room)
            await until(lambda m: _gauge(m, "tenant_fair_queued", "a") >= FLOOD - 1)
        else:  # ... or in the gateway
            await until(lambda m: admitted(m) >= PLUGS + FLOOD)
        await asyncio.gather(*(one(late_key, "late") for _ in range(LATE)), *flood)
    return [who for _, who in sorted(served)]


@pytest.fixture(scope="module")
def fair(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("fair")
    with gateway(tmp, fair_pool_config(True), name="fair") as url:
        yield url


@pytest.mark.parametrize("fn", ["sleepy", "sandboxed"])
def test_a_late_tenant_is_interleaved_with_a_flood(fair: str, fn: str) -> None:
    """Equal weights: b's calls are served at once, alternating with a's backlog (at most the two calls
    already inside the pool are ahead of b's first)."""
    order = asyncio.run(_flood_then_late(fair, fn, KEY_A, KEY_B, tenants=True))
    late = [i for i, who in enumerate(order) if who == "late"]
    assert len(order) == PLUGS + FLOOD + LATE
    # first come, first served would put them last (14, 15, 16)
    assert late[-1] <= PLUGS + 2 * LATE, order


@pytest.mark.parametrize("fn", ["sleepy", "sandboxed"])
def test_priority_class_first(fair: str, fn: str) -> None:
    order = asyncio.run(_flood_then_late(fair, fn, KEY_A, KEY_E, tenants=True))
    late = [i for i, who in enumerate(order) if who == "late"]
    assert late[-1] <= PLUGS + LATE, order  # eval before every waiting train call


def test_no_tenants_first_come_first_served(tmp_path: Path) -> None:
    """The same flood without tenants: the late calls wait behind all of it (today's behaviour)."""
    with gateway(tmp_path, fair_pool_config(False), name="plain") as url:
        order = asyncio.run(_flood_then_late(url, "sleepy", "", "", tenants=False))
    late = [i for i, who in enumerate(order) if who == "late"]
    assert late[0] >= PLUGS + FLOOD - 2, order


def test_weights_share_the_worker_pool(fair: str) -> None:
    """light (weight 1) floods first, heavy (weight 3) right after, both while a plug holds the pool: of the
    next 8 calls served heavy gets about 3 in 4 (6); first come, first served would give light all 8."""

    async def run() -> list[str]:
        served: list[tuple[int, str]] = []
        async with httpx.AsyncClient(timeout=120) as client:

            async def one(key: str, who: str, delay_s: float = 0.1) -> None:
                resp = await client.post(base + "/score", json=body("sleepy", delay_s), headers=auth(key))
                assert resp.status_code == 200 and resp.json()["status"] == "ok", resp.text
                served.append((resp.json()["extra"]["started_ns"], who))

            async def queued() -> float:
                metrics = (await client.get(base + "/metrics", headers=auth(ADMIN))).text
                return _gauge(metrics, "tenant_fair_queued", "light") + _gauge(
                    metrics, "tenant_fair_queued", "heavy"
                )

            base = fair
            tasks = [asyncio.create_task(one(KEY_A, "plug", PLUG_S)) for _ in range(PLUGS)]

            async def plugged() -> bool:
                metrics = (await client.get(base + "/metrics", headers=auth(ADMIN))).text
                return _gauge(metrics, "gateway_pool_queue_depth") >= PLUGS - 1

            await eventually_async(plugged, timeout_s=30, what="the plugs in the pool")
            tasks += [asyncio.create_task(one(KEY_LIGHT, "light")) for _ in range(FLOOD)]
            # light's flood waits before heavy's comes
            await eventually_async(lambda: _at_least(queued(), FLOOD - 1), timeout_s=30, what="light queued")
            tasks += [asyncio.create_task(one(KEY_HEAVY, "heavy")) for _ in range(FLOOD)]
            await eventually_async(
                lambda: _at_least(queued(), 2 * FLOOD - 1), timeout_s=30, what="both queued"
            )
            await asyncio.gather(*tasks)
        return [who for _, who in sorted(served)]

    order = [who for who in asyncio.run(run()) if who != "plug"]
    assert order[:8].count("heavy") >= 5, order
