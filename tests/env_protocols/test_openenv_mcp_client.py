"""OpenEnv's own `MCPToolClient` (`openenv` 0.10, production mode) against `/openenv/<env>`: it opens a
session with `openenv/session/create` over `POST /mcp`, attaches its `/ws` to it with `?session_id=`, lists
and calls tools over `/mcp`, resets and steps over the socket, and closes the session when it closes; the
session is the tenant's alone, and nothing is left open."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import httpx
import pytest
import websockets
from pydantic import Field

pytest.importorskip("openenv.core.mcp_client", reason="openenv 0.10 (.ci/setup installs it with --no-deps)")

from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.env_server.types import Action
from openenv.core.mcp_client import MCPToolClient

from tests.support.env_protocols import ENV, FLAKY, KEY_A, KEY_B, Served, auth

pytestmark = pytest.mark.timeout(120)


class VerifyAction(Action):
    """The fleet's `verify` action as an OpenEnv action model (the client sends its `model_dump`)."""

    type: Literal["verify"] = "verify"
    body: dict[str, Any] = Field(default_factory=dict)


def base(served: Served, env: str = ENV) -> str:
    return f"{served.url}/openenv/{env}"


def test_mcp_tool_client_plays_an_episode_on_one_session(served: Served) -> None:
    async def play() -> None:
        async with MCPToolClient(base_url=base(served), headers=auth()) as env:
            assert served.open_sessions("a") == 1  # session/create, with the socket attached to it
            reset = await env.reset(initial_count=2, expected_count=5)
            assert reset.done is False
            assert {t.name for t in await env.list_tools()} == {"increment_counter", "get_counter_value"}
            assert await env.call_tool("increment_counter", count=3) == {"success": True}
            assert await env.call_tool("get_counter_value") == {"count": 5}  # over /mcp, the same session
            stepped = await env.step(CallToolAction(tool_name="get_counter_value", arguments={}))
            assert stepped.observation.result["data"] == {"count": 5}  # over the socket, the same session
            first = await env.state()
            assert first.step_count == 3 and first.episode_id
            won = await env.step(VerifyAction())
            assert (won.reward, won.done) == (1.0, True)
            again = await env.reset(initial_count=7)  # the same session, started over
            assert again.done is False
            assert await env.state() == type(first)(episode_id=first.episode_id, step_count=0)
            assert served.open_sessions("a") == 1
            assert await env.call_tool("get_counter_value") == {"count": 7}
            with pytest.raises(RuntimeError, match=r"VALIDATION_ERROR"):
                await env.reset(initial_count="many")  # refused: the episode goes on as it was
            assert await env.call_tool("get_counter_value") == {"count": 7}

    asyncio.run(play())
    served.wait_closed("a")


def test_tool_failures_are_the_clients_errors_and_change_nothing(served: Served) -> None:
    async def play() -> None:
        async with MCPToolClient(base_url=base(served), headers=auth()) as env:
            await env.reset(initial_count=1)
            with pytest.raises(RuntimeError, match=r"failed: .*count"):
                await env.call_tool("increment_counter", count="many")
            with pytest.raises(RuntimeError, match=r"Tool not found: open_file"):
                await env.call_tool("open_file", path="/etc/passwd")
            assert await env.call_tool("get_counter_value") == {"count": 1}
        async with MCPToolClient(base_url=base(served, FLAKY), headers=auth()) as flaky:
            with pytest.raises(RuntimeError, match=r"Tool 'fail' failed: the tool failed on purpose"):
                await flaky.call_tool("fail")
            assert await flaky.call_tool("echo", text="still here") == "still here"

    asyncio.run(play())
    served.wait_closed("a")


def test_another_tenant_cannot_use_or_attach_to_the_session(served: Served) -> None:
    async def play() -> None:
        async with MCPToolClient(base_url=base(served), headers=auth()) as env:
            await env.reset(initial_count=4)
            session_id = env._production_session_id  # what the client sends as its session's id
            assert session_id is not None
            call = {"name": "increment_counter", "arguments": {"count": 1}, "session_id": session_id}
            async with httpx.AsyncClient(headers=auth(KEY_B)) as other:
                refused = await other.post(
                    f"{base(served)}/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
                )
            assert refused.json()["error"]["code"] == -32602
            assert "no such session" in refused.json()["error"]["message"]
            url = f"ws://127.0.0.1:{served.url.rsplit(':', 1)[1]}/openenv/{ENV}/ws?session_id={session_id}"
            async with websockets.connect(url, additional_headers=auth(KEY_B)) as ws:
                assert '"SESSION_ERROR"' in await ws.recv()
            assert await env.call_tool("get_counter_value") == {"count": 4}

    asyncio.run(play())
    served.wait_closed("a")
    served.wait_closed("b")


def test_a_call_without_a_session_leaves_none_and_bad_requests_name_the_field(served: Served) -> None:
    async def play() -> None:
        async with httpx.AsyncClient(headers=auth()) as client:
            url = f"{base(served)}/mcp"
            call = {"name": "get_counter_value", "arguments": {}}
            answer = await client.post(
                url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}
            )
            assert answer.json() == {
                "jsonrpc": "2.0",
                "id": 7,
                "result": {
                    "content": [{"type": "text", "text": '{"count": 0}'}],
                    "structured_content": {"count": 0},
                    "data": {"count": 0},
                    "is_error": False,
                },
            }
            bad = await client.post(url, json={"jsonrpc": "2.0", "id": 8, "method": 5})
            assert bad.status_code == 400 and "method" in bad.json()["error"]["message"]
            unknown = await client.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "resources/list"})
            assert unknown.json()["error"]["code"] == -32601
            gone = {"session_id": "x" * 43}
            closed = await client.post(
                url, json={"jsonrpc": "2.0", "id": 10, "method": "openenv/session/close", "params": gone}
            )
            assert closed.json()["error"]["code"] == -32602

    asyncio.run(play())
    assert served.open_sessions("a") == 0
    assert KEY_A  # the sessions above were tenant a's
