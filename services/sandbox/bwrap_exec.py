"""One command in a local sandbox: a bubblewrap process over the sandbox's merged root, in the sandbox's
cgroups, with its own pid namespace, so every process the command starts dies when it ends (or at the
timeout, when the namespace's init is killed).

The command runs as root of a user namespace (uid 0 inside, the gateway's uid outside) with a container's
usual capabilities over its own namespaces only; no network unless the spec asked for it; an environment of
exactly the spec's and the exec's variables. What this isolates and what it does not: docs/sandboxes.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rewardfleet.services.sandbox.errors import SandboxFailed, SandboxUnavailable
from rewardfleet.services.sandbox.spec import ExecResult

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Docker's default capability set without MKNOD, NET_RAW and AUDIT_WRITE, held over the sandbox's own
# namespaces only (they mean nothing on the host's objects).
CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_SETFCAP",
)
_EXIT_CODE = re.compile(rb'"exit-code"\s*:\s*(\d+)')
_CHILD_PID = re.compile(rb'"child-pid"\s*:\s*(\d+)')
_KILL_PATIENCE_S = 5.0


@dataclass(frozen=True)
class Bind:
    """A host path shown at `target` for one exec."""

    source: str
    target: str
    writable: bool = False


def bwrap_argv(
    root: str,
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    network: bool,
    binds: Sequence[Bind] = (),
) -> list[str]:
    """The bwrap command line running `argv` in the merged root `root`."""
    out = ["bwrap", "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup"]
    if not network:
        out.append("--unshare-net")
    out += ["--die-with-parent", "--new-session", "--uid", "0", "--gid", "0", "--hostname", "sandbox"]
    out += ["--cap-drop", "ALL"]
    for cap in CAPABILITIES:
        out += ["--cap-add", cap]
    out += ["--bind", root, "/", "--proc", "/proc", "--dev", "/dev"]
    if network:
        out += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
    for bind in binds:
        out += ["--bind" if bind.writable else "--ro-bind", bind.source, bind.target]
    out += ["--clearenv"]
    merged = {"PATH": DEFAULT_PATH, "HOME": "/root", **env}
    for key, value in merged.items():
        out += ["--setenv", key, value]
    out += ["--chdir", cwd, "--", *argv]
    return out


async def run(
    command: list[str],
    *,
    procs_files: Sequence[str],
    timeout_s: float,
    stdin: bytes | None,
    max_output_bytes: int,
) -> ExecResult:
    """Runs a `bwrap_argv` command to its end or `timeout_s`; output beyond `max_output_bytes` (each of
    stdout and stderr) is read and dropped. Raises SandboxFailed when bwrap itself could not set up.

    bwrap reports on a status pipe (`--json-status-fd`) the command cannot reach: first its child's pid,
    which this moves into the sandbox's cgroups (`procs_files`) while the child waits on `--block-fd`
    (so everything the command starts is counted, and no shim process or pre-exec hook is needed), then
    the command's exit code. Whether the command ran is read there, never from its output or exit status:
    a command printing "bwrap: ..." and exiting 1 cannot pass for a sandbox failure."""
    started = time.monotonic()
    status_r, status_w = os.pipe()
    block_r, block_w = os.pipe()
    argv = [command[0], "--json-status-fd", str(status_w), "--block-fd", str(block_r), *command[1:]]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin"},
            pass_fds=(status_w, block_r),
        )
    except FileNotFoundError:
        _close(status_r, block_w)
        raise SandboxUnavailable("bwrap is not installed (Debian: apt-get install bubblewrap)") from None
    except (OSError, subprocess.SubprocessError) as exc:
        _close(status_r, block_w)
        raise SandboxFailed(f"could not start the sandbox's process: {exc}") from None
    finally:
        _close(status_w, block_r)
    status = _StatusPipe(status_r)
    out, err = bytearray(), bytearray()
    cut = [False]
    readers = [
        asyncio.create_task(_read(proc.stdout, out, max_output_bytes, cut)),
        asyncio.create_task(_read(proc.stderr, err, max_output_bytes, cut)),
    ]
    timed_out = False
    try:
        async with asyncio.timeout(timeout_s):
            child = await status.child_pid()
            if child is not None:
                _join(child, procs_files)
            _close(block_w)  # lets the child go on
            block_w = -1
            if stdin is not None and proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.write(stdin)
                    await proc.stdin.drain()
                proc.stdin.close()
            await asyncio.gather(*readers)
            await proc.wait()
    except TimeoutError:
        timed_out = True
    finally:
        if block_w != -1:
            _close(block_w)
        await _kill(proc)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        report = status.rest()
    if timed_out:
        code = -signal.SIGKILL
    elif (found := _EXIT_CODE.search(report)) is not None:
        code = int(found.group(1))
    else:
        message = bytes(err[:500]).decode(errors="replace").strip()
        raise SandboxFailed(f"the sandbox did not run the command (bwrap exit {proc.returncode}): {message}")
    return ExecResult(
        exit_code=code,
        stdout=bytes(out),
        stderr=bytes(err),
        timed_out=timed_out,
        truncated=cut[0],
        duration_s=time.monotonic() - started,
    )


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _join(pid: int, procs_files: Sequence[str]) -> None:
    """Moves `pid` (bwrap's child, waiting on its block fd) into the sandbox's cgroups."""
    for path in procs_files:
        try:
            with open(path, "w") as procs:
                procs.write(str(pid))
        except OSError as exc:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            raise SandboxFailed(f"could not put the command in the sandbox's cgroup {path}: {exc}") from None


class _StatusPipe:
    """bwrap's `--json-status-fd` pipe: its first line (the child's pid), then the rest once bwrap exited."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._data = bytearray()
        os.set_blocking(fd, False)

    async def child_pid(self) -> int | None:
        """The child's pid once bwrap has written it; None when bwrap ended without (a setup failure)."""
        loop = asyncio.get_running_loop()
        while b"\n" not in self._data:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self._fd, ready.set_result, None)
            try:
                await ready
            finally:
                loop.remove_reader(self._fd)
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                return None
            self._data += chunk
        found = _CHILD_PID.search(self._data)
        return int(found.group(1)) if found else None

    def rest(self) -> bytes:
        """Everything bwrap wrote (it has exited, so this does not wait); closes the pipe."""
        try:
            while chunk := os.read(self._fd, 65536):
                self._data += chunk
        except BlockingIOError:
            pass
        finally:
            _close(self._fd)
        return bytes(self._data)


async def _read(stream: asyncio.StreamReader | None, kept: bytearray, cap: int, cut: list[bool]) -> None:
    if stream is None:
        return
    while chunk := await stream.read(1 << 16):
        room = cap - len(kept)
        if len(chunk) > room:
            cut[0] = True
        if room > 0:
            kept += chunk[:room]


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as file:
            return [int(p) for p in file.read().split()]
    except OSError:
        return []


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Ends the exec: its pid namespace's init (bwrap's child) first, which takes every process in the
    namespace with it, then bwrap; waits until bwrap is gone."""
    if proc.returncode is None:
        for child in _children(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), _KILL_PATIENCE_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # bwrap itself; its child dies with it (--die-with-parent)
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()
    await proc.wait()
