"""Local backend: one bubblewrap sandbox per test case, driven over pipes by asyncio.

Each case runs in a fresh sandbox: the runner (`harness.py`) gets the case's job on stdin, and the host
judges the case from what it observes from outside: the bytes on the sandbox's stdout (capped at
`max_output_bytes`), the exit status, and its own deadline. There is no report to trust or forge. The
program gets its own namespaces (no network), a read-only file system with a private `/tmp`, three pipes,
rlimits and, under root, an unprivileged uid per slot; what exactly, and why: docs/code_sandbox.md.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from rewardfleet.reward_fns._sandbox.errors import SandboxCrashed, SandboxNotStarted, SandboxUnavailable
from rewardfleet.reward_fns._sandbox.host_check import classify, host_facts
from rewardfleet.reward_fns._sandbox.outcome import STARTED, case_outcome, started_output
from rewardfleet.reward_fns._sandbox.settings import MIB, SandboxSettings

HARNESS = Path(__file__).with_name("harness.py")
SANDBOX_HARNESS = "/sandbox/harness.py"
# Outside uids for sandboxes when the gateway runs as root: one per slot, no passwd entry needed.
SLOT_UID_BASE = 231_000
_STDERR_KEPT = 4096
_HOST_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

UNAVAILABLE_HELP = (
    "bubblewrap cannot create a sandbox on this host ({reason}). Code rewards are not run unsandboxed. "
    "Options: (1) let the gateway create user namespaces: the deploy files' settings (docker compose: "
    "seccomp=deploy/seccomp/gateway.json, apparmor=unconfined, systempaths=unconfined; Kubernetes: "
    "deploy/k8s/gateway.yaml's securityContext), no CAP_SYS_ADMIN needed; see docs/deploy.md; or (2) use the "
    "cluster backend: set sandbox_fusion_url (Sandbox Fusion's run_code URL) in the function's reward_kwargs."
)


def unavailable(message: str) -> SandboxUnavailable:
    """SandboxUnavailable naming the setting that is missing here (host_check), bwrap's message and the
    options."""
    return SandboxUnavailable(UNAVAILABLE_HELP.format(reason=classify(message, host_facts())))


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


def bwrap_command(
    settings: SandboxSettings,
    slot: int,
    runner: Path = HARNESS,
    ro_binds: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The argv that runs `runner` (default: the harness) in a sandbox for `slot`, with `ro_binds` (host path,
    sandbox path) bound read-only (the `sql` reward's database)."""
    python = interpreter(settings)
    memory = settings.memory_limit_mb * MIB
    cpu_s = math.ceil(settings.sample_timeout_s) + 1
    argv = [
        "prlimit",
        f"--cpu={cpu_s}",
        f"--as={memory}",
        f"--nproc={settings.max_processes + _processes_of_uid(_sandbox_uid(slot))}",
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
    for host_path, sandbox_path in ro_binds:
        argv += ["--ro-bind", host_path, sandbox_path]
    argv += [
        "--ro-bind",
        str(runner),
        SANDBOX_HARNESS,
        "--chdir",
        "/tmp",
        "--uid",
        "65534",
        "--gid",
        "65534",
    ]
    return [*argv, str(python), "-I", SANDBOX_HARNESS]


def _sandbox_uid(slot: int) -> int:
    """The outside uid the slot's sandboxes run as: the slot's own when we are root, else ours."""
    return SLOT_UID_BASE + slot if os.geteuid() == 0 else os.getuid()


def _processes_of_uid(uid: int) -> int:
    """RLIMIT_NPROC counts every process of the real uid, zombies included: the processes still there
    (ours when not root; the slot's previous sandbox on its way out when root: its namespace's init stays
    a zombie until the host's init reaps it) are added, so each sandbox gets `max_processes` of its own."""
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
        raise unavailable(f"{exc.filename} is not installed") from None
    except subprocess.TimeoutExpired:
        raise SandboxUnavailable(UNAVAILABLE_HELP.format(reason="the probe sandbox hung for 30 s")) from None
    if done.returncode != 0:
        raise unavailable((done.stderr.strip() or f"exit status {done.returncode}")[:300])


class BubblewrapRun:
    """The test cases of one sample, each in a fresh sandbox: the job on stdin, the verdict derived here
    from the process's stdout, exit status and our own deadline (`outcome.case_outcome`)."""

    def __init__(self, settings: SandboxSettings, slot: int) -> None:
        self._settings = settings
        self._slot = slot
        self._proc: asyncio.subprocess.Process | None = None

    def command(self) -> list[str]:
        return bwrap_command(self._settings, self._slot)

    async def run_case(self, job: dict[str, Any], call_based: bool, deadline_s: float) -> dict[str, Any]:
        """`{"verdict", "output"?}` of one case (`job` is the runner's job, see `harness.py`); past
        `deadline_s` wall seconds the sandbox is killed and the case is a timeout."""
        cap = self._settings.max_output_bytes + len(STARTED)
        proc = self._proc = await self._spawn()
        stderr = bytearray()
        stderr_task = asyncio.create_task(_keep(proc.stderr, stderr))
        stdout = bytearray()
        timed_out = over_limit = False
        try:
            async with asyncio.timeout(deadline_s):
                await _send(proc, json.dumps(job).encode())
                if proc.stdout is None:
                    raise RuntimeError("the sandbox has no stdout pipe")
                while chunk := await proc.stdout.read(1 << 16):
                    stdout += chunk
                    if len(stdout) > cap:
                        over_limit = True
                        break
                if not over_limit:
                    await proc.wait()
        except TimeoutError:
            timed_out = True
        finally:
            await self.close()
            stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stderr_task
        output = started_output(bytes(stdout))
        if output is None:
            self._raise_setup_failure(bytes(stderr), proc.returncode, timed_out)
        return case_outcome(
            proc.returncode, output, call_based=call_based, timed_out=timed_out, over_limit=over_limit
        )

    async def close(self) -> None:
        """Kills the running case's sandbox (every process in it) and waits until it is gone."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        killed = proc.returncode is None
        if killed:
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
        if killed and os.geteuid() == 0:
            await _wait_until_uid_is_idle(SLOT_UID_BASE + self._slot)

    async def _spawn(self) -> asyncio.subprocess.Process:
        try:
            return await asyncio.create_subprocess_exec(
                *self.command(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin"},
            )
        except FileNotFoundError as exc:
            raise unavailable(f"{exc.filename} is not installed") from None

    def _raise_setup_failure(self, stderr: bytes, returncode: int | None, timed_out: bool) -> NoReturn:
        """The runner never started, so none of the program ran: the sandbox failed, not the program."""
        text = stderr.decode(errors="replace").strip()
        if text.startswith("bwrap:") and "Resource temporarily unavailable" not in text:
            raise unavailable(text[:300])
        if timed_out:
            raise SandboxNotStarted(
                f"the sandbox had not started the runner at the case deadline: {text[-300:]}"
            )
        raise SandboxCrashed(
            f"the sandbox exited with status {returncode} before running the program: {text[-300:]}"
        )


async def _send(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """The job, then EOF. A process that died before reading it is judged by its exit status."""
    stdin = proc.stdin
    if stdin is None:
        raise RuntimeError("the sandbox has no stdin pipe")
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
        stdin.close()


async def _keep(stream: asyncio.StreamReader | None, kept: bytearray) -> None:
    """Reads a stream to its end, keeping its first bytes (bwrap's own error messages)."""
    if stream is None:
        return
    while chunk := await stream.read(65536):
        if len(kept) < _STDERR_KEPT:
            kept += chunk[: _STDERR_KEPT - len(kept)]
