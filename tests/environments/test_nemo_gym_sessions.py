"""NeMo Gym's protocol for an environment over real uvicorn, driven as NeMo Gym's own agent drives it: aiohttp
with no cookie jar, each answer's cookies sent with the next call (`responses_api_agents/simple_agent`).

NeMo Gym's recorded counter rollouts replay to the same tool outputs and the same rewards, at the server's own
port root (where NeMo Gym's server client calls it) and under the gateway's prefix; hostile tool arguments get
a 4xx naming the field and change nothing; the session cookie cannot be guessed or forged; the Python
client's sessions (sync and async) over `/sessions/*`; an expired session is freed and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import httpx
import pytest

from bench.harness.processes import free_port
from bench.harness.waiting import eventually
from rewardfleet.services.client import AsyncRewardClient, RewardClient, SessionNotFound, ToolCallError
from tests.environments.gateways import gateway, metric
from tests.environments.recorded import counter_rollouts

COUNTER = "example_session_state_mgmt"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(the gateway's URL, the counter server's own port root)."""
    port = free_port()
    config = {
        "body": {"max_body_bytes": 256 * 1024},
        "nemo_gym": {"servers": {"counter": {"environment": COUNTER, "port": port}}},
    }
    with gateway(tmp_path_factory.mktemp("nemo_gym_sessions"), config) as url:
        yield url, f"http://127.0.0.1:{port}"


def agent() -> aiohttp.ClientSession:
    """An HTTP client as NeMo Gym's server client makes it: cookies only where the caller passes them."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())


async def replay(
    http: aiohttp.ClientSession, base: str, row: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Seed from the row, send each recorded function_call in order, then verify; returns ([(ours, recorded)
    per tool call], the verify answer)."""
    run_body = {k: v for k, v in row.items() if k not in ("response", "reward")}
    async with http.post(f"{base}/seed_session", json=run_body) as resp:
        assert resp.status == 200, await resp.text()
        cookies = resp.cookies
    output = row["response"]["output"]
    recorded = {o["call_id"]: o["output"] for o in output if o["type"] == "function_call_output"}
    pairs = []
    for item in (o for o in output if o["type"] == "function_call"):
        async with http.post(
            f"{base}/{item['name']}", json=json.loads(item["arguments"]), cookies=cookies
        ) as resp:
            pairs.append((json.loads(await resp.text()), json.loads(recorded[item["call_id"]])))
            cookies = resp.cookies
    async with http.post(
        f"{base}/verify", json={**run_body, "response": row["response"]}, cookies=cookies
    ) as resp:
        assert resp.status == 200, await resp.text()
        return pairs, await resp.json()


@pytest.mark.parametrize("where", ["port_root", "prefix"])
async def test_recorded_counter_rollouts_replay_to_the_same_outputs_and_rewards(
    gw: tuple[str, str], where: str
) -> None:
    url, root = gw
    base = root if where == "port_root" else f"{url}/nemo_gym/counter"
    rows = counter_rollouts()
    equal = 0
    async with agent() as http:
        answers = []
        for row in rows:
            pairs, answer = await replay(http, base, row)
            assert pairs and all(ours == theirs for ours, theirs in pairs), pairs
            assert answer["reward"] == row["reward"] and answer["expected_count"] == row["expected_count"]
            equal += 1
            answers.append(answer)
        async with http.post(f"{base}/aggregate_metrics", json={"verify_responses": answers}) as resp:
            assert resp.status == 200
            assert (await resp.json())["agent_metrics"]["mean/reward"] == 1.0
    assert equal == len(rows) == 5


async def test_a_session_needs_its_own_unforgeable_cookie(gw: tuple[str, str]) -> None:
    _, root = gw
    async with agent() as http:
        async with http.post(f"{root}/seed_session", json={"initial_count": 3}) as resp:
            cookies = resp.cookies
        ((name, morsel),) = cookies.items()
        assert len(morsel.value) == 43 and morsel["httponly"] and morsel["samesite"].lower() == "strict"
        forged = {name: morsel.value[:-1] + ("A" if morsel.value[-1] != "A" else "B")}
        for sent in ({}, forged, {name: "session_id=1"}):
            async with http.post(f"{root}/get_counter_value", json={}, cookies=sent) as resp:
                assert resp.status == 404 and (await resp.json())["error"]["type"] == "SessionNotFound"
        async with http.post(f"{root}/verify", json={"expected_count": 3}, cookies=cookies) as resp:
            assert (await resp.json())["reward"] == 1.0
        async with http.post(f"{root}/no_such_tool", json={}, cookies=cookies) as resp:
            assert resp.status == 404 and "increment_counter" in (await resp.json())["error"]["message"]


def _deep(depth: int) -> str:
    return '{"count": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ('{"count": "thirteen"}', 422, "count"),
        ('{"count": null}', 422, "count"),
        ('{"count": 1.5}', 422, "count"),
        ('{"count": {"$gt": 1}}', 422, "count"),
        ('{"count": 1, "admin": true}', 422, "admin"),
        ("{}", 422, "count"),
        ('{"count": "' + "9" * 200_000 + '"}', 422, "count"),
        ('{"count": ' + "9" * 5000 + "}", 422, "body"),  # pydantic-core's JSON parser refuses it
        ("[1, 2]", 422, "body"),
        ("not json", 422, "body"),
        (_deep(20_000), 422, "body"),
        ('{"count": "' + "x" * 400_000 + '"}', 413, None),
    ],
    ids=[
        "word",
        "null",
        "float",
        "object",
        "extra",
        "missing",
        "huge_str",
        "huge_int",
        "list",
        "bad",
        "deep",
        "big",
    ],
)
async def test_hostile_tool_arguments_get_a_4xx_naming_the_field_and_change_nothing(
    gw: tuple[str, str], body: str, status: int, field: str | None
) -> None:
    _, root = gw
    async with agent() as http:
        async with http.post(f"{root}/seed_session", json={"initial_count": 5}) as resp:
            cookies = resp.cookies
        headers = {"content-type": "application/json"}
        async with http.post(
            f"{root}/increment_counter", data=body, cookies=cookies, headers=headers
        ) as resp:
            assert resp.status == status, await resp.text()
            answer = await resp.json()
            if field is not None:
                locs = [f["loc"] for f in answer["error"]["fields"]]
                assert any(field in loc for loc in locs), locs
                cookies = resp.cookies  # a refusal keeps the session for the agent's next call
        async with http.post(f"{root}/get_counter_value", json={}, cookies=cookies) as resp:
            assert resp.status == 200 and await resp.json() == {"count": 5}


def test_the_python_client_session(gw: tuple[str, str]) -> None:
    url, _ = gw
    with RewardClient(url) as client:
        listed = {env["name"]: env for env in client.environments()}
        assert {t["name"] for t in listed[COUNTER]["tools"]} == {"increment_counter", "get_counter_value"}
        with client.session(COUNTER, initial_count=3) as s:
            assert s.call("increment_counter", count=4) == {"success": True}
            assert s.call("get_counter_value") == {"count": 7}
            assert s.verify(expected_count=7).reward == 1.0
            assert s.verify({"expected_count": 8}).reward == 0.0
            assert s.state()["tool_calls"] == 2
            token = s._async._token
        assert httpx.post(f"{url}/sessions/state", json={"token": token}, timeout=10).status_code == 404
        with client.session("probe", {"start": 1}) as p:
            with pytest.raises(ToolCallError, match="the tool says no"):
                p.call("fail")
            assert p.call("add", n=1)["value"] == 2  # the session goes on after its tool's failure


async def test_the_async_client_session(gw: tuple[str, str]) -> None:
    url, _ = gw
    async with AsyncRewardClient(url) as client:
        async with client.session("probe", {"start": 10}) as s:
            assert (await s.call("add", n=5))["value"] == 15
            assert (await s.verify(expected=15)).reward_components == {"value": 15.0}
            token = s._token
        with pytest.raises(SessionNotFound):  # closed on leaving the block
            await client._request("POST", "/sessions/state", {"token": token}, None)


def test_an_expired_session_is_freed_and_counted(gw: tuple[str, str]) -> None:
    url, _ = gw
    before = metric(
        url, "rewardfleet_environment_sessions_expired_total", environment="ephemeral", tenant="none"
    )
    opened = httpx.post(f"{url}/sessions/open", json={"env": "ephemeral", "task": {}}, timeout=10).json()
    assert metric(url, "rewardfleet_environment_sessions_open", environment="ephemeral", tenant="none") == 1

    def gone() -> bool:
        answer = httpx.post(f"{url}/sessions/state", json={"token": opened["token"]}, timeout=10)
        assert answer.status_code == 404
        labels = {"environment": "ephemeral", "tenant": "none"}
        assert metric(url, "rewardfleet_environment_sessions_expired_total", **labels) == before + 1
        assert metric(url, "rewardfleet_environment_sessions_open", **labels) == 0
        return True

    eventually(
        gone, timeout_s=20, interval_s=0.1, what="the ephemeral session reaped", retry_on=(AssertionError,)
    )
