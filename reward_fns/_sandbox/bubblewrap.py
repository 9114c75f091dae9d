"""Local backend: one bubblewrap sandbox per sample, driven over pipes by asyncio.

What the sandboxed program gets (and the gateway's process keeps to itself):

- `bwrap --unshare-all`: its own user, pid, network (loopback only, down), IPC, UTS and cgroup namespaces;
  `--die-with-parent` and `--new-session` (no terminal injection); `--clearenv` (no gateway variables or API
  keys) and an empty environment for bwrap itself; no inherited file descriptors (asyncio closes them).
- A file system of read-only binds of `/usr` (plus `/bin`, `/lib*`, `/sbin` as on the host) and of the
  interpreter's prefix, fresh `/proc` and `/dev`, a private size-capped tmpfs `/tmp`, and the harness file.
  Nothing else: not the gateway's working directory, config file, home or `/etc`.
- rlimits set with `prlimit` on the whole chain: CPU seconds, address space, processes, file size, no core
  files. When the gateway runs as root, `setpriv` first drops to an unprivileged uid per slot: Linux does
  not enforce `RLIMIT_NPROC` on root, and one uid per slot keeps one sample's fork bomb from using another
  sample's process budget.
- At the sample deadline (or when the call is cancelled) the sandbox's pid namespace is SIGKILLed through
  its init (which takes every process the program started with it), then bwrap's process group.

`check_bubblewrap` runs a trivial sandbox once and, when this host cannot create the namespaces, raises
`SandboxUnavailable` naming the options. Code is never run without the sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from rewardfleet.reward_fns._sandbox.errors import (
    SandboxCrashed,
    SandboxError,
    SandboxOutputTooLarge,
    SandboxUnavailable,
)
from rewardfleet.reward_fns._sandbox.settings import MIB, SandboxSettings

HARNESS = Path(__file__).with_name("harness.py")
SANDBOX_HARNESS = "/sandbox/harness.py"
# Outside uids for sandboxes when the gateway runs as root: one per slot, no passwd entry needed.
SLOT_UID_BASE = 231_000
_STDERR_KEPT = 4096
_HOST_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

UNAVAILABLE_HELP = (
    "bubblewrap cannot create a sandbox on this host ({reason}). Code rewards are not run unsandboxed. "
    "Options: (1) let the gateway create user namespaces: install bubblewrap (Debian: apt-get install "
    "bubblewrap), set kernel.unprivileged_userns_clone=1 / user.max_user_namespaces>0, and in a container "
    "run with CAP_SYS_ADMIN or a seccomp/AppArmor profile that allows unshare/clone(CLONE_NEWUSER) "
    "(e.g. docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined); or (2) use the "
    "cluster backend: set sandbox_fusion_url (Sandbox Fusion's run_code URL) in the function's reward_kwargs."
)


def interpreter(settings: SandboxSettings) -> Path:
    """`sandbox.python`, else the gateway's own interpreter when it lives under /usr, else the system's
    /usr/bin/python3 (a pyenv or venv interpreter under /root is not readable by the sandbox's uid)."""
    if settings.python:
        return Path(settings.python)
    own = Path(os.path.realpath(sys.executable))
    if str(own).startswith("/usr/") or not Path("/usr/bin/python3").exists():
        return own
    return Path("/usr/bin/python3")


def _interpreter_prefix(python: Path) -> Path:
    """bin/python3 -> the installation prefix, bound read-only when it is not under /usr."""
    prefix = python.parent.parent
    if not python.is_absolute() or len(prefix.parts) < 2:
        # Binding "/" would show the sandbox the whole host.
        raise SandboxUnavailable(f"sandbox.python {str(python)!r} must be an absolute path below a prefix")
    return prefix


def bwrap_command(settings: SandboxSettings, slot: int) -> list[str]:
    """The argv that runs the harness in a sandbox for `slot`."""
    python = interpreter(settings)
    memory = settings.memory_limit_mb * MIB
    cpu_s = math.ceil(settings.sample_timeout_s) + 1
    argv = [
        "prlimit",
        f"--cpu={cpu_s}",
        f"--as={memory}",
        f"--nproc={settings.max_processes + _processes_of_this_user()}",
        f"--fsize={settings.max_file_bytes}",
        "--core=0",
        "--",
    ]
    if os.geteuid() == 0:
        uid = SLOT_UID_BASE + slot
        argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    argv += ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    argv += ["--setenv", "PATH", "/usr/bin:/bin", "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    for host_dir in _HOST_DIRS:
        path = Path(host_dir)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), host_dir]
        elif path.is_dir():
            argv += ["--ro-bind", host_dir, host_dir]
    prefix = _interpreter_prefix(python)
    if not str(prefix).startswith("/usr/"):
        argv += ["--ro-bind", str(prefix), str(prefix)]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(settings.tmp_bytes), "--tmpfs", "/tmp"]
    argv += [
        "--ro-bind",
        str(HARNESS),
        SANDBOX_HARNESS,
        "--chdir",
        "/tmp",
        "--uid",
        "65534",
        "--gid",
        "65534",
    ]
    return [*argv, str(python), "-I", SANDBOX_HARNESS]


def _processes_of_this_user() -> int:
    """RLIMIT_NPROC counts every process of the real uid; as root we switch uid, otherwise count ours."""
    if os.geteuid() == 0:
        return 0
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _uid_has_processes(uid: int) -> bool:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    return True
    return False


async def _wait_until_uid_is_idle(uid: int, patience_s: float = 5.0) -> None:
    """Before a slot is reused: the killed sandbox's processes still count against its uid's process limit
    until the kernel has torn its pid namespace down (quick, but not instant after a fork bomb)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience_s
    while _uid_has_processes(uid) and loop.time() < deadline:  # noqa: ASYNC110 - the kernel sends no event
        await asyncio.sleep(0.02)


def check_bubblewrap(settings: SandboxSettings) -> None:
    """Runs a trivial sandbox; raises SandboxUnavailable (naming the options) when this host cannot."""
    probe = bwrap_command(settings, slot=0)
    probe[-2:] = ["-I", "-c", "import socket; print(socket.if_nameindex())"]
    try:
        done = subprocess.run(
            probe, capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"}
        )
    except FileNotFoundError as exc:
        raise SandboxUnavailable(UNAVAILABLE_HELP.format(reason=f"{exc.filename} is not installed")) from None
    except subprocess.TimeoutExpired:
        raise SandboxUnavailable(UNAVAILABLE_HELP.format(reason="the probe sandbox hung for 30 s")) from None
    if done.returncode != 0:
        reason = (done.stderr.strip() or f"exit status {done.returncode}")[:300]
        raise SandboxUnavailable(UNAVAILABLE_HELP.format(reason=reason))


class BubblewrapRun:
    """One sandbox running the harness for one sample: the first pass, then (on request) the retry pass."""

    def __init__(self, settings: SandboxSettings, job: dict[str, Any], slot: int) -> None:
        self._settings = settings
        self._job = job
        self._slot = slot
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None
        # A captured output is JSON-escaped on its line (up to 6 bytes a character for control bytes).
        self._line_limit = 6 * settings.max_output_bytes + 65536

    def command(self) -> list[str]:
        return bwrap_command(self._settings, self._slot)

    async def first_pass(self) -> list[dict[str, Any]]:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.command(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin"},
                limit=self._line_limit,
            )
        except FileNotFoundError as exc:
            raise SandboxUnavailable(
                UNAVAILABLE_HELP.format(reason=f"{exc.filename} is not installed")
            ) from None
        self._stderr_task = asyncio.create_task(self._keep_stderr())
        await self._send(json.dumps(self._job) + "\n")
        return await self._read_until("all_done")

    async def retry_pass(self) -> list[dict[str, Any]]:
        await self._send("each\n")
        return await self._read_until("done")

    async def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            # Kill the namespace's init (bwrap's child): the kernel kills every process in the namespace and
            # bwrap reaps them and exits. Killing bwrap first would orphan them to the host's init, whose
            # zombies keep counting against the slot's process limit until it gets round to reaping them.
            for child in _children(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), 2.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        # `Process.wait()` returns only once every pipe is closed; a stdout we stopped reading (a flood) never
        # reaches EOF, so close our ends. asyncio has no public call for this; the transport's close() is it.
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        await proc.wait()
        if os.geteuid() == 0:
            await _wait_until_uid_is_idle(SLOT_UID_BASE + self._slot)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task

    def _process(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise RuntimeError("the sandbox was not started")
        return self._proc

    async def _send(self, text: str) -> None:
        stdin = self._process().stdin
        if stdin is None:
            raise RuntimeError("the sandbox has no stdin pipe")
        try:
            stdin.write(text.encode())
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise await self._crashed("the sandbox closed its input") from None

    async def _read_until(self, end: str) -> list[dict[str, Any]]:
        stdout = self._process().stdout
        if stdout is None:
            raise RuntimeError("the sandbox has no stdout pipe")
        results: list[dict[str, Any]] = []
        while True:
            try:
                line = await stdout.readuntil(b"\n")
            except asyncio.LimitOverrunError:
                raise SandboxOutputTooLarge(
                    f"the sandbox wrote a line over {self._line_limit} bytes (max_output_bytes "
                    f"{self._settings.max_output_bytes})"
                ) from None
            except asyncio.IncompleteReadError:
                raise await self._crashed(f"the sandbox stopped before {end!r}") from None
            try:
                record = json.loads(line)
            except ValueError:
                raise await self._crashed(
                    f"the sandbox wrote a line that is not JSON: {line[:80]!r}"
                ) from None
            if not isinstance(record, dict):
                raise await self._crashed(f"the sandbox wrote {line[:80]!r}")
            if record.get("phase") == end:
                return results
            results.append(record)

    async def _crashed(self, what: str) -> SandboxError:
        proc = self._process()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 1.0)
        stderr = bytes(self._stderr).decode(errors="replace").strip()
        if stderr.startswith("bwrap:") and "Resource temporarily unavailable" not in stderr:
            # bwrap itself failed before the harness started (namespaces, mounts): nothing ran.
            return SandboxUnavailable(UNAVAILABLE_HELP.format(reason=stderr[:300]))
        status = proc.returncode
        return SandboxCrashed(f"{what} (exit status {status}){': ' + stderr[-300:] if stderr else ''}")

    async def _keep_stderr(self) -> None:
        stderr = self._process().stderr
        if stderr is None:
            return
        while chunk := await stderr.read(65536):
            if len(self._stderr) < _STDERR_KEPT:
                self._stderr += chunk[: _STDERR_KEPT - len(self._stderr)]
