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
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
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
_STDERR_BWRAP = b"bwrap: "
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


def _join_cgroups(procs_files: Sequence[str]) -> Callable[[], None]:
    def join() -> None:
        for path in procs_files:
            with open(path, "w") as procs:
                procs.write("0")

    return join


async def run(
    command: list[str],
    *,
    procs_files: Sequence[str],
    timeout_s: float,
    stdin: bytes | None,
    max_output_bytes: int,
) -> ExecResult:
    """Runs a `bwrap_argv` command to its end or `timeout_s`; output beyond `max_output_bytes` (each of
    stdout and stderr) is read and dropped. Raises SandboxFailed when bwrap itself could not set up."""
    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin"},
            preexec_fn=_join_cgroups(procs_files),
        )
    except FileNotFoundError:
        raise SandboxUnavailable("bwrap is not installed (Debian: apt-get install bubblewrap)") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxFailed(f"could not start the sandbox's process: {exc}") from None
    out, err = bytearray(), bytearray()
    cut = [False]
    readers = [
        asyncio.create_task(_read(proc.stdout, out, max_output_bytes, cut)),
        asyncio.create_task(_read(proc.stderr, err, max_output_bytes, cut)),
    ]
    timed_out = False
    try:
        async with asyncio.timeout(timeout_s):
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
        await _kill(proc)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    if timed_out:
        code = -signal.SIGKILL
    elif code == 1 and err.startswith(_STDERR_BWRAP):
        raise SandboxFailed(
            f"bubblewrap could not set the sandbox up: {bytes(err[:500]).decode(errors='replace')}"
        )
    elif code < 0:
        code = 128 - code  # bwrap itself killed by a signal: as a shell reports it
    return ExecResult(
        exit_code=code,
        stdout=bytes(out),
        stderr=bytes(err),
        timed_out=timed_out,
        truncated=cut[0],
        duration_s=time.monotonic() - started,
    )


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
    namespace with it, then bwrap's process group; waits until bwrap is gone."""
    if proc.returncode is None:
        for child in _children(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), _KILL_PATIENCE_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()
    await proc.wait()
