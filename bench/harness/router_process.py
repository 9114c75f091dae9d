"""`RouterProcess`, for tests and benchmarks: one sglang-router child with readiness, workers, a clean stop.

The fleet runs its routers under `rewardfleet.services.fleet.supervisor.Supervisor`; tests and benchmarks that
need one router, synchronously, with its admin API at hand, use this instead.

The `sglang-router` script runs the Rust router inside its Python process (pyo3), so the child's pid is the
router's. It gets its own process group, so `stop()` can signal everything it started and leave no orphan.
Its console output, ANSI-coloured even when redirected, goes to `log_path`; `log_tail()` strips the colours.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import IO

from bench.harness.router_admin import Readiness, RouterAdmin, RouterAdminError, WorkerInfo
from bench.harness.waiting import eventually
from rewardfleet.router.command import build_command
from rewardfleet.router.config import RouterConfig

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class RouterStartError(RuntimeError):
    """The router exited or did not become ready in time; the message ends with its log."""


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


class RouterProcess:
    """Start, watch and stop one router. Also usable as a context manager (start on enter, stop on exit)."""

    def __init__(self, cfg: RouterConfig, log_path: Path, env: dict[str, str] | None = None) -> None:
        self.cfg = cfg
        self.log_path = log_path
        self.env = env
        self.admin = RouterAdmin(cfg.url)
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # --- identity -------------------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """Bare `host:port` (verl's `reward_router_address`)."""
        return self.cfg.address

    @property
    def url(self) -> str:
        return self.cfg.url

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # --- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> RouterProcess:
        if self.is_alive():
            raise RuntimeError(f"router on {self.address} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            build_command(self.cfg),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(self.env or {})},
            start_new_session=True,
        )
        return self

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def wait_ready(self, timeout_s: float = 60.0, min_healthy_workers: int | None = None) -> Readiness:
        """Poll until the router is up with at least `min_healthy_workers` healthy workers.

        `min_healthy_workers` defaults to every configured worker URL (1 with service discovery). With 0 the
        router only has to answer `/liveness` (its `/readiness` is 503 while it has no healthy worker).
        """
        if min_healthy_workers is None:
            min_healthy_workers = len(self.cfg.worker_urls) or (1 if self.cfg.service_discovery else 0)

        def ready() -> Readiness:
            if not self.is_alive():
                raise RouterStartError(
                    f"router on {self.address} exited with {self.returncode()}:\n{self.log_tail()}"
                )
            if min_healthy_workers == 0:
                if not self.admin.is_live():
                    raise RouterAdminError("not live")
                return self.admin.readiness()
            readiness = self.admin.readiness()
            if not (readiness.ready and readiness.healthy_workers >= min_healthy_workers):
                raise RouterAdminError(readiness.model_dump_json())
            return readiness

        try:
            return eventually(
                ready, timeout_s=timeout_s, interval_s=0.1, what="readiness", retry_on=(RouterAdminError,)
            )
        except AssertionError as exc:
            raise RouterStartError(f"router on {self.address} not ready: {exc}\n{self.log_tail()}") from exc

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """SIGTERM the router's process group, SIGKILL it after `timeout_s`; reap it. Returns the exit code.

        The router drains in-flight requests for up to `shutdown_grace_period_secs` on SIGTERM; `timeout_s`
        bounds that wait here.
        """
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                self._signal_group(signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    self._signal_group(signal.SIGKILL)
                    proc.wait(timeout=timeout_s)
            # Anything the router left in its group goes too.
            self._signal_group(signal.SIGKILL)
        if self._log is not None:
            self._log.close()
            self._log = None
        return proc.returncode if proc is not None else None

    def kill(self) -> None:
        """SIGKILL the router (a crash, for tests); `stop()` still reaps it."""
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: int) -> None:
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, sig)

    def __enter__(self) -> RouterProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- observation and workers ------------------------------------------------------------------------
    def log_tail(self, max_chars: int = 4000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return strip_ansi(text)[-max_chars:]

    def readiness(self) -> Readiness:
        return self.admin.readiness()

    def list_workers(self) -> list[WorkerInfo]:
        return self.admin.list_workers()

    def add_worker(self, url: str, wait_healthy_s: float | None = 30.0) -> str:
        return self.admin.add_worker(url, wait_healthy_s)

    def remove_worker(self, url_or_id: str, wait_gone_s: float | None = 30.0) -> None:
        self.admin.remove_worker(url_or_id, wait_gone_s)
