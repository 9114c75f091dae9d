"""The `mcp` SDK's own client (2.x, streamable HTTP) lists and calls the counter environment's tools at
`/mcp/<env>`, in the handshake era (`mode="legacy"`) and the 2026 per-request era (`mode="auto"` picks it)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest

pytest.importorskip("mcp.client.streamable_http", reason="the mcp SDK (the environments extra)")

from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.support.env_protocols import ENV, FLAKY, KEY_A, KEY_B, Served, auth

pytestmark = pytest.mark.timeout(120)
SESSION = "X-Environment-Session"


def client(served: Served, mode: str, key: str = KEY_A, token: str | None = None, env: str = ENV) -> Client:
    headers = {**auth(key), **({SESSION: token} if token else {})}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(f"{served.url}/mcp/{env}", http_client=http), mode=mode)


async def seeded(served: Served, mode: str, key: str = KEY_A, env: str = ENV, **task: Any) -> str:
    async with client(served, mode, key, env=env) as mcp:
        names = [t.name for t in (await mcp.list_tools()).tools]
        assert "seed" in names
        opened = await mcp.call_tool("seed", task)
        assert not opened.is_error, opened
        token: str = opened.structured_content["session"]
        return token


def await_close(served: Served, token: str) -> None:
    served.run(served.sessions.close("a", token))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_tools_are_listed_and_called_on_the_session(served: Served, mode: str) -> None:
    async def play() -> None:
        token = await seeded(served, mode, initial_count=1)
        async with client(served, mode, token=token) as mcp:
            assert (mcp.protocol_version in MODERN_PROTOCOL_VERSIONS) == (mode == "auto")
            tools = {t.name: t for t in (await mcp.list_tools()).tools}
            assert set(tools) == {"increment_counter", "get_counter_value"}  # no seed: a session is set
            spec = {s.name: s for s in served.sessions.tools(ENV)}["increment_counter"]
            assert tools["increment_counter"].description == spec.description
            assert tools["increment_counter"].input_schema == spec.input_schema
            done = await mcp.call_tool("increment_counter", {"count": 2})
            assert not done.is_error and done.structured_content == {"success": True}
            read = await mcp.call_tool("get_counter_value", {})
            assert read.structured_content == {"count": 3}
            # arguments the schema refuses: a tool result naming the field; the counter is as it was
            bad = await mcp.call_tool("increment_counter", {"count": "two", "extra": 1})
            assert bad.is_error and "count" in bad.content[0].text and "extra" in bad.content[0].text
            assert (await mcp.call_tool("get_counter_value", {})).structured_content == {"count": 3}
            with pytest.raises(MCPError, match="no tool 'jump'"):
                await mcp.call_tool("jump", {})
        flaky = await seeded(served, mode, env=FLAKY)
        async with client(served, mode, token=flaky, env=FLAKY) as mcp:
            # the tool's own failure: a tool result the agent reads, not a transport error
            failed = await mcp.call_tool("fail", {})
            assert failed.is_error and failed.content[0].text == "the tool failed on purpose"
            assert (await mcp.call_tool("echo", {"text": "ok"})).content[0].text == "ok"
        for opened in (token, flaky):
            await_close(served, opened)

    asyncio.run(play())


def test_a_call_without_a_session_says_how_to_get_one(served: Served) -> None:
    async def call() -> None:
        async with client(served, "auto") as mcp:
            with pytest.raises(MCPError, match=r"(?i)x-environment-session"):
                await mcp.call_tool("get_counter_value", {})
            bad_task = await mcp.call_tool("seed", {"initial_count": "lots"})
            assert bad_task.is_error and "initial_count" in bad_task.content[0].text

    asyncio.run(call())


def test_another_tenants_token_is_an_unknown_session(served: Served) -> None:
    async def steal() -> None:
        token = await seeded(served, "auto", KEY_A, initial_count=7)
        for key, presented in [(KEY_B, token), (KEY_A, "not-a-token")]:
            async with client(served, "auto", key, token=presented) as mcp:
                with pytest.raises(MCPError, match="no such session") as caught:
                    await mcp.call_tool("get_counter_value", {})
            assert ENV not in str(caught.value)  # nothing about the session leaks
        async with client(served, "auto", KEY_A, token=token) as mcp:
            assert (await mcp.call_tool("get_counter_value", {})).structured_content == {"count": 7}
        await_close(served, token)

    asyncio.run(steal())


def test_mcp_needs_the_key_and_a_served_environment(served: Served) -> None:
    with httpx2.Client(timeout=30) as http:
        assert http.post(f"{served.url}/mcp/{ENV}", json={}).status_code == 401
        missing = http.post(f"{served.url}/mcp/no_such_env", json={}, headers=auth())
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "UnknownEnvironment"
