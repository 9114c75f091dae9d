"""Shares and headroom over real gateway processes (uvicorn): in one process, and on two replicas sharing one
real redis-server (the rule in the Redis gate's Lua). A pool of 8 slots, headroom 1: tenant b holds a
slot, tenant a floods; a stops one slot short of full, b's next call is served at once (no call of a has
finished), a keeps at least its share, takes every slot once b leaves, and every call is answered.
Also: the headroom settings are checked, at start and on reload, naming the field."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from pydantic import ValidationError

from bench.harness.processes import rewardfleet_cmd
from bench.harness.redis_server import RedisServer
from bench.harness.tenants import ADMIN, KEY_A, KEY_B, auth
from bench.harness.waiting import eventually, eventually_async
from rewardfleet.services.gateway.config import GatewayConfig
from tests.gateway.tenants.helpers import gateway

FAIR_FNS = Path(__file__).parent / "fair_fns"
SLOTS = 8


def pool_config(**tenancy: Any) -> dict[str, Any]:
    return {
        "builtin_package": None,
        "reward_fns_dirs": [str(FAIR_FNS)],
        "functions": {"held": {"max_concurrency": SLOTS, "timeout_s": 120}},
        "tenancy": {"headroom_slots": {"held": 1}, **tenancy},
        "tenants": {
            "a": {"api_keys": [KEY_A]},
            "b": {"api_keys": [KEY_B]},
            "ops": {"api_keys": [ADMIN], "admin": True},
        },
    }


class Pool:
    """The test's side of the `held` calls: marker files of started calls, files that let them finish."""

    def __init__(self, tmp: Path) -> None:
        self.started = tmp / "started"
        self.started.mkdir()
        self.tmp = tmp

    def body(self, who: str, until: str | None) -> dict[str, Any]:
        extra = {"started": str(self.started), "who": who, "until": str(self.tmp / until) if until else None}
        return {"data_source": "x", "reward_fn": "held", "solution_str": "s", "extra_info": extra}

    def holding(self, who: str) -> int:
        return sum(1 for path in self.started.iterdir() if path.name.startswith(who + "-"))

    def let_go(self, until: str) -> None:
        (self.tmp / until).touch()


async def _noisy_neighbour(pool: Pool, urls: list[str]) -> None:
    async with httpx.AsyncClient(timeout=120) as client:

        async def post(url: str, key: str, who: str, until: str | None) -> httpx.Response:
            return await client.post(url + "/score", json=pool.body(who, until), headers=auth(key))

        b_held = asyncio.create_task(post(urls[0], KEY_B, "b", "b-done"))
        await eventually_async(lambda: pool.holding("b") == 1, what="b's first call holds a slot")
        flood = [asyncio.create_task(post(urls[i % len(urls)], KEY_A, "a", "a-done")) for i in range(12)]
        # a borrows while more than the headroom stays free: 8 - b's 1 - 1 = 6 (over its share of 4)
        await eventually_async(lambda: pool.holding("a") == 6, what="a holds 6 slots")
        quick = await asyncio.wait_for(post(urls[-1], KEY_B, "b", None), 60)  # the headroom: at once
        assert quick.status_code == 200 and quick.json()["status"] == "ok"
        assert not any(task.done() for task in flood)  # no call of a finished: b did not wait for one
        assert pool.holding("a") == 6  # a did not take the headroom back while b has work
        pool.let_go("b-done")
        assert (await b_held).status_code == 200
        await eventually_async(lambda: pool.holding("a") == SLOTS, what="a alone takes every slot")
        pool.let_go("a-done")
        answers = await asyncio.gather(*flood)
        assert [r.status_code for r in answers] == [200] * 12  # nothing lost
        assert all(r.json()["status"] == "ok" for r in answers)


def test_a_tenant_within_its_share_is_served_at_once_in_process(tmp_path: Path) -> None:
    pool = Pool(tmp_path)
    with gateway(tmp_path, pool_config()) as base:
        asyncio.run(_noisy_neighbour(pool, [base]))


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


def test_a_tenant_within_its_share_is_served_at_once_on_two_replicas(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    pool = Pool(tmp_path)
    config = pool_config()
    with (
        gateway(tmp_path, config, redis_server.url, "r1") as one,
        gateway(tmp_path, config, redis_server.url, "r2") as two,
    ):
        asyncio.run(_noisy_neighbour(pool, [one, two]))


def test_headroom_fraction_is_checked() -> None:
    config = pool_config(headroom_fraction=1.5)
    with pytest.raises(ValidationError, match="headroom_fraction"):
        GatewayConfig.model_validate(config)
    config = pool_config(headroom_slots={"held": -1})
    with pytest.raises(ValidationError, match=r"tenancy\.headroom_slots\.held"):
        GatewayConfig.model_validate(config)


def test_headroom_slots_must_name_a_pool_at_start(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(pool_config(headroom_slots={"nope": 1})))
    cmd = rewardfleet_cmd("gateway", "--config", str(path), "--port", "9", "--workers", "1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "tenancy.headroom_slots.nope" in proc.stdout + proc.stderr


def test_a_reload_with_a_headroom_of_the_whole_pool_is_refused(tmp_path: Path) -> None:
    config = pool_config()
    with gateway(tmp_path, config) as base:
        config["tenancy"]["headroom_slots"] = {"held": SLOTS}
        (tmp_path / "gw.yaml").write_text(yaml.safe_dump(config))
        refused = httpx.post(base + "/admin/reload", headers=auth(ADMIN), timeout=30)
        assert refused.status_code == 409
        assert "tenancy.headroom_slots.held" in refused.json()["error"]["message"]
        config["tenancy"]["headroom_slots"] = {"held": 2}
        (tmp_path / "gw.yaml").write_text(yaml.safe_dump(config))
        assert httpx.post(base + "/admin/reload", headers=auth(ADMIN), timeout=30).status_code == 200
        eventually(lambda: httpx.get(base + "/health", timeout=10).status_code == 200, what="still serving")
