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


# Joins the sandbox's cgroups, then becomes bwrap: a pre-exec hook in Python would make subprocess fork the
# whole gateway instead of vfork'ing (+25 ms an exec); this costs one exec of /bin/sh.
_JOIN = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'


def in_cgroups(command: Sequence[str], procs_files: Sequence[str]) -> list[str]:
    """`command` run after its process has joined the cgroups whose `cgroup.procs` files are given."""
    if not procs_files:
        return list(command)
    return ["/bin/sh", "-c", _JOIN, "sh", str(len(procs_files)), *procs_files, *command]


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

    Whether the command ran at all is read from bwrap's status pipe (`--json-status-fd`, which the command
    cannot reach), never from its output or exit status: a command printing "bwrap: ..." and exiting 1 is
    a result like any other, so a sandboxed program cannot turn its own failure into a sandbox error."""
    started = time.monotonic()
    status_r, status_w = os.pipe()
    os.set_blocking(status_r, False)
    argv = [command[0], "--json-status-fd", str(status_w), *command[1:]]
    try:
        proc = await asyncio.create_subprocess_exec(
            *in_cgroups(argv, procs_files),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin"},
            pass_fds=(status_w,),
        )
    except FileNotFoundError:
        os.close(status_r)
        raise SandboxUnavailable("bwrap is not installed (Debian: apt-get install bubblewrap)") from None
    except (OSError, subprocess.SubprocessError) as exc:
        os.close(status_r)
        raise SandboxFailed(f"could not start the sandbox's process: {exc}") from None
    finally:
        os.close(status_w)
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
        status = _read_status(status_r)
    if timed_out:
        code = -signal.SIGKILL
    elif (found := _EXIT_CODE.search(status)) is not None:
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


def _read_status(fd: int) -> bytes:
    """What bwrap wrote on its status pipe (bwrap has exited, so this does not wait)."""
    data = bytearray()
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    return bytes(data)


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
