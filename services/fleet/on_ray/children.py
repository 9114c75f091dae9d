"""One process owned by a Ray actor: started from a thread that lives as long as it, killed with the actor.

The child runs in its own process group and gets `PR_SET_PDEATHSIG`, so when the actor's worker dies (its node
lost, `ray.kill`) the kernel kills the child too. When the child exits on its own, `on_exit` is called: the
actors exit then, so Ray restarts them (`max_restarts`) instead of a supervisor inside them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from rewardfleet.services.common.parent_death import die_with_parent

HOST, PORT, PYTHON = "{host}", "{port}", "{python}"


def free_port(host: str) -> int:
    """A port free on `host` of this node now (the child binds it a moment later)."""
    return free_ports(host, 1)[0]


def free_ports(host: str, n: int) -> list[int]:
    """`n` distinct ports free on `host` now: each stays bound until all are picked, so two picks made one
    after the other cannot return the same port."""
    with contextlib.ExitStack() as held:
        ports = []
        for _ in range(n):
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def with_placeholders(argv: Sequence[str], python: str) -> list[str]:
    """A planned command with its `--host`/`--port` values and interpreter replaced by placeholders, filled in
    by `fill` on the node that runs it."""
    out = [PYTHON if arg == python else arg for arg in argv]
    for flag, holder in (("--host", HOST), ("--port", PORT)):
        if flag in out:
            out[out.index(flag) + 1] = holder
    return out


def fill(argv: Sequence[str], host: str, port: int, python: str) -> list[str]:
    values = {HOST: host, PORT: str(port), PYTHON: python}
    return [values.get(arg, arg) for arg in argv]


def wait_http(
    url: str, timeout_s: float, alive: Callable[[], bool], headers: Mapping[str, str] | None = None
) -> None:
    """Until `url` answers 2xx; raise TimeoutError after `timeout_s`, RuntimeError once `alive()` is false."""
    deadline = time.monotonic() + timeout_s
    while True:
        if not alive():
            raise RuntimeError(f"{url}: the process serving it exited")
        request = urllib.request.Request(url, headers=dict(headers or {}))
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=2.0) as resp:
            if 200 <= resp.status < 300:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}: not ready after {timeout_s:.0f} s")
        time.sleep(0.2)


class OwnedChild:
    """Runs `argv` until `stop()`; calls `on_exit(name, code)` if it exits before that."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        on_exit: Callable[[str, int], None],
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.on_exit = on_exit
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self._started = threading.Event()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._own, name=f"own:{name}", daemon=True)

    def start(self) -> OwnedChild:
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _own(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            try:
                self.proc = subprocess.Popen(
                    self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                    start_new_session=True, preexec_fn=die_with_parent(),
                )  # fmt: skip
            except OSError as exc:
                self._error = exc
                return
            finally:
                self._started.set()
            code = self.proc.wait()
        _signal_group(self.proc.pid, signal.SIGKILL)  # nothing it started outlives it
        if not self._stopping:
            self.on_exit(self.name, code)

    def stop(self, timeout_s: float) -> None:
        """SIGTERM the child's group (a gateway drains), SIGKILL after `timeout_s`; wait for the owner."""
        self._stopping = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
        self._thread.join(timeout=10)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
