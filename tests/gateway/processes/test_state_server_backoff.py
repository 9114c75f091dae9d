"""The state server's restart back-off, with the waits handed to the test instead of slept: a real
`redis-server` killed while its binary is broken is retried after 0.2, 0.5, 1, 2 s..., and once it starts
again the back-off begins anew. The restart itself on real time is test_state_server.py beside this file."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bench.harness.waiting import eventually
from rewardfleet.services.gateway.processes.state_server import RESTART_BACKOFF_S, StateServer, find_binary


class Pauses:
    """The back-off waits the watcher asked for; the binary is repaired after `broken_for` of them."""

    def __init__(self, broken: Path, broken_for: int) -> None:
        self.broken = broken
        self.broken_for = broken_for
        self.asked: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, delay_s: float) -> bool:
        with self.lock:
            self.asked.append(delay_s)
            if len(self.asked) == self.broken_for:
                self.broken.unlink(missing_ok=True)
        return False  # not stopping: restart now, with no wall time spent


@pytest.fixture
def flaky(tmp_path: Path) -> Iterator[tuple[StateServer, Pauses]]:
    """A state server whose binary exits 1 while the file `broken` exists, and runs redis-server otherwise."""
    broken = tmp_path / "broken"
    wrapper = tmp_path / "redis-server"
    wrapper.write_text(f'#!/bin/sh\n[ -e "{broken}" ] && exit 1\nexec "{find_binary()}" "$@"\n')
    wrapper.chmod(0o755)
    pauses = Pauses(broken, broken_for=4)
    server = StateServer(binary=wrapper, folder=tmp_path / "state", pause=pauses)
    server.start()
    try:
        yield server, pauses
    finally:
        server.stop()


def answers(server: StateServer) -> bool:
    return bool(redis.Redis.from_url(server.url).ping())


def test_failed_restarts_back_off_then_a_success_starts_over(flaky: tuple[StateServer, Pauses]) -> None:
    server, pauses = flaky
    pauses.broken.touch()
    first = server.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    eventually(lambda: server.restarts == 1 and answers(server), what="the restart once the binary is back")
    assert pauses.asked == list(RESTART_BACKOFF_S[:4])  # one wait per attempt, each longer than the last
    second = server.pid
    assert second is not None and second != first
    os.kill(second, signal.SIGKILL)
    eventually(lambda: server.restarts == 2 and answers(server), what="the second restart")
    assert pauses.asked[4:] == [RESTART_BACKOFF_S[0]]  # a success reset the back-off
