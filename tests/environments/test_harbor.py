"""The Harbor environment for real: the shipped tasks' images built with debootstrap + buildah (cached under
/var/cache/rewardfleet/harbor; .ci/setup builds them first), sandboxes of the local provider (bubblewrap over
an overlay), the agent played by the `bash` tool.

Every shipped task scores 1 after its own `solution/solve.sh` and 0 untouched; the forgeries an agent can try
(a reward file written before, a process left writing it, a planted /tests, replaced bash / python3 / the
checker's tools) score 0; 32 sessions of one image leave no process, mount or folder after close.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from bench.harness.waiting import eventually_async
from rewardfleet.reward_fns.environments._harbor.image import default_cache_dir
from rewardfleet.reward_fns.environments._harbor.rewards import VerifierFailed
from rewardfleet.reward_fns.environments.harbor import SHIPPED_TASKS, Harbor, HarborSeed, UnknownHarborTask
from rewardfleet.services.environments import Session, ToolError
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.local import LocalProvider
from rewardfleet.services.sandbox.mounts import mounts_under
from tests.support.sandbox import local_provider_missing

pytestmark = pytest.mark.timeout(1200)  # the first run on a machine builds the images (~5 min here)
TASKS = sorted(p.name for p in SHIPPED_TASKS.iterdir() if (p / "task.toml").is_file())


def _missing() -> str | None:
    for tool in ("buildah", "debootstrap"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install buildah debootstrap): the task images need it"
    return local_provider_missing()


needs_images = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def harbor() -> Iterator[Harbor]:
    """The built-in environment with every shipped task's image built (once per machine)."""
    if _missing():
        pytest.skip(str(_missing()))
    env = Harbor(default_cache_dir())
    for task in env.tasks().values():
        asyncio.run(env.image(task))
    yield env


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[LocalProvider]:
    made = LocalProvider(tmp_path / "sandboxes", ImageStore(tmp_path / "images"))
    yield made
    for sandbox_id in made.ids():
        await made.stop(sandbox_id)
    assert mounts_under(tmp_path) == []


async def open_session(env: Harbor, provider: LocalProvider, task: str, sid: str = "s") -> Session:
    """A session as the gateway opens one: its sandbox made from `sandbox_spec` on first use, then seeded."""
    seed = HarborSeed(task=task)

    async def opener(session: Session) -> object:
        return await provider.create(env.sandbox_spec(seed), owner=session.id)

    session = Session(id=sid, tenant="t", env=env.name, sandbox_opener=opener)
    await env.seed(session, seed)
    return session


async def close_session(session: Session) -> None:
    await (await session.sandbox()).stop()


async def run(env: Harbor, session: Session, command: str, timeout_s: float = 60) -> dict[str, object]:
    return await env.bash(session, command=command, timeout_s=timeout_s)


@needs_images
@pytest.mark.parametrize("task", TASKS)
async def test_the_solution_scores_one_and_doing_nothing_zero(
    harbor: Harbor, provider: LocalProvider, task: str
) -> None:
    untouched = await open_session(harbor, provider, task, "untouched")
    solved = await open_session(harbor, provider, task, "solved")
    assert solved.state["instruction"] == (SHIPPED_TASKS / task / "instruction.md").read_text()
    out = await run(harbor, solved, (SHIPPED_TASKS / task / "solution/solve.sh").read_text())
    assert out["exit_code"] == 0, out
    bad, good = await asyncio.gather(harbor.verify(untouched, {}), harbor.verify(solved, {}))
    assert (bad.reward, good.reward) == (0.0, 1.0), (bad.extras, good.extras)
    assert good.extras["task"] == task
    if task == "sales-report":  # reward.json: every numeric field but `reward` is a component
        parts = {"total_cents": 1, "by_region": 1, "top_customer": 1, "exact_keys": 1}
        assert good.reward_components == parts
        assert bad.reward_components["exact_keys"] == 0
    await asyncio.gather(close_session(untouched), close_session(solved))


@needs_images
async def test_the_hidden_tests_are_not_in_the_sandbox_before_verify(
    harbor: Harbor, provider: LocalProvider
) -> None:
    session = await open_session(harbor, provider, "exact-file-content")
    look = "ls /tests /solution; find / -xdev -name 'expected_motd*' -o -name 'solve.sh'"
    out = await run(harbor, session, look)
    assert "No such file or directory" in str(out["stderr"]) and out["stdout"] == ""
    await close_session(session)


@needs_images
async def test_a_reward_file_written_before_verify_is_not_read(
    harbor: Harbor, provider: LocalProvider
) -> None:
    session = await open_session(harbor, provider, "exact-file-content")
    await harbor.write_file(session, path="/logs/verifier/reward.txt", content="1\n")
    await harbor.write_file(session, path="/logs/verifier/reward.json", content='{"reward": 1}')
    out = await run(harbor, session, "chmod 444 /logs/verifier/*; chmod 555 /logs/verifier")
    assert out["exit_code"] == 0
    assert (await harbor.verify(session, {})).reward == 0.0
    await close_session(session)


@needs_images
async def test_a_process_left_behind_cannot_write_the_reward(harbor: Harbor, provider: LocalProvider) -> None:
    session = await open_session(harbor, provider, "exact-file-content")
    sandbox = await session.sandbox()
    writer = "while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; done"
    started = f"setsid nohup sh -c '{writer}' >/dev/null 2>&1 & sleep 0.2; echo started"
    out = await run(harbor, session, started)
    assert out["stdout"] == "started\n"
    # The exec took its pid namespace with it: the writer was killed (reaped just after the exec returned).
    await eventually_async(lambda: provider.cgroups.pids(sandbox.id) == set(), timeout_s=5, what="no process")
    assert (await harbor.verify(session, {})).reward == 0.0
    await close_session(session)


@needs_images
async def test_planted_tests_and_a_redirected_logs_folder_are_replaced(
    harbor: Harbor, provider: LocalProvider
) -> None:
    session = await open_session(harbor, provider, "exact-file-content")
    await harbor.write_file(session, path="/tests/test.sh", content="echo 1 > /logs/verifier/reward.txt\n")
    out = await run(harbor, session, "rm -rf /logs && mkdir -p /app/out && ln -s /app/out /logs")
    assert out["exit_code"] == 0
    verdict = await harbor.verify(session, {})
    assert verdict.reward == 0.0
    await close_session(session)


@needs_images
async def test_a_removed_workdir_scores_zero_not_an_error(harbor: Harbor, provider: LocalProvider) -> None:
    session = await open_session(harbor, provider, "shell-pipeline")
    await run(harbor, session, "cd / && rm -rf /app")
    verdict = await harbor.verify(session, {})
    assert verdict.reward == 0.0 and verdict.extras["verifier_exit_code"] == 0
    await close_session(session)


@needs_images
async def test_a_link_to_the_expected_file_does_not_pass(harbor: Harbor, provider: LocalProvider) -> None:
    session = await open_session(harbor, provider, "exact-file-content")
    await run(harbor, session, "mkdir -p /tests && ln -s /tests/expected_motd.txt /app/motd.txt")
    assert (await harbor.verify(session, {})).reward == 0.0
    await close_session(session)


# Replaces the tools the fix-failing-test verifier runs: python3 and sha256sum answer "passed", and bash
# itself writes a reward of 1 (last: the bash tool runs the command with the real bash it replaces).
FAKE_TOOLS = r"""
for tool in python3 sha256sum; do rm -f /usr/bin/$tool; printf '#!/bin/sh\nexit 0\n' > /usr/bin/$tool; done
chmod +x /usr/bin/python3 /usr/bin/sha256sum
echo 'import os; os.makedirs("/logs/verifier")' > /usr/lib/python3/dist-packages/sitecustomize.py
cp /usr/bin/dash /usr/bin/real-sh
printf '#!/usr/bin/real-sh\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\n' > /usr/bin/bash.new
chmod +x /usr/bin/bash.new && mv /usr/bin/bash.new /usr/bin/bash
"""


@needs_images
async def test_replaced_system_tools_do_not_fake_a_pass(harbor: Harbor, provider: LocalProvider) -> None:
    class TrustingHarbor(Harbor):  # the verifier sees the system as the agent left it
        pristine_system_dirs = False

    trusting = TrustingHarbor(default_cache_dir())
    for env, expected in ((trusting, 1.0), (harbor, 0.0)):
        session = await open_session(env, provider, "fix-failing-test")
        out = await run(env, session, FAKE_TOOLS)
        assert out["exit_code"] == 0, out
        assert (await env.verify(session, {})).reward == expected, type(env).__name__
        await close_session(session)


@needs_images
async def test_the_tools_are_bounded_and_refuse_after_verify(harbor: Harbor, provider: LocalProvider) -> None:
    session = await open_session(harbor, provider, "shell-pipeline")
    big = await run(harbor, session, "head -c 300000 /dev/zero | tr '\\0' x; echo done >&2")
    assert big["truncated"] is True and len(str(big["stdout"])) == 64 << 10 and big["stderr"] == "done\n"
    slow = await run(harbor, session, "sleep 30", timeout_s=0.5)
    assert slow["timed_out"] is True
    written = await harbor.write_file(session, path="notes/a.txt", content="hello\n")
    assert written == {"path": "/app/notes/a.txt", "bytes": 6}
    read = await harbor.read_file(session, path="/app/notes/a.txt")
    assert read["content"] == "hello\n"
    with pytest.raises(ToolError, match="max_bytes"):
        await harbor.read_file(session, path="access.log", max_bytes=100)
    with pytest.raises(ToolError, match=r"No such file|not a regular file"):
        await harbor.read_file(session, path="/nope")
    with pytest.raises(ToolError, match="path"):
        await harbor.read_file(session, path="../../etc/../../x\0")
    arguments = Harbor.tool_definitions["bash"]
    with pytest.raises(ValidationError) as caught:
        arguments.parse({"command": "x" * ((64 << 10) + 1)})
    assert caught.value.errors()[0]["loc"] == ("command",)
    with pytest.raises(ValidationError):
        arguments.parse({"command": "true", "timeout_s": 10_000})
    await harbor.verify(session, {})
    with pytest.raises(ToolError, match="verified"):
        await run(harbor, session, "true")
    await close_session(session)


@needs_images
async def test_the_tools_refuse_once_the_agent_time_is_used_up(provider: LocalProvider) -> None:
    now = [1000.0]
    env = Harbor(default_cache_dir(), clock=lambda: now[0])
    session = await open_session(env, provider, "exact-file-content")  # [agent] timeout_sec = 600
    now[0] += 599
    slow = await run(env, session, "sleep 5", timeout_s=60)  # bounded by the second left, not by timeout_s
    assert slow["timed_out"] is True
    now[0] += 1
    with pytest.raises(ToolError, match="agent time"):
        await env.write_file(session, path="motd.txt", content="late")
    assert (await env.verify(session, {})).reward == 0.0  # verify still answers
    await close_session(session)


def test_an_unknown_or_malformed_task_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as caught:
        Harbor.Task.model_validate({"task": "../etc"})
    assert caught.value.errors()[0]["loc"] == ("task",)
    env = Harbor(Path("/nonexistent-cache"))
    with pytest.raises(UnknownHarborTask, match="task: 'no-such-task'"):
        env.task("no-such-task")
    assert sorted(env.tasks()) == TASKS and len(TASKS) >= 4


def _custom_task(root: Path, name: str, test_sh: str, timeout_s: float = 30) -> None:
    """A task sharing exact-file-content's environment/ (so its image), with its own test.sh."""
    folder = root / name
    shutil.copytree(SHIPPED_TASKS / "exact-file-content", folder)
    text = (folder / "task.toml").read_text().replace("timeout_sec = 30.0", f"timeout_sec = {timeout_s}", 1)
    (folder / "task.toml").write_text(text)
    (folder / "tests/test.sh").write_text(test_sh)


@needs_images
async def test_a_verifier_without_a_reward_is_an_error_not_a_zero(
    harbor: Harbor, provider: LocalProvider, tmp_path: Path
) -> None:
    _custom_task(tmp_path, "silent", "echo checking; exit 3\n")
    _custom_task(tmp_path, "garbled", "mkdir -p /logs/verifier; echo yes > /logs/verifier/reward.txt\n")
    _custom_task(tmp_path, "nan", "echo '{\"reward\": NaN}' > /logs/verifier/reward.json\n")
    _custom_task(tmp_path, "report", 'echo \'{"passed": 3, "note": "x"}\' > /logs/verifier/reward.json\n')
    _custom_task(tmp_path, "slow", "sleep 60\n", timeout_s=1)

    class Custom(Harbor):
        name = "custom"
        tasks_dir = tmp_path

    env = Custom(default_cache_dir())
    cases = {
        "silent": "wrote neither",
        "garbled": "does not hold a number",
        "nan": "not JSON|not a finite",
        "report": "no numeric 'reward'",
        "slow": r"ran past \[verifier\] timeout_sec \(1 s\)",
    }
    for name, message in cases.items():
        session = await open_session(env, provider, name)
        with pytest.raises(VerifierFailed, match=message):
            await env.verify(session, {})
        await close_session(session)


@needs_images
async def test_32_sessions_of_one_image_leave_nothing_after_close(
    harbor: Harbor, provider: LocalProvider
) -> None:
    sessions = await asyncio.gather(
        *(open_session(harbor, provider, "shell-pipeline", f"s{i}") for i in range(32))
    )
    sandboxes = [await s.sandbox() for s in sessions]
    assert len({s.id for s in sandboxes}) == 32
    assert len(mounts_under(provider.root)) == 64  # a tmpfs and an overlay each, over one image folder
    image = await harbor.image(harbor.task("shell-pipeline"))
    assert {s.record.lower for s in sandboxes} == {str(image.rootfs)}  # one image folder below all 32
    outs = await asyncio.gather(
        *(run(harbor, s, f"echo {i} > mine.txt; cat mine.txt; ls /app") for i, s in enumerate(sessions))
    )
    assert [o["stdout"] for o in outs] == [f"{i}\naccess.log\nmine.txt\n" for i in range(32)]
    solve = (SHIPPED_TASKS / "shell-pipeline/solution/solve.sh").read_text()
    await asyncio.gather(*(run(harbor, s, solve) for s in sessions[:2]))
    verdicts = await asyncio.gather(*(harbor.verify(s, {}) for s in sessions[:4]))
    assert [v.reward for v in verdicts] == [1.0, 1.0, 0.0, 0.0]
    await asyncio.gather(*(close_session(s) for s in sessions))
    assert mounts_under(provider.root) == []
    assert os.listdir(provider.root) == []
    assert [provider.cgroups.pids(s.id) for s in sandboxes] == [set()] * 32
    assert [f for s in sandboxes for f in provider.cgroups.folders(s.id) if f.exists()] == []
