"""NeMo Gym's optional MCP exposure (routes/nemo_gym_mcp.py), driven by the `mcp` SDK's own client over a
real uvicorn: `seed_session` answers NeMo Gym's `mcp` metadata, and the session's tools are listed and
called at `/mcp` on the server's own port (and `<prefix>/<server>/mcp` on the gateway's) with the
`X-NeMo-Gym-Session-Token` header; the token is tenant-bound and cannot be forged."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp.client.streamable_http", reason="the mcp SDK (the environments extra)")

import httpx2
import uvicorn
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from bench.harness.processes import free_port
from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from tests.support.env_protocols import ENV, KEY_A, KEY_B, auth

pytestmark = pytest.mark.timeout(120)
HEADER = "X-NeMo-Gym-Session-Token"
COOKIE = "rewardfleet_session_counter"


@pytest.fixture(scope="module")
def urls() -> Iterator[tuple[str, str]]:
    """(the gateway's URL, the counter server's own port's URL)."""
    gym_port = free_port()
    config = GatewayConfig.model_validate(
        {
            "builtin_package": None,
            "workers": 1,
            "tenants": {"a": {"api_keys": [KEY_A]}, "b": {"api_keys": [KEY_B]}},
            "nemo_gym": {
                "servers": {
                    "counter": {"environment": ENV, "expose_tools_over_mcp": True, "port": gym_port},
                    "plain": {"environment": ENV},
                }
            },
        }
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), host="127.0.0.1", port=port, log_level="warning")
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{gym_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        loop.close()


def seed(base: str, key: str = KEY_A, **task: Any) -> dict[str, Any]:
    answer = httpx.post(f"{base}/seed_session", json=task, headers=auth(key), timeout=30)
    answer.raise_for_status()
    body: dict[str, Any] = answer.json()
    assert answer.cookies[COOKIE] == body["mcp"]["headers"][HEADER]
    return body


def client(url: str, mode: str, key: str = KEY_A, token: str | None = None) -> Client:
    headers = {**auth(key), **({HEADER: token} if token is not None else {})}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_seeded_session_is_played_over_mcp_then_verified(urls: tuple[str, str], mode: str) -> None:
    _, gym = urls
    metadata = seed(gym, initial_count=1)["mcp"]
    assert metadata["server_name"] == "counter"
    assert metadata["url_path"] == "/mcp" and metadata["transport"] == "http"
    assert set(metadata["headers"]) == {HEADER}
    token = metadata["headers"][HEADER]

    async def play() -> None:
        async with client(gym + metadata["url_path"], mode, token=token) as mcp:
            tools = {t.name for t in (await mcp.list_tools()).tools}
            assert tools == {
                "increment_counter",
                "get_counter_value",
            }  # no seed: sessions come from seed_session
            done = await mcp.call_tool("increment_counter", {"count": 2})
            assert not done.is_error and done.structured_content == {"success": True}
            bad = await mcp.call_tool("increment_counter", {"count": "two"})
            assert bad.is_error and "count" in bad.content[0].text
            assert (await mcp.call_tool("get_counter_value", {})).structured_content == {"count": 3}

    asyncio.run(play())
    # the same session, by its cookie, over NeMo Gym's HTTP routes
    verified = httpx.post(
        f"{gym}/verify",
        json={"expected_count": 3},
        headers={**auth(KEY_A), "cookie": f"{COOKIE}={token}"},
        timeout=30,
    )
    assert verified.status_code == 200 and verified.json()["reward"] == 1.0


def test_the_gateways_own_port_serves_it_under_the_prefix(urls: tuple[str, str]) -> None:
    main, gym = urls
    token = seed(gym)["mcp"]["headers"][HEADER]

    async def play() -> None:
        async with client(f"{main}/nemo_gym/counter/mcp", "legacy", token=token) as mcp:
            await mcp.call_tool("increment_counter", {"count": 5})
            assert (await mcp.call_tool("get_counter_value", {})).structured_content == {"count": 5}

    asyncio.run(play())


def test_another_tenant_or_a_forged_token_is_an_unknown_session(urls: tuple[str, str]) -> None:
    _, gym = urls
    token = seed(gym, initial_count=7)["mcp"]["headers"][HEADER]
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")

    async def refused(key: str, sent: str | None) -> str:
        async with client(f"{gym}/mcp", "legacy", key=key, token=sent) as mcp:
            with pytest.raises(MCPError) as caught:
                await mcp.call_tool("increment_counter", {"count": 1})
            return str(caught.value)

    other = asyncio.run(refused(KEY_B, token))
    fake = asyncio.run(refused(KEY_A, forged))
    assert other == fake and "session" in other.lower()
    assert "header" in asyncio.run(refused(KEY_A, None))  # no token: says which header to send

    async def read() -> Any:
        async with client(f"{gym}/mcp", "legacy", token=token) as mcp:
            return (await mcp.call_tool("get_counter_value", {})).structured_content

    assert asyncio.run(read()) == {"count": 7}  # nothing of the refused calls reached the session


def test_a_server_without_the_option_serves_no_mcp(urls: tuple[str, str]) -> None:
    main, _ = urls
    seeded = httpx.post(f"{main}/nemo_gym/plain/seed_session", json={}, headers=auth(), timeout=30)
    assert seeded.status_code == 200 and seeded.json() == {}
    refused = httpx.post(f"{main}/nemo_gym/plain/mcp", json={}, headers=auth(), timeout=30)
    assert refused.status_code == 404 and "expose_tools_over_mcp" in refused.text
    assert httpx.post(f"{main}/nemo_gym/counter/mcp", json={}, timeout=30).status_code == 401  # no key
