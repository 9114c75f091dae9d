"""OpenEnv's own client (`openenv` 0.10's `GenericEnvClient`, with its `CallToolAction` models) drives the
counter environment over `/openenv/<env>/ws`: reset seeds the session, tool calls are `call_tool` actions,
`verify` ends the episode with the reward, and the session is gone once the socket is."""

from __future__ import annotations

import asyncio

import pytest
import websockets

pytest.importorskip("openenv.core.env_client", reason="openenv 0.10 (.ci/setup installs it with --no-deps)")

from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation, ListToolsAction, Tool
from openenv.core.generic_client import GenericEnvClient

from tests.support.env_protocols import ENV, FLAKY, KEY_A, KEY_B, KEY_C, Served, auth

pytestmark = pytest.mark.timeout(120)


def base(served: Served, env: str = ENV) -> str:
    return f"{served.url}/openenv/{env}"


def test_generic_client_plays_an_episode_to_its_reward(served: Served) -> None:
    with GenericEnvClient(base_url=base(served), headers=auth()).sync() as env:
        reset = env.reset(initial_count=2, expected_count=5)
        assert reset.done is False and reset.reward is None
        assert {t["name"] for t in reset.observation["tools"]} == {"increment_counter", "get_counter_value"}
        assert served.open_sessions("a") == 1
        step = env.step({"type": "call_tool", "tool_name": "increment_counter", "arguments": {"count": 3}})
        assert step.observation["result"]["data"] == {"success": True} and step.observation["error"] is None
        read = env.step(CallToolAction(tool_name="get_counter_value"))
        assert read.observation["result"]["data"] == {"count": 5}
        state = env.state()
        assert state["step_count"] == 2 and state["state"] == {"count": 5}
        assert state["episode_id"] == reset.observation["episode_id"]
        # verify's body is the reset task (expected_count=5) with the action's body over it
        won = env.step({"type": "verify"})
        assert (won.reward, won.done) == (1.0, True)
        lost = env.step({"type": "verify", "body": {"expected_count": 4}})
        assert (lost.reward, lost.done) == (0.0, True)
    served.wait_closed("a")


def test_reset_starts_a_new_session_and_frees_the_old(served: Served) -> None:
    with GenericEnvClient(base_url=base(served), headers=auth()).sync() as env:
        first = env.reset(initial_count=1)
        env.step({"type": "call_tool", "tool_name": "increment_counter", "arguments": {"count": 1}})
        second = env.reset()
        assert second.observation["episode_id"] != first.observation["episode_id"]
        assert served.open_sessions("a") == 1
        read = env.step({"type": "call_tool", "tool_name": "get_counter_value", "arguments": {}})
        assert read.observation["result"]["data"] == {"count": 0}
    served.wait_closed("a")


def test_async_client_with_openenv_action_models_sees_tool_errors(served: Served) -> None:
    async def play() -> None:
        async with GenericEnvClient(base_url=base(served), headers=auth()) as env:
            await env.reset(initial_count=10)
            listed = await env.step(ListToolsAction())
            by_name = {t["name"]: Tool(**t) for t in listed.observation["tools"]}
            assert by_name["increment_counter"].input_schema["properties"]["count"]["type"] == "integer"
            assert by_name["increment_counter"].description == "Adds count to the session's counter."
            done = await env.step(CallToolAction(tool_name="increment_counter", arguments={"count": 5}))
            assert CallToolObservation(**done.observation).result["data"] == {"success": True}
            read = await env.step(CallToolAction(tool_name="get_counter_value"))
            assert CallToolObservation(**read.observation).result["structured_content"] == {"count": 15}
            unknown = CallToolObservation(**(await env.step(CallToolAction(tool_name="nope"))).observation)
            assert unknown.error is not None and unknown.error.error_type.value == "tool_not_found"
        async with GenericEnvClient(base_url=base(served, FLAKY), headers=auth()) as env:
            await env.reset()
            # the tool's own error (ToolError): error execution_error, as OpenEnv's MCP environments report it
            failed = CallToolObservation(**(await env.step(CallToolAction(tool_name="fail"))).observation)
            assert failed.error is not None and failed.error.error_type.value == "execution_error"
            assert failed.error.message == "the tool failed on purpose"
            echo = await env.step(CallToolAction(tool_name="echo", arguments={"text": "hi"}))
            assert CallToolObservation(**echo.observation).result["data"] == "hi"
            assert (await env.state())["state"] == {"echoes": 1}  # the failed call saved nothing

    asyncio.run(play())
    served.wait_closed("a")


def test_hostile_arguments_name_the_field_and_leave_the_session_as_it_was(served: Served) -> None:
    with GenericEnvClient(base_url=base(served), headers=auth()).sync() as env:
        env.reset(initial_count=3)
        for arguments, field in [
            ({"count": "three"}, "count"),
            ({"count": 1, "extra": "x" * 10_000}, "extra"),
            ({}, "count"),
            ({"count": [[[[1]]]]}, "count"),
        ]:
            step = env.step({"type": "call_tool", "tool_name": "increment_counter", "arguments": arguments})
            error = step.observation["error"]
            assert error["error_type"] == "invalid_args" and field in error["message"], error
        read = env.step({"type": "call_tool", "tool_name": "get_counter_value", "arguments": {}})
        assert read.observation["result"]["data"] == {"count": 3}
        with pytest.raises(RuntimeError, match=r"VALIDATION_ERROR"):
            env.step({"type": "call_tool", "tool_name": 7})
        with pytest.raises(RuntimeError, match=r"VALIDATION_ERROR"):
            env.reset(initial_count="many")
    served.wait_closed("a")


def test_a_dropped_socket_frees_its_session(served: Served) -> None:
    async def drop() -> None:
        ws = await websockets.connect(
            f"ws://127.0.0.1:{served.url.rsplit(':', 1)[1]}/openenv/{ENV}/ws", additional_headers=auth(KEY_B)
        )
        await ws.send('{"type": "reset", "data": {"initial_count": 1}}')
        assert '"observation"' in await ws.recv()
        assert served.open_sessions("b") == 1
        ws.transport.abort()  # no close frame: the connection just ends

    asyncio.run(drop())
    served.wait_closed("b")


def test_malformed_frames_are_errors_and_the_connection_stays(served: Served) -> None:
    async def talk() -> list[str]:
        url = f"ws://127.0.0.1:{served.url.rsplit(':', 1)[1]}/openenv/{ENV}/ws"
        async with websockets.connect(url, additional_headers=auth()) as ws:
            replies = []
            for frame in [
                "not json",
                "[1]",
                "[" * 5000 + "]" * 5000,
                '{"type": "jump"}',
                '{"type": "state"}',
            ]:
                await ws.send(frame)
                replies.append(await ws.recv())
            return replies

    replies = asyncio.run(talk())
    assert '"INVALID_JSON"' in replies[0] and '"VALIDATION_ERROR"' in replies[1]
    assert '"INVALID_JSON"' in replies[2] and '"UNKNOWN_TYPE"' in replies[3]
    assert '"episode_id":null' in replies[4].replace(" ", "")


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer not-a-key-0123456789"}])
def test_a_websocket_without_a_valid_key_is_refused(served: Served, headers: dict[str, str]) -> None:
    async def connect() -> None:
        url = f"ws://127.0.0.1:{served.url.rsplit(':', 1)[1]}/openenv/{ENV}/ws"
        await websockets.connect(url, additional_headers=headers)

    with pytest.raises(websockets.exceptions.InvalidStatus, match="403"):
        asyncio.run(connect())


def test_each_tenant_plays_its_own_session(served: Served) -> None:
    with (
        GenericEnvClient(base_url=base(served), headers=auth(KEY_A)).sync() as a,
        GenericEnvClient(base_url=base(served), headers=auth(KEY_B)).sync() as b,
    ):
        a.reset(initial_count=1)
        b.reset(initial_count=100)
        a.step({"type": "call_tool", "tool_name": "increment_counter", "arguments": {"count": 1}})
        assert a.state()["state"] == {"count": 2} and b.state()["state"] == {"count": 100}
        assert (served.open_sessions("a"), served.open_sessions("b")) == (1, 1)
    served.wait_closed("a")
    served.wait_closed("b")


def test_the_sessions_open_quota_is_capacity_reached(served: Served) -> None:
    with (
        GenericEnvClient(base_url=base(served), headers=auth(KEY_C)).sync() as first,
        GenericEnvClient(base_url=base(served), headers=auth(KEY_C)).sync() as second,
    ):
        first.reset()
        with pytest.raises(RuntimeError, match=r"sessions_open.*CAPACITY_REACHED"):
            second.reset()
        first.close()
        served.wait_closed("c")
        assert second.reset().observation["episode_id"]  # the slot is free again
    served.wait_closed("c")


def test_a_frame_over_the_size_limit_ends_the_connection_and_its_session(served: Served) -> None:
    async def flood() -> None:
        url = f"ws://127.0.0.1:{served.url.rsplit(':', 1)[1]}/openenv/{ENV}/ws"
        async with websockets.connect(url, additional_headers=auth(KEY_B), max_size=None) as ws:
            await ws.send('{"type": "reset", "data": {}}')
            await ws.recv()
            assert served.open_sessions("b") == 1
            big = (
                '{"type": "step", "data": {"type": "call_tool", "tool_name": "x", "arguments": {"a": "%s"}}}'
            )
            with pytest.raises(websockets.exceptions.ConnectionClosed):
                await ws.send(big % ("x" * (17 << 20)))  # over uvicorn's 16 MiB ws_max_size
                await ws.recv()

    asyncio.run(flood())
    served.wait_closed("b")
