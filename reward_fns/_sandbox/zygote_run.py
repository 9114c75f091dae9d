"""Local backend, warm: one sandbox per pass of a sample, a forked process per test case.

One bubblewrap sandbox per pass of a sample, whose zygote forks a fresh process per test case (`zygote.py`),
instead of one sandbox and one interpreter start per case.

The sandbox is `bubblewrap.bwrap_command`'s (namespaces, read-only host binds, rlimits, a uid per slot)
running `zygote.py` with `python -I`; the runner (`harness.py`) is bound next to it and loaded once. Per
case the host creates three pipes (job, stdout, status) and hands the zygote their far ends over a Unix
socket; it writes the job, reads the output to EOF (capped at `max_output_bytes`, as before) and then the
exit status, written by the case's parent only after the kernel has torn the case's pid namespace down.
The verdict is derived exactly as before (`outcome.case_outcome`): the host trusts the case's stdout as
"the output" and the status as the case init's exit status, both of which it reads from processes the
program cannot reach (see `zygote.py`).

What stays shared between the cases of one pass, and why that gives a program nothing:

- The zygote: it receives only descriptors, never a job or a result, and reads nothing a case wrote. A
  program cannot name it (other pid namespace), so cannot signal or ptrace it.
- The pass itself: each pass (first pass, retry pass) gets a fresh sandbox (`start_pass`). In the first
  pass case k+1 runs only when case k passed; a sandbox shared with the retry pass (which runs case k
  again) would let a program count how many cases ran before and so learn which guess failed.
- After a deadline or an output flood the whole sandbox is killed (as before), and the next case starts a
  fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

from rewardfleet.reward_fns._sandbox.bubblewrap import (
    HARNESS,
    UNAVAILABLE_HELP,
    BubblewrapRun,
    _keep,
    bwrap_command,
)
from rewardfleet.reward_fns._sandbox.errors import SandboxCrashed, SandboxError, SandboxUnavailable
from rewardfleet.reward_fns._sandbox.outcome import STARTED, case_outcome, started_output
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings

ZYGOTE = Path(__file__).with_name("zygote.py")
CASE_RUNNER = "/sandbox/case_runner.py"
# The case's parent and its pid-namespace init: two processes of the slot's uid besides bwrap's.
_CASE_OVERHEAD_PROCESSES = 2
_GRACE_S = 2.0
_PROBE = {"solution": "print(input())", "fn_name": None, "timeout_s": 10.0, "input": "zygote-ok"}


def zygote_command(base: list[str], control_fd: int, tmp_bytes: int) -> list[str]:
    """`bwrap_command(..., runner=ZYGOTE)` with the process limit raised by the zygote's own per-case
    processes, and the zygote's arguments. Not `-S`: it saves ~11 ms per sandbox but drops the system's
    site-packages from `sys.path` (programs could import less than in a fresh interpreter), and adding
    them back costs the same 11 ms."""
    argv = list(base)
    for i, arg in enumerate(argv):
        if arg.startswith("--nproc="):
            argv[i] = f"--nproc={int(arg.split('=', 1)[1]) + _CASE_OVERHEAD_PROCESSES}"
            break
    if argv[-2] != "-I":
        raise RuntimeError(f"unexpected sandbox command tail {argv[-3:]}")
    return [*argv, str(control_fd), str(tmp_bytes)]


def check_zygote(settings: SandboxSettings) -> None:
    """Runs one trivial case through a zygote (after `check_bubblewrap`): raises SandboxUnavailable when
    this host lets bwrap create namespaces but not the zygote's nested ones for each case."""

    async def probe() -> dict[str, Any]:
        run = ZygoteRun(settings, slot=0)
        try:
            return await run.run_case(dict(_PROBE), False, 30.0)
        finally:
            await run.close()

    try:
        with ThreadPoolExecutor(1) as pool:  # its own event loop, whether or not the caller runs one
            outcome = pool.submit(asyncio.run, probe()).result()
    except SandboxError as exc:
        outcome = {"verdict": f"{type(exc).__name__}: {exc}"}
    if outcome != {"verdict": "ok", "output": "zygote-ok\n"}:
        reason = f"the zygote could not run a case: {str(outcome.get('verdict'))[:300]}"
        raise SandboxUnavailable(
            UNAVAILABLE_HELP.format(reason=reason) + " Or set sandbox.warm: false (one sandbox per case)."
        )


class ZygoteRun(BubblewrapRun):
    """The test cases of one sample: one sandbox per pass, one fresh forked process per case."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._control: socket.socket | None = None
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None

    def command(self) -> list[str]:
        return bwrap_command(
            self._settings, self._slot, runner=ZYGOTE, ro_binds=[(str(HARNESS), CASE_RUNNER)]
        )

    async def start_pass(self) -> None:
        """The next cases run in a new sandbox: nothing of the previous pass's is left to observe."""
        await self.close()

    async def run_case(self, job: dict[str, Any], call_based: bool, deadline_s: float) -> dict[str, Any]:
        """`{"verdict", "output"?}` of one case, as `BubblewrapRun.run_case`."""
        cap = self._settings.max_output_bytes + len(STARTED)
        stdout, status = bytearray(), bytearray()
        timed_out = over_limit = False
        clean = False
        transports: list[asyncio.BaseTransport] = []
        try:
            async with asyncio.timeout(deadline_s):
                if self._control is None or (self._proc is not None and self._proc.returncode is not None):
                    await self.close()  # none yet, or it died (a fresh one is as good): start one
                    await self._start()
                out, exit_status = await self._send_case(job, transports)
                while chunk := await out.read(1 << 16):
                    stdout += chunk
                    if len(stdout) > cap:
                        over_limit = True
                        break
                if not over_limit:
                    status += await exit_status.read()
            clean = not over_limit
        except TimeoutError:
            timed_out = True
        finally:
            for transport in transports:
                transport.close()
            if not clean:
                await self.close()  # kills everything the case started (and the zygote: a fresh one next)
        output = started_output(bytes(stdout))
        returncode = int(status) if status.strip().isdigit() else None
        if output is None or (returncode is None and not timed_out and not over_limit):
            await self.close()
            self._raise_zygote_failure(timed_out)
        return case_outcome(
            returncode, output, call_based=call_based, timed_out=timed_out, over_limit=over_limit
        )

    async def close(self) -> None:
        """Ends the sandbox: the zygote exits when its socket closes, and with it (bwrap's pid namespace)
        every process still there; killed as `BubblewrapRun.close` does if it has not within a grace."""
        control, self._control = self._control, None
        if control is not None:
            control.close()
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), _GRACE_S)
        await super().close()
        task, self._stderr_task = self._stderr_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _start(self) -> None:
        host_end, sandbox_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            argv = zygote_command(self.command(), sandbox_end.fileno(), self._settings.tmp_bytes)
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(sandbox_end.fileno(),),
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin"},
            )
        except FileNotFoundError as exc:
            host_end.close()
            raise SandboxUnavailable(
                UNAVAILABLE_HELP.format(reason=f"{exc.filename} is not installed")
            ) from None
        finally:
            sandbox_end.close()
        self._control = host_end
        self._stderr = bytearray()
        self._stderr_task = asyncio.create_task(_keep(self._proc.stderr, self._stderr))

    async def _send_case(
        self, job: dict[str, Any], transports: list[asyncio.BaseTransport]
    ) -> tuple[asyncio.StreamReader, asyncio.StreamReader]:
        """Hands the zygote the case's pipes and writes the job; the readers of stdout and status."""
        loop = asyncio.get_running_loop()
        job_r, job_w = os.pipe()
        out_r, out_w = os.pipe()
        status_r, status_w = os.pipe()
        try:
            if self._control is not None:
                with contextlib.suppress(OSError):  # a dead zygote: the pipes just see EOF
                    socket.send_fds(self._control, [b"case"], [job_r, out_w, status_w])
        finally:
            for fd in (job_r, out_w, status_w):
                os.close(fd)
        readers = []
        for fd in (out_r, status_r):
            reader = asyncio.StreamReader(limit=1 << 20)
            protocol = asyncio.StreamReaderProtocol(reader)
            factory = functools.partial(_same, protocol)
            transport, _ = await loop.connect_read_pipe(factory, _pipe_file(fd, "rb"))
            transports.append(transport)
            readers.append(reader)
        writer, _ = await loop.connect_write_pipe(asyncio.Protocol, _pipe_file(job_w, "wb"))
        transports.append(writer)
        writer.write(json.dumps(job).encode())
        writer.close()  # after the buffer is flushed: EOF for the runner
        return readers[0], readers[1]

    def _raise_zygote_failure(self, timed_out: bool) -> NoReturn:
        """The runner never started (or its status never came): the sandbox failed, not the program."""
        returncode = self._proc.returncode if self._proc is not None else None
        text = bytes(self._stderr).decode(errors="replace").strip()
        if not text and not timed_out:
            raise SandboxCrashed(f"the sandbox's zygote gave no case status (exit status {returncode})")
        self._raise_setup_failure(bytes(self._stderr), returncode, timed_out)


def _pipe_file(fd: int, mode: str) -> Any:
    """A file object owning a pipe's descriptor, for asyncio's pipe transports (no I/O happens here)."""
    return os.fdopen(fd, mode, buffering=0)


def _same(protocol: asyncio.StreamReaderProtocol) -> asyncio.StreamReaderProtocol:
    return protocol
