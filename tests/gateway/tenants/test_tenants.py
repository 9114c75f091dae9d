"""Tenants over a real gateway process (uvicorn, in-process state): isolation of groups, uids and cached
results, quotas' 429s, spend caps, /tenants/self, a key moved by reload, hostile run labels, unknown
keys."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from bench.harness.tenants import ADMIN, KEY_A, KEY_B, auth
from bench.harness.waiting import eventually_async
from tests.gateway.tenants.helpers import (
    KEY_B2,
    KEY_C,
    gateway,
    same_minute,
    sample,
    tenant_config,
)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tenants")


@pytest.fixture(scope="module")
def base(tmp: Path) -> Iterator[str]:
    with gateway(tmp, tenant_config(tmp)) as url:
        yield url


async def in_flight(client: httpx.AsyncClient, base: str, key: str, n: int = 1) -> bool:
    """Whether the gateway holds `n` of `key`'s tenant's samples (its own /tenants/self says so)."""
    usage = (await client.get(base + "/tenants/self", headers=auth(key))).json()["usage"]
    return usage["samples_in_flight"] == n


def post(base: str, key: str, body: dict, path: str = "/score", run: str | None = None) -> httpx.Response:
    return httpx.post(base + path, json=body, headers=auth(key, run), timeout=30)


def test_unknown_or_missing_key_is_401(base: str) -> None:
    assert httpx.post(base + "/score", json=sample(), timeout=10).status_code == 401
    resp = post(base, "not-a-tenant-key-0123456789", sample())
    assert resp.status_code == 401 and resp.json()["error"]["type"] == "Unauthorized"


def test_same_uid_is_cached_per_tenant(base: str) -> None:
    body = sample(uid="shared-uid-1")
    a1, a2 = post(base, KEY_A, body).json(), post(base, KEY_A, body).json()
    b1 = post(base, KEY_B, body).json()
    assert a1["cached"] is False and a2["cached"] is True
    assert a1["extra"]["call_id"] == a2["extra"]["call_id"]  # a's retry: a's own cached result
    assert b1["cached"] is False and b1["extra"]["call_id"] != a1["extra"]["call_id"]  # b: its own call


def test_in_flight_call_is_not_joined_across_tenants(base: str) -> None:
    body = sample(uid="slow-uid", extra_info={"delay_s": 0.5})

    async def both() -> list[dict]:
        async with httpx.AsyncClient(timeout=30) as client:
            calls = [client.post(base + "/score", json=body, headers=auth(k)) for k in (KEY_A, KEY_B, KEY_A)]
            return [r.json() for r in await asyncio.gather(*calls)]

    a, b, a_again = asyncio.run(both())
    assert a["extra"]["call_id"] == a_again["extra"]["call_id"]  # a joined its own call
    assert b["extra"]["call_id"] != a["extra"]["call_id"] and b["cached"] is False


def test_same_group_id_is_two_groups(base: str) -> None:
    def member(index: int) -> dict:
        return sample(group_id="step3-prompt0", group_size=2, group_index=index, uid=f"g{index}")

    async def run() -> list[dict]:
        async with httpx.AsyncClient(timeout=30) as client:
            # a's member 0 and b's member 1 would complete one shared group: with tenants, neither completes
            # until its own tenant posts the other member.
            first = [
                asyncio.create_task(client.post(base + "/score", json=member(0), headers=auth(KEY_A))),
                asyncio.create_task(client.post(base + "/score", json=member(1), headers=auth(KEY_B))),
            ]
            for key in (KEY_A, KEY_B):  # until the gateway holds both members
                await eventually_async(lambda k=key: in_flight(client, base, k), what=f"{key}'s member")
            await asyncio.sleep(0.3)  # a window in which neither group may complete: the behaviour tested
            assert not any(t.done() for t in first)  # neither group is complete
            second = [
                client.post(base + "/score", json=member(1), headers=auth(KEY_A)),
                client.post(base + "/score", json=member(0), headers=auth(KEY_B)),
            ]
            done = await asyncio.gather(*first, *second)
            return [r.json() for r in done]

    a0, b1, a1, b0 = asyncio.run(run())
    for result in (a0, b1, a1, b0):
        assert result["status"] == "ok" and result["extra"]["group"]["size"] == 2, result
        assert result["extra"]["group"]["received"] == 2 and result["extra"]["group"]["id"] == "step3-prompt0"


def test_eval_goes_before_train_on_a_saturated_pool(base: str) -> None:
    """`slot` has one slot: five of a's (train) calls wait for it; b's (eval) call, posted last, is next."""

    async def run() -> list[str]:
        done: list[str] = []
        async with httpx.AsyncClient(timeout=30) as client:

            async def one(key: str, name: str) -> None:
                body = sample(reward_fn="slot", extra_info={"delay_s": 0.2})
                resp = await client.post(base + "/score", json=body, headers=auth(key))
                assert resp.status_code == 200 and resp.json()["status"] == "ok", resp.text
                done.append(name)

            train = [asyncio.create_task(one(KEY_A, f"a{i}")) for i in range(5)]
            # until all five are in (one running, four waiting for the slot)
            await eventually_async(lambda: in_flight(client, base, KEY_A, 5), what="a's five calls in flight")
            await asyncio.gather(one(KEY_B, "b"), *train)
        return done

    done = asyncio.run(run())
    assert done.index("b") <= 2, done  # FIFO would answer it last


def test_self_shows_own_usage_only(base: str) -> None:
    def attempt(key: str) -> dict:  # the post and its count read within one minute's window
        post(base, key, sample(), run="run-1")
        return httpx.get(base + "/tenants/self", headers=auth(key), timeout=10).json()

    mine = same_minute(attempt, [KEY_B, KEY_B])
    assert mine["tenant"] == "b" and mine["priority"] == "eval"
    assert mine["quotas"]["requests_per_minute"] == 1000 and mine["usage"]["requests_this_minute"] >= 1
    assert "run-1" in mine["runs"]
    theirs = httpx.get(base + "/tenants/self", headers=auth(KEY_A), timeout=10).json()
    assert theirs["tenant"] == "a" and "b" not in str(theirs["runs"]) and theirs["quotas"]["usd_total"] == 2.5
    # no way to name another tenant: the route takes no argument, a query is ignored
    other = httpx.get(base + "/tenants/self?tenant=b", headers=auth(KEY_A), timeout=10).json()
    assert other["tenant"] == "a"


def test_spend_cap_is_per_tenant(base: str) -> None:
    body = sample(reward_fn="judge")
    statuses = [post(base, KEY_A, body).status_code for _ in range(4)]  # $1 a call, a's usd_total is 2.5
    assert statuses == [200, 200, 200, 429]
    refused = post(base, KEY_A, body)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    error = refused.json()["error"]
    assert error["type"] == "TenantQuotaExceeded" and error["quota"] == "usd_total" and error["tenant"] == "a"
    assert post(base, KEY_B, body).status_code == 200  # b's spend is its own
    usage = httpx.get(base + "/tenants/self", headers=auth(KEY_A), timeout=10).json()["usage"]
    assert usage["usd_total"] == pytest.approx(3.0)


def test_run_labels_are_bounded(base: str) -> None:
    bad = post(base, KEY_A, sample(), run="x" * 65)
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "x-rewardfleet-run"
    assert post(base, KEY_A, sample(), run="a b\x01").status_code in (400, 422)  # h11 may refuse first
    for run in ("r1", "r2", "r3", "r4"):  # max_run_labels: 2
        assert post(base, KEY_A, sample(), run=run).status_code in (200, 429)
    runs = httpx.get(base + "/tenants/self", headers=auth(KEY_A), timeout=10).json()["runs"]
    assert len(runs) == 2
    assert httpx.get(base + "/metrics", headers=auth(KEY_A), timeout=10).status_code == 403  # every tenant's
    metrics = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    assert 'run="other"' in metrics and 'run="r4"' not in metrics


def _tenant_series(metrics: str) -> set[str]:
    """The names and labels of every per-tenant series (not their values)."""
    return {
        line.rsplit(" ", 1)[0]
        for line in metrics.splitlines()
        if "tenant=" in line and not line.startswith("#")
    }


def test_unknown_keys_create_no_state(base: str) -> None:
    before = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    with httpx.Client(timeout=10) as client:
        for i in range(200):
            key = f"flood-key-{i:04d}-0123456789"
            resp = client.post(base + "/score", json=sample(), headers=auth(key, f"run{i}"))
            assert resp.status_code == 401
    after = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    assert "flood" not in after and 'run="run1' not in after
    assert _tenant_series(after) == _tenant_series(before)


def test_admin_needs_an_admin_tenant(base: str) -> None:
    resp = post(base, KEY_B, {}, path="/admin/reload")
    assert resp.status_code == 403 and resp.json()["error"]["type"] == "Forbidden"


def test_requests_per_minute_429_names_the_quota(tmp_path: Path) -> None:
    config = tenant_config(tmp_path)
    config["tenants"]["b"]["quotas"] = {"requests_per_minute": 3}
    config["tenants"]["c"] = {"api_keys": [KEY_C], "quotas": {"requests_per_minute": 3}}
    with gateway(tmp_path, config) as base:

        def attempt(key: str) -> tuple[list[int], httpx.Response]:
            return [post(base, key, sample()).status_code for _ in range(3)], post(base, key, sample())

        codes, refused = same_minute(attempt, [KEY_B, KEY_C])
        assert codes == [200, 200, 200] and refused.status_code == 429
        assert refused.json()["error"]["quota"] == "requests_per_minute"
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert post(base, KEY_A, sample()).status_code == 200  # a's minute is its own


def test_samples_in_flight_429_and_batch(tmp_path: Path) -> None:
    config = tenant_config(tmp_path)
    config["tenants"]["a"]["quotas"] = {"samples_in_flight": 2}
    with gateway(tmp_path, config) as base:
        too_big = post(base, KEY_A, {"samples": [sample()] * 3}, path="/score/batch")
        assert too_big.status_code == 429 and too_big.json()["error"]["quota"] == "samples_in_flight"

        async def run() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=30) as client:
                slow = sample(extra_info={"delay_s": 1.0})
                held = asyncio.create_task(
                    client.post(base + "/score/batch", json={"samples": [slow, slow]}, headers=auth(KEY_A))
                )
                # until the batch holds both samples
                await eventually_async(lambda: in_flight(client, base, KEY_A, 2), what="the batch in flight")
                over = await client.post(base + "/score", json=sample(), headers=auth(KEY_A))
                other = await client.post(base + "/score", json=sample(), headers=auth(KEY_B))
                return [await held, over, other]

        held, over, other = asyncio.run(run())
        assert held.status_code == 200 and [r["status"] for r in held.json()["results"]] == ["ok", "ok"]
        assert over.status_code == 429 and over.json()["error"]["quota"] == "samples_in_flight"
        assert other.status_code == 200
        assert post(base, KEY_A, sample()).status_code == 200  # released once the batch answered


def test_reload_moves_a_key_between_tenants(tmp_path: Path) -> None:
    config = tenant_config(tmp_path)
    with gateway(tmp_path, config) as base:
        assert post(base, KEY_B2, sample()).status_code == 401
        (tmp_path / "b.keys").write_text(f"{KEY_B}\n{KEY_B2}\n")  # a new key for b, from its keys file
        assert post(base, ADMIN, {}, path="/admin/reload").status_code == 200
        assert httpx.get(base + "/tenants/self", headers=auth(KEY_B2), timeout=10).json()["tenant"] == "b"
        # move KEY_B2 from b to a in the config file itself
        (tmp_path / "b.keys").write_text(f"{KEY_B}\n")
        config["tenants"]["a"]["api_keys"] = [KEY_A, KEY_B2]
        (tmp_path / "gw.yaml").write_text(yaml.safe_dump(config))
        resp = post(base, ADMIN, {}, path="/admin/reload")
        assert resp.status_code == 200 and resp.json()["tenants"]["tenants"] == ["a", "b", "ops"]
        assert httpx.get(base + "/tenants/self", headers=auth(KEY_B2), timeout=10).json()["tenant"] == "a"
        # a key claimed by two tenants is refused; the old table keeps serving
        (tmp_path / "b.keys").write_text(f"{KEY_B}\n{KEY_B2}\n")
        refused = post(base, ADMIN, {}, path="/admin/reload")
        assert refused.status_code == 409 and "one tenant" in refused.json()["error"]["message"]
        assert KEY_B2 not in refused.text
        assert httpx.get(base + "/tenants/self", headers=auth(KEY_B2), timeout=10).json()["tenant"] == "a"


def test_admin_sees_every_tenant_and_status_shows_them(base: str) -> None:
    from rewardfleet.services.fleet.status import tenant_rows

    assert httpx.get(base + "/admin/tenants", headers=auth(KEY_A), timeout=10).status_code == 403
    summary = httpx.get(base + "/admin/tenants", headers=auth(ADMIN), timeout=10).json()
    assert sorted(summary["tenants"]) == ["a", "b", "ops"]
    rows = {row[0]: row for row in tenant_rows(summary)}
    assert sorted(rows) == ["tenant a", "tenant b", "tenant ops"]
    assert "requests this minute" in rows["tenant b"][3] and "/1000" in rows["tenant b"][3]


def test_adapters_send_the_key_and_run_label_from_the_environment(
    base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardfleet.services.client import RewardClient
    from rewardfleet.services.integrations._common import auth_from_env

    monkeypatch.setenv("REWARDFLEET_API_KEY", ADMIN)  # b has used its 2 run labels
    monkeypatch.setenv("REWARDFLEET_RUN", "grpo-7b-lr3e-6")
    client = RewardClient(base, **auth_from_env())
    try:
        result = client.score(data_source="x", reward_fn="echo", solution_str="abc", ground_truth="")
        assert result.score == 3.0
    finally:
        client.close()
    mine = httpx.get(base + "/tenants/self", headers=auth(ADMIN), timeout=10).json()
    assert mine["tenant"] == "ops" and "grpo-7b-lr3e-6" in mine["runs"]
