"""Shared test plumbing: free loopback ports and real child processes that are waited for and reaped.

Every test server here is a real process on 127.0.0.1, started the way a user starts it (the `rewardfleet`
CLI or the sglang-router binary), so tests exercise the same code paths as production.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

from bench.harness.waiting import eventually

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    """A port the kernel says is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_in_flight(url: str, n: int, timeout_s: float = 60) -> None:
    """Until the gateway at `url` handles `n` requests besides the /metrics scrape that asks.

    The synchronisation point for tests that need requests admitted before they act: a fixed sleep is too
    short on a loaded machine."""

    def in_flight() -> float:
        for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
            if line.startswith("rewardfleet_gateway_inflight_requests "):
                return float(line.split()[1]) - 1
        return 0.0

    eventually(lambda: in_flight() >= n, timeout_s=timeout_s, what=f"{n} requests in flight at once")


def rewardfleet_cmd(*args: str) -> list[str]:
    """The `rewardfleet` CLI of the interpreter running the tests."""
    return [sys.executable, "-m", "rewardfleet.services.cli", *args]


class ChildProcess:
    """A child process in its own process group, with its output kept in a log file for failure messages."""

    def __init__(self, cmd: Sequence[str], log_path: Path, env: dict[str, str] | None = None) -> None:
        self.cmd = list(cmd)
        self.log_path = log_path
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            self.cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=REPO_ROOT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_http(self, url: str, timeout_s: float = 60.0, ok: Sequence[int] = (200,)) -> httpx.Response:
        """Poll `url` until it answers with a status in `ok`; fail with the log if it dies or times out."""

        def answered() -> httpx.Response:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.cmd[:4]} exited with {self.proc.returncode}:\n{self.log()[-4000:]}"
                )
            resp = httpx.get(url, timeout=2.0)
            if resp.status_code not in ok:
                raise AssertionError(f"HTTP {resp.status_code}")  # not yet: the failure names the last one
            return resp

        return eventually(
            answered,
            timeout_s=timeout_s,
            interval_s=0.1,
            what=f"{url} to answer {list(ok)}",
            retry_on=(httpx.HTTPError, AssertionError),
            detail=lambda: self.log()[-4000:],
        )

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """SIGTERM the whole process group, then SIGKILL after `timeout_s`. Returns the exit code."""
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(timeout=timeout_s)
        # Reap anything left in the group (e.g. worker processes) so no test leaks processes.
        self.signal(signal.SIGKILL)
        self._log.close()
        return self.proc.returncode


@contextlib.contextmanager
def running(cmd: Sequence[str], log_path: Path, env: dict[str, str] | None = None) -> Iterator[ChildProcess]:
    child = ChildProcess(cmd, log_path, env)
    try:
        yield child
    finally:
        child.stop()
