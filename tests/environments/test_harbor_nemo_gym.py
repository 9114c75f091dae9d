"""Harbor tasks through NeMo Gym's protocol over a real gateway (uvicorn) with the local sandbox provider,
driven as NeMo Gym's agent drives a resources server (aiohttp, each answer's cookies sent with the next
call): every shipped task scores 1 after its solve.sh sent to the `bash` tool, 0 untouched; an unknown task
is a 4xx naming `task`; a tool's failure is the tool's 400; the gateway's stop leaves no sandbox, mount or
process behind."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from rewardfleet.reward_fns.environments._harbor.image import default_cache_dir
from rewardfleet.reward_fns.environments.harbor import SHIPPED_TASKS, Harbor
from rewardfleet.services.sandbox.mounts import mounts_under
from tests.environments.gateways import gateway
from tests.environments.test_harbor import TASKS, needs_images

pytestmark = [needs_images, pytest.mark.timeout(1200)]
VERIFY_BODY = {"responses_create_params": {"input": []}, "response": {"output": []}}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(the harbor server's NeMo Gym base URL, the sandboxes' root)."""
    env = Harbor(default_cache_dir())
    for task in env.tasks().values():  # built before the gateway: a seed must not wait for a build
        asyncio.run(env.image(task))
    tmp = tmp_path_factory.mktemp("harbor_nemo_gym")
    root = tmp / "sandboxes"
    config = {
        "nemo_gym": {"servers": {"harbor": {"environment": "harbor"}}},
        "environments": {
            "builtin_package": "rewardfleet.reward_fns.environments",
            "tool_timeout_s": 120,
            "sandbox": {"provider": "local", "root": str(root), "image_cache": str(tmp / "images")},
        },
    }
    with gateway(tmp, config) as url:
        yield f"{url}/nemo_gym/harbor", root
    assert mounts_under(root) == [], "the gateway's stop left sandbox mounts"
    assert [p.name for p in root.iterdir()] == [], "the gateway's stop left sandbox folders"


def agent() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())


async def episode(http: aiohttp.ClientSession, base: str, task: str, commands: list[str]) -> dict[str, Any]:
    async with http.post(f"{base}/seed_session", json={"task": task}) as resp:
        assert resp.status == 200, await resp.text()
        cookies = resp.cookies
    for command in commands:
        async with http.post(f"{base}/bash", json={"command": command}, cookies=cookies) as resp:
            assert resp.status == 200, await resp.text()
            assert (await resp.json())["exit_code"] == 0
            cookies = resp.cookies
    async with http.post(f"{base}/verify", json={**VERIFY_BODY, "task": task}, cookies=cookies) as resp:
        assert resp.status == 200, await resp.text()
        return dict(await resp.json())


@pytest.mark.parametrize("task", TASKS)
async def test_every_task_scores_one_solved_and_zero_untouched(gw: tuple[str, Path], task: str) -> None:
    base, _ = gw
    solve = (SHIPPED_TASKS / task / "solution/solve.sh").read_text()
    async with agent() as http:
        solved = await episode(http, base, task, [solve])
        untouched = await episode(http, base, task, [])
    assert (solved["reward"], untouched["reward"]) == (1.0, 0.0), (solved, untouched)
    assert solved["task"] == task and solved["response"] == VERIFY_BODY["response"]


async def test_an_unknown_task_and_a_tool_failure_are_4xx(gw: tuple[str, Path]) -> None:
    base, _ = gw
    async with agent() as http:
        async with http.post(f"{base}/seed_session", json={"task": "no-such-task"}) as resp:
            assert resp.status == 422, await resp.text()
            assert "no-such-task" in await resp.text()
        async with http.post(f"{base}/seed_session", json={"task": "../etc"}) as resp:
            assert resp.status == 422 and "task" in await resp.text()
        async with http.post(f"{base}/seed_session", json={"task": "exact-file-content"}) as resp:
            cookies = resp.cookies
        async with http.post(f"{base}/read_file", json={"path": "/nope"}, cookies=cookies) as resp:
            assert resp.status == 400 and "ToolError" in await resp.text()
        async with http.post(f"{base}/bash", json={"command": ""}, cookies=cookies) as resp:
            assert resp.status == 422 and "command" in await resp.text()


async def test_a_gateway_killed_mid_episode_leaves_no_sandbox_after_restart(tmp_path: Path) -> None:
    root = tmp_path / "sandboxes"
    sandbox = {"provider": "local", "root": str(root), "image_cache": str(tmp_path / "images")}
    config = {
        "builtin_package": None,
        "nemo_gym": {"servers": {"harbor": {"environment": "harbor"}}},
        "environments": {"tool_timeout_s": 120, "sandbox": sandbox},
    }
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    first = ChildProcess(
        rewardfleet_cmd("gateway", "--port", str(port), "--config", str(path)), tmp_path / "first.log"
    )
    try:
        first.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=120)
        async with agent() as http:
            base = f"http://127.0.0.1:{port}/nemo_gym/harbor"
            async with http.post(f"{base}/seed_session", json={"task": "shell-pipeline"}) as resp:
                assert resp.status == 200, await resp.text()
                cookies = resp.cookies
            async with http.post(f"{base}/bash", json={"command": "echo working"}, cookies=cookies) as resp:
                assert resp.status == 200
        assert len(mounts_under(root)) == 2 and len(list(root.iterdir())) == 1  # one sandbox, mid-episode
        first.signal(signal.SIGKILL)
        first.proc.wait(timeout=30)
        assert len(mounts_under(root)) == 2  # nobody stopped it
    finally:
        first.stop()
    with gateway(tmp_path, config, name="second"):  # its start reaps the sandbox of a dead owner
        assert mounts_under(root) == [] and list(root.iterdir()) == []
