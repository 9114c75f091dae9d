"""The escape set for episode sandboxes (local provider): what an agent's commands must not reach or
survive. Each probe is paired with a control showing the probe itself works where access is allowed."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.sandbox_rootfs import host_processes_with
from rewardfleet.services.sandbox import Resources, SandboxNotFound, SandboxSpec, VerifierMounts
from rewardfleet.services.sandbox.local import LocalProvider
from tests.support.sandbox import needs_local

pytestmark = needs_local


@pytest.fixture
def loopback_server() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 that answers 'host' to every connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"host\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


async def test_host_files_are_not_there(provider: LocalProvider, image: str, tmp_path: Path) -> None:
    (tmp_path / "host-only-marker").write_text("secret")
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    found = await sandbox.exec(
        "find / -path /proc -prune -o -name host-only-marker -print; ls /work /home; cat /etc/hostname",
        timeout_s=30,
    )
    assert found.stdout == b""
    assert b"No such file" in found.stderr


async def test_host_loopback_is_unreachable(
    provider: LocalProvider, image: str, loopback_server: int
) -> None:
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{loopback_server} && head -n1 <&3"
    closed = await provider.create(SandboxSpec(image), owner="test")
    refused = await closed.exec(["bash", "-c", probe], timeout_s=10)
    assert refused.exit_code != 0 and refused.stdout == b""
    opened = await provider.create(SandboxSpec(image, network=True), owner="test")  # the control
    reached = await opened.exec(["bash", "-c", probe], timeout_s=10)
    assert reached.stdout == b"host\n"


async def test_gateway_environment_is_invisible(
    provider: LocalProvider, image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDFLEET_GATEWAY_SECRET", "s3cr3t-value")
    sandbox = await provider.create(SandboxSpec(image, env={"VISIBLE": "yes"}), owner="test")
    seen = await sandbox.exec("env; cat /proc/*/environ", timeout_s=10)
    assert b"VISIBLE=yes" in seen.stdout
    assert b"s3cr3t" not in seen.stdout + seen.stderr


async def test_another_sandbox_is_invisible_and_unsignalable(provider: LocalProvider, image: str) -> None:
    spec = SandboxSpec(image)
    first, second = [await provider.create(spec, owner=f"agent-{i}") for i in range(2)]
    await first.exec("echo mine > /root/first-secret", timeout_s=10)
    running = asyncio.create_task(first.exec(["sleep", "4245.5"], timeout_s=60))
    while not (pids := host_processes_with("sleep 4245.5")):  # noqa: ASYNC110 - no event for bwrap's exec
        await asyncio.sleep(0.02)
    probe = await second.exec(
        f"find / -path /proc -prune -o -name first-secret -print; ls /proc | grep -c '^[0-9]'; "
        f"kill -9 {pids[0]} || echo refused",
        timeout_s=30,
    )
    lines = probe.stdout.decode().split()
    assert "first-secret" not in probe.stdout.decode()
    assert int(lines[0]) <= 5  # its own shell, find/ls, bwrap's init: not the other sandbox's sleep
    assert "refused" in lines
    assert host_processes_with("sleep 4245.5") == pids  # still running
    await first.stop()
    with pytest.raises(SandboxNotFound):
        await running


async def test_no_daemon_survives_an_exec_or_a_stop(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    await sandbox.exec("(sleep 4246.5 &) & (trap '' HUP TERM; sleep 4247.5) & echo bye", timeout_s=10)
    assert host_processes_with("sleep 4246.5") == host_processes_with("sleep 4247.5") == []
    for _ in range(250):  # the killed namespace's last processes leave the cgroup as they are reaped
        if not provider.cgroups.pids(sandbox.id):
            break
        await asyncio.sleep(0.02)
    assert provider.cgroups.pids(sandbox.id) == set()  # a daemon would still be there after 5 s
    await sandbox.stop()
    assert host_processes_with("sleep 424") == []


async def test_fork_bomb_is_bounded_by_the_pids_limit(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image, resources=Resources(pids=32)), owner="test")
    bomb = await sandbox.exec(["bash", "-c", "b() { b | b & }; b; sleep 2"], timeout_s=4)
    assert bomb.exit_code != 0 or bomb.timed_out or b"fork" in bomb.stderr
    pids_folder = next(f for f in provider.cgroups.folders(sandbox.id) if (f / "pids.events").exists())
    refused = int((pids_folder / "pids.events").read_text().split()[1])
    assert refused > 0  # the kernel refused forks at the limit
    for _ in range(250):  # the killed namespace's last processes leave the cgroup as they are reaped
        if not provider.cgroups.pids(sandbox.id):
            break
        await asyncio.sleep(0.02)
    assert provider.cgroups.pids(sandbox.id) == set()
    after = await sandbox.exec(["echo", "alive"], timeout_s=10)
    assert after.stdout == b"alive\n"


async def test_disk_fill_is_bounded_by_the_disk_limit(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image, resources=Resources(disk_mb=8)), owner="test")
    fill = await sandbox.exec("dd if=/dev/zero of=/fill bs=1M count=64; stat -c %s /fill", timeout_s=30)
    assert b"No space left" in fill.stderr
    assert int(fill.stdout.split()[-1]) <= 8 << 20
    await sandbox.exec("rm /fill", timeout_s=10)
    assert (await sandbox.exec("echo ok > /after", timeout_s=10)).exit_code == 0


async def test_memory_is_bounded_by_the_memory_limit(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image, resources=Resources(memory_mb=32)), owner="test")
    hog = await sandbox.exec(
        ["bash", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}"], timeout_s=30
    )
    assert hog.stdout != b"200000000\n" and hog.exit_code != 0


async def test_verifier_files_are_invisible_to_the_agent(
    provider: LocalProvider, image: str, tmp_path: Path
) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(
        "cat /logs/verifier/reward.txt 2>/dev/null; echo 1 > /logs/verifier/reward.txt\n"
    )
    (tests / "expected-answer").write_text("42")
    sandbox = await provider.create(SandboxSpec(image), owner="agent")
    # The agent forges a reward, plants a link where the verifier's folder goes, and hunts for the tests.
    agent = await sandbox.exec(
        "mkdir -p /logs; echo 1 > /forged; ln -s /etc /logs/verifier; mkdir -p /logs2/verifier; "
        "echo 1 > /logs2/verifier/reward.txt; find / -path /proc -prune -o -name expected-answer -print",
        timeout_s=30,
    )
    assert agent.stdout == b""
    verify = await sandbox.exec(
        ["sh", "/tests/test.sh"],
        timeout_s=30,
        verifier=VerifierMounts(read_only={"/tests": str(tests)}, fresh=["/logs/verifier"]),
    )
    assert verify.exit_code == 0, verify
    assert verify.stdout == b""  # the fresh folder did not hold the agent's planted link's target
    assert verify.collected == {"/logs/verifier/reward.txt": b"1\n"}
    after = await sandbox.exec("ls -A /tests /logs/verifier; cat /etc/reward.txt", timeout_s=10)
    assert after.stdout == b"/logs/verifier:\n\n/tests:\n"  # empty mount points; no reward in /etc
    assert (tests / "test.sh").exists() and sorted(os.listdir(tests)) == ["expected-answer", "test.sh"]
    # A link planted on the way to the mount point is replaced by a real folder, not followed.
    await sandbox.exec("rm -rf /logs; ln -s /etc /logs", timeout_s=10)
    linked = await sandbox.exec(
        ["sh", "/tests/test.sh"],
        timeout_s=30,
        verifier=VerifierMounts(read_only={"/tests": str(tests)}, fresh=["/logs/verifier"]),
    )
    assert linked.collected == {"/logs/verifier/reward.txt": b"1\n"}
    assert (await sandbox.exec("ls /etc", timeout_s=10)).stdout.split() == [b"image-marker", b"passwd"]
    readonly = await sandbox.exec(
        "echo tampered > /tests/test.sh",
        timeout_s=10,
        verifier=VerifierMounts(read_only={"/tests": str(tests)}),
    )
    assert readonly.exit_code != 0 and b"tampered" not in (tests / "test.sh").read_bytes()
    one_file = await sandbox.exec(
        "cat /expected",
        timeout_s=10,
        verifier=VerifierMounts(read_only={"/expected": str(tests / "expected-answer")}),
    )
    assert one_file.stdout == b"42"
    assert (await sandbox.exec("wc -c < /expected", timeout_s=10)).stdout.strip() == b"0"
