"""A generic async supervisor: run one child process, watch its readiness, restart it with backoff.

Nothing here is specific to one kind of child: a `ChildSpec` names any command (model server, sglang-router,
gateway), so `rewardfleet up` supervises every child with one class. Each child runs in its own process group;
when it exits, whatever it left in its group is killed before the restart, and `stop()` leaves nothing behind.

Restart delays grow `initial_s * multiplier**n` up to `max_s`; a child that stayed up `reset_after_s` before
crashing starts again from `initial_s`. With `max_restarts` the supervisor gives up (state `failed`).
`events` keeps only the most recent `events_kept` events, so a child crash-looping for days costs no memory;
`restarts` counts them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import aiohttp

from rewardfleet.services.common.redact import redact_argv


@dataclass(frozen=True)
class ChildSpec:
    """How to run one child: `argv`, extra `env`, and a URL that answers 2xx once it is ready."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    readiness_url: str | None = None  # None: ready as soon as it is started
    # Headers of each readiness probe, read when the child starts (a key: never shown, hence not in repr).
    readiness_headers: Callable[[], Mapping[str, str]] | None = field(default=None, repr=False)
    log_path: Path | None = None  # None: output discarded
    cwd: Path | None = None
    stop_timeout_s: float = 10.0  # SIGTERM → SIGKILL

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("ChildSpec.name must not be empty")
        if not self.argv:
            raise ValueError(f"ChildSpec {self.name!r}: argv must not be empty")
        if self.stop_timeout_s <= 0:
            raise ValueError(f"ChildSpec {self.name!r}: stop_timeout_s must be positive")

    @property
    def display_argv(self) -> list[str]:
        """`argv` with every secret (flag values, URL passwords) hidden, safe to print or log."""
        return redact_argv(self.argv)


@dataclass(frozen=True)
class Backoff:
    initial_s: float = 0.5
    multiplier: float = 2.0
    max_s: float = 30.0
    reset_after_s: float = 60.0
    max_restarts: int | None = None

    def __post_init__(self) -> None:
        if self.initial_s < 0 or self.max_s < self.initial_s:
            raise ValueError("Backoff needs 0 <= initial_s <= max_s")
        if self.multiplier < 1.0:
            raise ValueError("Backoff.multiplier must be >= 1")
        if self.max_restarts is not None and self.max_restarts < 0:
            raise ValueError("Backoff.max_restarts must be >= 0")

    def delay_s(self, attempt: int) -> float:
        """Delay before restart number `attempt` (0-based) since the last reset."""
        return min(self.initial_s * self.multiplier**attempt, self.max_s)


class ChildState(enum.StrEnum):
    CREATED = "created"
    STARTING = "starting"
    READY = "ready"
    BACKOFF = "backoff"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True)
class ChildEvent:
    at: float  # time.time()
    kind: str  # started | ready | exited | restarting | gave_up | stopped
    detail: str = ""


class ChildFailed(RuntimeError):
    """The supervisor gave up on its child (too many restarts) or was stopped while waiting."""


class Supervisor:
    """Keeps one child running until `stop()`: `async with Supervisor(spec) as s: await s.wait_ready()`."""

    def __init__(
        self,
        spec: ChildSpec,
        backoff: Backoff | None = None,
        probe_interval_s: float = 0.2,
        events_kept: int = 100,
    ) -> None:
        if events_kept < 1:
            raise ValueError("Supervisor.events_kept must be >= 1")
        self.spec = spec
        self.backoff = backoff or Backoff()
        self.probe_interval_s = probe_interval_s
        self.state = ChildState.CREATED
        self.restarts = 0
        self.last_exit_code: int | None = None
        self.events: deque[ChildEvent] = deque(maxlen=events_kept)  # the most recent only
        self._proc: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._done = asyncio.Event()  # set when the supervisor stops for good (stopped or failed)
        self._stopping = False

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.returncode is None else None

    async def start(self) -> Supervisor:
        if self._task is not None:
            raise RuntimeError(f"{self.spec.name}: already started")
        if self.spec.log_path is not None:
            self.spec.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.spec.log_path, "ab")  # noqa: SIM115, ASYNC230 - closed in stop()
        if self.spec.readiness_url is not None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2.0))
        await self._spawn()
        self._task = asyncio.create_task(self._run(), name=f"supervise:{self.spec.name}")
        return self

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Wait until the child answers its readiness URL; raise if the supervisor gives up or times out."""
        ready = asyncio.create_task(self._ready.wait())
        done = asyncio.create_task(self._done.wait())
        try:
            finished, _ = await asyncio.wait(
                {ready, done}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            ready.cancel()
            done.cancel()
        if self._ready.is_set():
            return
        if self._done.is_set():
            raise ChildFailed(f"{self.spec.name}: {self.state} ({self._last_detail()})")
        if not finished:
            raise TimeoutError(f"{self.spec.name}: not ready after {timeout_s}s ({self._last_detail()})")

    async def stop(self) -> None:
        """Stop supervising, SIGTERM the child's group, SIGKILL it after `stop_timeout_s`, reap it."""
        self._stopping = True
        self._done.set()
        await self._terminate()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.state is not ChildState.FAILED:
            self.state = ChildState.STOPPED
        self._ready.clear()
        self._event("stopped")

    async def __aenter__(self) -> Supervisor:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- internals ------------------------------------------------------------------------------------
    def _event(self, kind: str, detail: str = "") -> None:
        self.events.append(ChildEvent(time.time(), kind, detail))

    def _last_detail(self) -> str:
        return next((f"{e.kind}: {e.detail}" for e in reversed(self.events) if e.detail), "no events")

    async def _spawn(self) -> None:
        self.state = ChildState.STARTING
        out = self._log if self._log is not None else asyncio.subprocess.DEVNULL
        self._proc = await asyncio.create_subprocess_exec(
            *self.spec.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, **self.spec.env},
            cwd=self.spec.cwd,
            start_new_session=True,
        )
        self._event("started", f"pid {self._proc.pid}")

    async def _run(self) -> None:
        attempt = 0
        while True:
            proc = self._proc
            if proc is None:  # pragma: no cover - _spawn always sets it
                return
            started = time.monotonic()
            probe = asyncio.create_task(self._probe(proc))
            code = await proc.wait()
            probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await probe
            self._ready.clear()
            self._kill_group(proc.pid)  # nothing the child started outlives it
            self.last_exit_code = code
            if self._stopping:
                return
            ran_s = time.monotonic() - started
            self._event("exited", f"code {code} after {ran_s:.1f}s")
            if ran_s >= self.backoff.reset_after_s:
                attempt = 0
            if self.backoff.max_restarts is not None and self.restarts >= self.backoff.max_restarts:
                self.state = ChildState.FAILED
                self._event("gave_up", f"after {self.restarts} restarts; last exit code {code}")
                self._done.set()
                return
            delay = self.backoff.delay_s(attempt)
            attempt += 1
            self.state = ChildState.BACKOFF
            self._event("restarting", f"in {delay:.2f}s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._done.wait(), timeout=delay)
            if self._stopping:
                return
            self.restarts += 1
            await self._spawn()
            if self._stopping:  # stop() ran while the new child was being spawned
                await self._terminate()
                return

    async def _probe(self, proc: asyncio.subprocess.Process) -> None:
        url = self.spec.readiness_url
        if url is None or self._session is None:
            self._mark_ready()
            return
        headers: Mapping[str, str] = {}
        if self.spec.readiness_headers is not None:
            try:
                headers = self.spec.readiness_headers()
            except (OSError, ValueError) as exc:  # a keys file gone or bad: probed without, answered 401
                self._event("probe", f"no key for the readiness probe: {exc}")
        while proc.returncode is None:
            try:
                async with self._session.get(url, headers=headers) as resp:
                    if 200 <= resp.status < 300:
                        self._mark_ready()
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(self.probe_interval_s)

    def _mark_ready(self) -> None:
        self.state = ChildState.READY
        self._ready.set()
        self._event("ready", f"pid {self.pid}")

    async def _terminate(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            self._signal_group(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout=self.spec.stop_timeout_s)
            except TimeoutError:
                self._signal_group(proc.pid, signal.SIGKILL)
                await proc.wait()
        self._kill_group(proc.pid)

    def _kill_group(self, pgid: int) -> None:
        self._signal_group(pgid, signal.SIGKILL)

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
