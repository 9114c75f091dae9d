"""A real `redis-server` (the Debian package) on a free 127.0.0.1 port: no persistence, killable and
restartable on the same port, as the store-failure tests need."""

from __future__ import annotations

import shutil
import signal
import socket
from pathlib import Path

from bench.harness.processes import ChildProcess, free_port
from bench.harness.waiting import eventually

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith((b"+PONG", b"-NOAUTH"))  # up (a password is not needed to know)
    except OSError:
        return False


class RedisServer:
    def __init__(self, tmp: Path, port: int | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.tmp = tmp
        self.port = port or free_port()
        self.extra_args = extra_args
        self.proc: ChildProcess | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> RedisServer:
        self.starts += 1
        cmd = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.tmp),
            *self.extra_args,
        ]
        self.proc = ChildProcess(cmd, self.tmp / f"redis-{self.port}-{self.starts}.log")
        proc = self.proc

        def answers() -> bool:
            if proc.proc.poll() is not None:
                raise RuntimeError(f"redis-server did not start:\n{proc.log()[-2000:]}")
            return _answers_ping(self.port)

        eventually(answers, timeout_s=timeout_s, interval_s=0.05, what="redis-server answering PING",
                   retry_on=(), detail=lambda: proc.log()[-2000:])  # fmt: skip
        return self

    def kill(self) -> None:
        """SIGKILL: the store vanishes mid-conversation, its data with it (no persistence)."""
        if self.proc is not None:
            self.proc.signal(signal.SIGKILL)
            self.proc.proc.wait(timeout=10)
            self.proc.stop()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None
