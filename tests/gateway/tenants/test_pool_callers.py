"""External-pool calls name their caller: a `score_model` grader run by `/graders/run` is charged to the
calling tenant (its addresses are read per call, not built once per catalog), a forwarded call is counted
under the caller's run label, and `/admin/tenants` (so `rewardfleet status`) shows the tenant's external
spend and fair-queue waits. Over a real gateway (uvicorn) and the OpenAI stand-in."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.tenants import ADMIN, KEY_A, KEY_B, auth
from tests.gateway.tenants.helpers import gateway
from tests.gateway.tenants.test_external_spend import STANDIN_KEY, config, cost, sample, standin, usd_total

__all__ = ["standin"]  # the stand-in fixture, shared with test_external_spend

GRADER = {"type": "score_model", "pool": "hosted", "input": "{{ sample.output_text }}",
          "reference": "{{ item.ground_truth }}", "user_template": "Is {response} right? Say 7.",
          "timeout_s": 30}  # fmt: skip


@pytest.fixture
def base(standin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("TENANT_STANDIN_KEY", STANDIN_KEY)
    with gateway(tmp_path, config(standin)) as url:
        yield url


def pool_calls(base: str) -> dict[tuple[str, str], float]:
    text = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    found = re.findall(
        r'^rewardfleet_tenant_pool_calls_total\{run="([^"]*)",tenant="([^"]*)"\} (\S+)$', text, re.M
    )
    return {(tenant, run): float(n) for run, tenant, n in found}


def grade(base: str, key: str, run: str | None = None) -> dict[str, Any]:
    body = {"grader": GRADER, "sample": sample(0)}
    resp = httpx.post(base + "/graders/run", json=body, headers=auth(key, run), timeout=60)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def test_an_inline_score_model_grader_is_charged_to_its_caller(base: str) -> None:
    out = grade(base, KEY_B)
    assert out["status"] == "ok", out
    spent = cost(out)
    assert spent > 0 and usd_total(base, KEY_B) == pytest.approx(spent, abs=1e-9)
    assert usd_total(base, KEY_A) == 0.0
    assert pool_calls(base) == {("b", "default"): 1.0}
    # a's own grader calls are a's: they stop at a's dollar cap (a typed error, not a silent score)
    outs = [grade(base, KEY_A) for _ in range(8)]
    ok = [o for o in outs if o["status"] == "ok"]
    refused = [o for o in outs if o["status"] != "ok"]
    assert ok and refused, outs
    assert usd_total(base, KEY_A) == pytest.approx(sum(cost(o) for o in ok), abs=1e-9)
    assert all("HTTP 402" in o["error"]["message"] and "usd_total" in o["error"]["message"] for o in refused)
    assert re.search(r"/pools/(?!<token>/)", str(refused)) is None  # no token shown
    assert usd_total(base, KEY_B) == pytest.approx(spent, abs=1e-9)  # b untouched by a's calls


def test_a_forwarded_call_is_counted_under_the_callers_run(base: str) -> None:
    scored = httpx.post(base + "/score", json=sample(1), headers=auth(KEY_B, "exp-7"), timeout=60).json()
    assert scored["status"] == "ok", scored
    assert grade(base, KEY_B, "exp.8:b")["status"] == "ok"  # a run label with '.' (the token's separator)
    assert grade(base, KEY_A)["status"] == "ok"
    assert pool_calls(base) == {("b", "exp-7"): 1.0, ("b", "exp.8:b"): 1.0, ("a", "default"): 1.0}


def test_a_forwarded_segment_with_an_empty_run_is_refused(base: str) -> None:
    """`<token>.` names no run: not a tenant's segment, so the route's usual 404 (and nothing counted)."""
    resp = httpx.post(base + "/pools/not-a-token./hosted/named/v1/chat/completions", json={}, timeout=10)
    assert resp.status_code == 404
    assert pool_calls(base) == {}


def test_admin_tenants_shows_external_spend_and_fair_queue_waits(base: str) -> None:
    from rewardfleet.services.fleet.status import tenant_rows

    assert grade(base, KEY_B)["status"] == "ok"
    scored = httpx.post(base + "/score", json=sample(2), headers=auth(KEY_B), timeout=60).json()
    assert scored["status"] == "ok", scored
    summary = httpx.get(base + "/admin/tenants", headers=auth(ADMIN), timeout=10).json()
    b, a = summary["tenants"]["b"], summary["tenants"]["a"]
    assert b["usage"]["usd_total"] > 0
    assert b["usage"]["usd_total"] == pytest.approx(usd_total(base, KEY_B), abs=1e-9)
    queues = b["fair_queues"]["queues"]
    assert queues["pool:hosted"]["waits"] == 2  # the grader's call and the function's, at the pool's budget
    assert queues["named"]["waits"] == 1  # the function's gate (max_concurrency 1)
    assert b["fair_queues"]["waiting_now"] == 0
    assert a["fair_queues"] == {"waiting_now": 0, "queues": {}} and a["usage"]["usd_total"] == 0.0
    rows = {row[0]: row for row in tenant_rows(summary)}
    assert "fair queues 0 waiting, 3 waits" in rows["tenant b"][3]
    assert "fair queues" not in rows["tenant a"][3]
    own = httpx.get(base + "/tenants/self", headers=auth(KEY_A), timeout=10).json()
    assert own["fair_queues"] == {"waiting_now": 0, "queues": {}}  # a's own view: nothing of b's
