"""A key in the URL path (`/k/<key>/...`) for trainers whose clients send no header, over a real gateway:
OpenRLHF 0.11.2's own remote-reward client and slime's `remote_rm` request (aiohttp, `json=` only, as its
source posts it) authenticate as a tenant; a bad key is the same 401 as a bad header; a flood of unknown keys
creates no state; the key is in no log line, metric or error of the gateway."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tenants import ADMIN, KEY_A, KEY_B, auth
from tests.gateway.tenants.helpers import gateway, sample, tenant_config
from tests.integrations.openrlhf_source import import_agent_module


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A tenant gateway with uvicorn's access log on (off by default), to see what it writes."""
    tmp = tmp_path_factory.mktemp("path-key")
    path = tmp / "pk.yaml"
    path.write_text(yaml.safe_dump(tenant_config(tmp)))
    port = free_port()
    args = ["gateway", "--config", str(path), "--port", str(port), "--workers", "1", "--access-log"]
    proc = ChildProcess(rewardfleet_cmd(*args), tmp / "pk.log")
    try:
        base = f"http://127.0.0.1:{port}"
        proc.wait_http(base + "/health", timeout_s=120)
        yield base, tmp / "pk.log"
    finally:
        proc.stop()


def requests_of(base: str, tenant: str) -> float:
    """`rewardfleet_tenant_requests_total` of the tenant (run "default")."""
    metrics = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    found = re.search(
        rf'^rewardfleet_tenant_requests_total{{run="default",tenant="{tenant}"}} (\S+)$', metrics, re.M
    )
    return float(found.group(1)) if found else 0.0


def test_openrlhf_client_authenticates_by_path(served: tuple[str, Path]) -> None:
    base, _ = served
    before = requests_of(base, "a")
    executor = import_agent_module().SingleTurnAgentExecutor(remote_rm_url=f"{base}/k/{KEY_A}/openrlhf/echo")
    answers = asyncio.run(executor._fetch_rewards_via_http(["Q: 1+1? A: 22"], ["Q: 1+1? A: "], ["2"]))
    assert answers[0]["rewards"] == [2.0], answers  # "22": the response, scored by length
    assert requests_of(base, "a") == before + 1  # served as tenant a


def test_slime_remote_rm_request_authenticates_by_path(served: tuple[str, Path]) -> None:
    """slime/rollout/rm_hub/__init__.py `remote_rm`: `session.post(args.rm_url, json=payload)`, no headers."""
    base, _ = served

    async def remote_rm(url: str) -> dict[str, Any]:
        async with aiohttp.ClientSession() as session:
            payload = {"prompt": "Q?", "response": "abc", "label": "x"}
            async with session.post(url, json=payload) as resp:
                resp.raise_for_status()
                answer: dict[str, Any] = await resp.json()
                return answer

    answer = asyncio.run(remote_rm(f"{base}/k/{KEY_B}/slime/echo?data_source=x"))
    assert answer["score"] == 3.0 and answer["status"] == "ok"
    with pytest.raises(aiohttp.ClientResponseError) as refused:
        asyncio.run(remote_rm(f"{base}/slime/echo"))
    assert refused.value.status == 401


@pytest.mark.parametrize(
    "path",
    [
        "/k/not-a-tenant-key-0123456789/score",
        "/k//score",
        "/k/no-slash-after-the-key",
        f"/k/{'x' * 600}/score",
        "/k/%00bad/score",
        f"/k/{KEY_A[:5]}%2F{KEY_A[5:]}/score",
    ],
)
def test_bad_path_keys_are_the_usual_401(served: tuple[str, Path], path: str) -> None:
    base, _ = served
    by_header = httpx.post(base + "/score", json=sample(), headers=auth("not-a-tenant-key-0123456789"))
    resp = httpx.post(base + path, json=sample(), timeout=10)
    assert resp.status_code == 401 and resp.json() == by_header.json()
    assert resp.headers["www-authenticate"] == by_header.headers["www-authenticate"]


def test_path_key_wins_over_a_header(served: tuple[str, Path]) -> None:
    base, _ = served
    before_a, before_b = requests_of(base, "a"), requests_of(base, "b")
    resp = httpx.post(f"{base}/k/{KEY_A}/score", json=sample(), headers=auth(KEY_B), timeout=10)
    assert resp.status_code == 200
    assert requests_of(base, "a") == before_a + 1 and requests_of(base, "b") == before_b


def test_unknown_path_keys_create_no_state_and_no_key_is_logged(served: tuple[str, Path]) -> None:
    base, log = served
    before = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    with httpx.Client(timeout=10) as client:
        for i in range(200):
            assert (
                client.post(f"{base}/k/flood-key-{i:04d}-0123456789/score", json=sample()).status_code == 401
            )
        assert client.post(f"{base}/k/{KEY_A}/no-such-route", json={}).status_code == 404
    after = httpx.get(base + "/metrics", headers=auth(ADMIN), timeout=10).text
    assert "flood-key" not in after and KEY_A not in after
    series = re.compile(r'^rewardfleet_tenant_\w+\{[^}]*tenant="[^"]*"', re.M)
    assert set(series.findall(after)) == set(series.findall(before))
    text = log.read_text()
    assert '"POST /score HTTP/1.1" 401' in text  # the access log shows the paths, without their keys
    assert '"POST /no-such-route HTTP/1.1" 404' in text
    assert "flood-key" not in text and KEY_A not in text and KEY_B not in text


def test_api_keys_without_tenants(tmp_path: Path) -> None:
    key = "plain-api-key-0123456789"
    config = {
        "builtin_package": None,
        "reward_fns_dirs": [str(Path(__file__).parent / "fns")],
        "api_keys": [key],
    }
    with gateway(tmp_path, config, name="plain") as base:
        assert httpx.post(f"{base}/k/{key}/score", json=sample(), timeout=10).status_code == 200
        assert httpx.post(f"{base}/k/{key}x/score", json=sample(), timeout=10).status_code == 401
        assert httpx.post(f"{base}/score", json=sample(), timeout=10).status_code == 401


def test_a_percent_encoded_key_is_the_same_key(served: tuple[str, Path]) -> None:
    base, _ = served
    encoded = "%" + format(ord(KEY_A[0]), "02X") + KEY_A[1:]
    assert httpx.post(f"{base}/k/{encoded}/score", json=sample(), timeout=10).status_code == 200
