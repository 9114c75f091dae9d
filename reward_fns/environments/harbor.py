"""Harbor tasks as an environment.

A task folder (Harbor's layout) is a session's world, its image the sandbox the agent works in, and its
`tests/test.sh` the verifier, run where the agent worked.

- `seed {"task": NAME}` builds the task's image once (cached; `_harbor/image.py`), starts the session's
  sandbox from it and puts the task's `instruction.md` in `session.state["instruction"]`.
- Tools: `bash` (a command run with bash at the image's WORKDIR: a fresh shell each call, nothing it starts
  outlives the call), `read_file` and `write_file`, each with bounded sizes and output.
- `verify` runs `bash /tests/test.sh` as Harbor does, with the task's `[verifier] timeout_sec`, and reads
  `/logs/verifier/reward.json` or `reward.txt`. `tests/` enters the sandbox only for that exec (a fresh copy,
  read-only), `/logs/verifier` starts empty and is read from the exec's own mount (a reward file the agent
  wrote is never seen), and the image's system folders (`/usr`, `/etc`, `/bin`, `/lib`, ...) are the pristine
  image's, so an agent that replaced `bash`, `python3`, `pytest` or the loader cannot fake a pass; its changes
  elsewhere (the WORKDIR above all) are what is scored. After `verify` the tools refuse: the episode is over.

The shipped tasks are in `harbor_tasks/`. To serve another folder of tasks, subclass it in a module of
`environments.folders`: `class MyTasks(Harbor): name = "my-tasks"; tasks_dir = Path("/srv/tasks")`. How the
images are built and what the verifier sees: docs/sandboxes.md, "Harbor tasks".
"""

from __future__ import annotations

import asyncio
import posixpath
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar, cast

from pydantic import BaseModel, Field

from rewardfleet.reward_fns.environments._harbor.image import ImageBuilder, TaskImage, default_cache_dir
from rewardfleet.reward_fns.environments._harbor.rewards import VerifierFailed, read_rewards
from rewardfleet.reward_fns.environments._harbor.task import TASK_NAME, HarborTask, find_tasks
from rewardfleet.services.environments import Environment, Session, SessionLimits, ToolError, Verdict, tool
from rewardfleet.services.sandbox import (
    FileTooLarge,
    Resources,
    Sandbox,
    SandboxSpec,
    SandboxSpecInvalid,
    VerifierMounts,
)

SHIPPED_TASKS = Path(__file__).with_name("harbor_tasks")
MAX_COMMAND_CHARS = 64 << 10
MAX_TOOL_OUTPUT_BYTES = 64 << 10
MAX_READ_BYTES = 256 << 10
MAX_WRITE_CHARS = 1 << 20
MAX_TOOL_TIMEOUT_S = 600.0
VERIFIER_OUTPUT_TAIL = 4000
# The image's folders the verifier sees pristine (those the image has); everything else is the agent's.
SYSTEM_DIRS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Set for the verifier over the image's ENV: no Python user site (the agent could have planted one in $HOME).
VERIFY_SCRIPT = 'cd -- "$1" 2>/dev/null; exec /bin/bash /tests/test.sh'
VERIFIER_ENV = {"PYTHONNOUSERSITE": "1", "HOME": "/root"}


class HarborSeed(BaseModel):
    """The seed body: which task of the environment's folder the session works on."""

    task: str = Field(pattern=TASK_NAME.pattern, description="a task folder's name, e.g. fix-failing-test")


class UnknownHarborTask(LookupError):
    """The seed names no task of this environment."""


class Harbor(Environment):
    """Harbor task folders (`harbor_tasks/`) served as sessions: bash, read_file, write_file, then verify."""

    name = "harbor"
    Task = HarborSeed
    limits = SessionLimits(tool_calls=500, wall_time_s=4 * 3600.0, ttl_s=3600.0)
    tasks_dir: ClassVar[Path] = SHIPPED_TASKS
    # False: the verifier sees the system folders as the agent left them (Harbor's own behaviour), for tasks
    # whose work is installing or configuring the system; an agent can then fake a pass.
    pristine_system_dirs: ClassVar[bool] = True

    def __init__(self, cache_dir: Path | None = None, clock: Callable[[], float] = time.time) -> None:
        self._tasks = find_tasks(self.tasks_dir)
        self._images = ImageBuilder(cache_dir or default_cache_dir())
        self._clock = clock

    def tasks(self) -> dict[str, HarborTask]:
        return dict(self._tasks)

    def task(self, name: str) -> HarborTask:
        found = self._tasks.get(name)
        if found is None:
            known = ", ".join(self._tasks)
            raise UnknownHarborTask(f"task: {name!r} is not a task of {self.name!r} ({known})")
        return found

    async def image(self, task: HarborTask) -> TaskImage:
        """The task's image, built when the cache lacks it (`ImageBuildFailed` when it cannot be)."""
        return await self._images.ensure(task)

    def sandbox_spec(self, task: HarborSeed) -> SandboxSpec:
        found = self.task(task.task)
        image = self._images.built(found)
        if image is None:
            raise RuntimeError(f"task {found.name}: its image is not built (seed builds it first)")
        return SandboxSpec(
            image=image.reference,
            workdir=image.workdir,
            env=image.env,
            resources=Resources(cpus=found.cpus, memory_mb=found.memory_mb, disk_mb=found.storage_mb),
            network=False,
            ttl_s=found.agent_timeout_s + found.verifier_timeout_s + 300,
        )

    async def seed(self, session: Session, task: HarborSeed) -> None:
        try:
            found = self.task(task.task)
        except UnknownHarborTask as exc:
            raise ToolError(str(exc)) from None  # the gateway answers 4xx naming `task`
        image = await self.image(found)
        await session.sandbox()
        session.state.update(
            task=found.name,
            instruction=found.instruction,
            workdir=image.workdir,
            agent_deadline=self._clock() + found.agent_timeout_s,
            verified=False,
        )

    async def _agent_sandbox(self, session: Session) -> tuple[Any, float]:
        """The sandbox and the seconds left of the task's `[agent] timeout_sec`; ToolError once it is over."""
        if "task" not in session.state:
            raise ToolError('this session has no task: seed it with {"task": NAME} first')
        if session.state.get("verified"):
            raise ToolError("the episode was verified; its sandbox takes no more commands")
        left = float(session.state["agent_deadline"]) - self._clock()
        if left <= 0:
            raise ToolError("the task's agent time ([agent] timeout_sec) is used up")
        return await session.sandbox(), left

    def _path(self, session: Session, path: str) -> str:
        if not path or "\0" in path:
            raise ToolError("path: must be a non-empty path without NUL")
        return posixpath.normpath(posixpath.join(str(session.state.get("workdir", "/")), path))

    @tool
    async def bash(
        self,
        session: Session,
        command: Annotated[str, Field(min_length=1, max_length=MAX_COMMAND_CHARS)],
        timeout_s: Annotated[float, Field(gt=0, le=MAX_TOOL_TIMEOUT_S)] = 60.0,
    ) -> dict[str, Any]:
        """Runs a bash command in the task's sandbox at its working directory; returns exit code, output."""
        sandbox, left = await self._agent_sandbox(session)
        result = await sandbox.exec(
            ["/bin/bash", "-c", command],
            timeout_s=min(timeout_s, left),
            max_output_bytes=MAX_TOOL_OUTPUT_BYTES,
        )
        return {
            "exit_code": result.exit_code,
            "stdout": result.stdout.decode("utf-8", errors="replace"),
            "stderr": result.stderr.decode("utf-8", errors="replace"),
            "timed_out": result.timed_out,
            "truncated": result.truncated,
        }

    @tool
    async def read_file(
        self,
        session: Session,
        path: Annotated[str, Field(min_length=1, max_length=4096)],
        max_bytes: Annotated[int, Field(gt=0, le=MAX_READ_BYTES)] = 64 << 10,
    ) -> dict[str, Any]:
        """Reads a text file of the sandbox (a path relative to the working directory, or absolute)."""
        sandbox, _ = await self._agent_sandbox(session)
        full = self._path(session, path)
        try:
            data = await sandbox.read_file(full, max_bytes=max_bytes)
        except FileTooLarge as exc:
            raise ToolError(f"{full} is over max_bytes ({exc.limit}); read parts of it with bash") from None
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise ToolError(f"{full}: {exc.strerror or 'not a readable file'}") from None
        except SandboxSpecInvalid as exc:
            raise ToolError(f"path: {exc.message}") from None
        return {"path": full, "content": data.decode("utf-8", errors="replace"), "bytes": len(data)}

    @tool
    async def write_file(
        self,
        session: Session,
        path: Annotated[str, Field(min_length=1, max_length=4096)],
        content: Annotated[str, Field(max_length=MAX_WRITE_CHARS)],
        executable: bool = False,
    ) -> dict[str, Any]:
        """Writes a text file in the sandbox (created or replaced, folders made), optionally executable."""
        sandbox, _ = await self._agent_sandbox(session)
        full = self._path(session, path)
        data = content.encode()
        try:
            await sandbox.write_file(full, data, mode=0o755 if executable else 0o644)
        except FileTooLarge:
            raise ToolError(f"{full}: the sandbox's disk ([environment] storage_mb) is full") from None
        except SandboxSpecInvalid as exc:
            raise ToolError(f"path: {exc.message}") from None
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as exc:
            raise ToolError(f"{full}: {exc.strerror or 'cannot be written'}") from None
        return {"path": full, "bytes": len(data)}

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        """Runs the task's tests/test.sh in the session's sandbox and returns the reward it wrote."""
        if "task" not in session.state:
            raise VerifierFailed("the session was never seeded with a task")
        found = self.task(str(session.state["task"]))
        image = await self.image(found)
        # Any `Sandbox` of services/sandbox is the handle; the verifier exec is its keyword, not the handle's.
        sandbox = cast(Sandbox, await session.sandbox())
        with tempfile.TemporaryDirectory(prefix="harbor-tests-") as scratch:
            tests = Path(scratch) / "tests"
            await asyncio.to_thread(shutil.copytree, found.tests_dir, tests, symlinks=True)
            read_only = {"/tests": str(tests)}
            for name in SYSTEM_DIRS if self.pristine_system_dirs else ():
                if (image.rootfs / name).exists():
                    read_only[f"/{name}"] = str(image.rootfs / name)
            result = await sandbox.exec(
                # At the image's WORKDIR as Harbor runs it; from / when the agent removed that folder.
                ["/bin/bash", "-c", VERIFY_SCRIPT, "verify", image.workdir],
                timeout_s=found.verifier_timeout_s,
                cwd="/",
                env=VERIFIER_ENV,
                max_output_bytes=MAX_TOOL_OUTPUT_BYTES,
                # /logs too: whatever the agent made of it (a link elsewhere) is replaced by an empty folder.
                verifier=VerifierMounts(read_only=read_only, fresh=["/logs", "/logs/verifier"]),
            )
        session.state["verified"] = True
        output = (result.stdout + result.stderr).decode("utf-8", errors="replace")[-VERIFIER_OUTPUT_TAIL:]
        if result.timed_out:
            raise VerifierFailed(
                f"tests/test.sh of {found.name} ran past [verifier] timeout_sec "
                f"({found.verifier_timeout_s:g} s)\n{output}"
            )
        rewards = read_rewards(result.collected, output)
        return Verdict(
            reward=rewards.pop("reward"),
            reward_components=rewards,
            extras={
                "task": found.name,
                "verifier_exit_code": result.exit_code,
                "verifier_duration_s": round(result.duration_s, 3),
                "verifier_output": output,
            },
        )
