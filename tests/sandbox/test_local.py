"""The local provider for real (bubblewrap, overlay, cgroups): exec, files, timeouts, output caps, attach
from another process, stop and reap leaving nothing (processes, mounts, cgroups, folders counted)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.harness.sandbox_rootfs import host_processes_with
from rewardfleet.services.sandbox import (
    FileTooLarge,
    Resources,
    SandboxFailed,
    SandboxNotFound,
    SandboxSpec,
    SandboxSpecInvalid,
)
from rewardfleet.services.sandbox.local import LocalProvider
from rewardfleet.services.sandbox.mounts import mounts_under, unmount_layer
from tests.support.sandbox import needs_local

pytestmark = needs_local


def left_of(provider: LocalProvider, sandbox_id: str) -> dict[str, object]:
    """What a stopped sandbox must have none of."""
    return {
        "folder": provider.folder(sandbox_id).exists(),
        "mounts": [m for m in mounts_under(provider.root) if sandbox_id in m],
        "cgroups": [f for f in provider.cgroups.folders(sandbox_id) if f.exists()],
        "processes": provider.cgroups.pids(sandbox_id),
    }


NOTHING = {"folder": False, "mounts": [], "cgroups": [], "processes": set()}


async def test_exec_sees_the_image_the_spec_files_and_its_env(provider: LocalProvider, image: str) -> None:
    spec = SandboxSpec(image, workdir="/app", files={"/app/task.txt": b"do it\n"}, env={"TASK": "7"})
    sandbox = await provider.create(spec, owner="test")
    result = await sandbox.exec("cat task.txt /etc/image-marker; echo $TASK; id -u; pwd", timeout_s=10)
    assert result.exit_code == 0, result
    assert result.stdout == b"do it\nfrom the image\n7\n0\n/app\n"
    failed = await sandbox.exec(["sh", "-c", "echo oops >&2; exit 3"], timeout_s=10)
    assert (failed.exit_code, failed.stderr, failed.timed_out) == (3, b"oops\n", False)
    own = await sandbox.exec(["env"], timeout_s=10, env={"ONLY_HERE": "1"}, cwd="/tmp")
    assert b"ONLY_HERE=1" in own.stdout and b"TASK=7" in own.stdout
    fed = await sandbox.exec(["wc", "-c"], timeout_s=10, stdin=b"12345")
    assert fed.stdout.strip() == b"5"


async def test_writes_persist_between_execs_and_stay_in_the_sandbox(
    provider: LocalProvider, image: str, tiny_rootfs: Path
) -> None:
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    assert (
        await sandbox.exec("echo changed > /etc/image-marker; rm /usr/bin/yes", timeout_s=10)
    ).exit_code == 0
    assert (await sandbox.exec("cat /etc/image-marker", timeout_s=10)).stdout == b"changed\n"
    assert (tiny_rootfs / "etc/image-marker").read_text() == "from the image\n"
    assert (tiny_rootfs / "usr/bin/yes").exists()
    other = await provider.create(SandboxSpec(image), owner="test")
    assert (await other.exec("cat /etc/image-marker", timeout_s=10)).stdout == b"from the image\n"


async def test_a_command_cannot_pass_for_a_sandbox_failure(provider: LocalProvider, image: str) -> None:
    """Only bwrap's status pipe says whether the command ran: output that looks like bwrap's own error is
    the command's result; a root file system gone from under the sandbox is SandboxFailed."""
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    fake = await sandbox.exec("echo 'bwrap: cannot mount proc' >&2; exit 1", timeout_s=10)
    assert (fake.exit_code, fake.stderr) == (1, b"bwrap: cannot mount proc\n")
    with pytest.raises(SandboxSpecInvalid) as bad_cwd:
        await sandbox.exec(["true"], timeout_s=10, cwd="/absent")
    assert bad_cwd.value.field == "cwd"
    unmount_layer(provider.folder(sandbox.id))
    with pytest.raises(SandboxFailed, match="not mounted"):
        await sandbox.exec(["true"], timeout_s=10)


async def test_timeout_and_output_cap_are_results(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    slow = await sandbox.exec(["sleep", "30"], timeout_s=0.5)
    assert slow.timed_out and slow.exit_code == -9 and slow.duration_s < 10
    flood = await sandbox.exec("yes | head -c 5000000", timeout_s=20, max_output_bytes=1000)
    assert flood.truncated and len(flood.stdout) == 1000 and flood.exit_code == 0
    assert not (await sandbox.exec(["true"], timeout_s=10)).truncated


async def test_files_read_and_write_with_caps(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    await sandbox.write_file("/work/deep/file.py", b"print(1)\n", mode=0o755)
    assert await sandbox.read_file("/work/deep/file.py") == b"print(1)\n"
    assert (await sandbox.exec("stat -c %a /work/deep/file.py", timeout_s=10)).stdout == b"755\n"
    await sandbox.exec("head -c 3000 /dev/zero > /big", timeout_s=10)
    with pytest.raises(FileTooLarge) as too_large:
        await sandbox.read_file("/big", max_bytes=2000)
    assert too_large.value.size == 3000
    with pytest.raises(FileNotFoundError):
        await sandbox.read_file("/absent")
    with pytest.raises(SandboxSpecInvalid) as bad:
        await sandbox.read_file("relative")
    assert bad.value.field == "path"


async def test_host_side_file_access_does_not_follow_the_sandboxes_links(
    provider: LocalProvider, image: str, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("host only")
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    await sandbox.exec(
        f"ln -s {secret} /link; ln -s ../../../../../../{secret} /rel; mkfifo /fifo", timeout_s=10
    )
    for path in ("/link", "/rel", "/fifo"):  # the FIFO neither blocks the host nor reads as a file
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file(path)
    await sandbox.exec(f"mkdir -p /out; ln -s {tmp_path} /out/dir; ln -s /etc /out/etc", timeout_s=10)
    with pytest.raises(FileNotFoundError):
        await sandbox.write_file("/out/dir/planted", b"x")
    assert not (tmp_path / "planted").exists()
    await sandbox.write_file("/out/etc/planted", b"y")  # a link inside the sandbox is followed inside it
    assert await sandbox.read_file("/etc/planted") == b"y"


async def test_attach_from_another_process(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    await sandbox.write_file("/note", b"from the creator")
    script = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from rewardfleet.services.sandbox.images import ImageStore
        from rewardfleet.services.sandbox.local import LocalProvider

        async def main():
            root, cache = Path({str(provider.root)!r}), Path({str(provider.images.cache)!r})
            provider = LocalProvider(root, ImageStore(cache))
            sandbox = await provider.attach({sandbox.id!r})
            result = await sandbox.exec("cat /note; echo attached > /reply", timeout_s=10)
            print(result.stdout.decode())

        asyncio.run(main())
        """
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, err.decode()
    assert out.decode().strip() == "from the creator"
    assert await sandbox.read_file("/reply") == b"attached\n"
    with pytest.raises(SandboxNotFound):
        await provider.attach("0" * 32)
    with pytest.raises(SandboxNotFound):
        await provider.attach("../../etc")


async def test_stop_leaves_nothing_and_the_id_is_gone(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    await sandbox.exec("sleep 4242.5 & echo started", timeout_s=10)
    assert host_processes_with("sleep 4242.5") == []  # the exec's pid namespace took its daemon with it
    running = asyncio.create_task(sandbox.exec(["sleep", "4243.5"], timeout_s=60))
    while not host_processes_with("sleep 4243.5"):  # noqa: ASYNC110 - no event tells when bwrap has exec'd
        await asyncio.sleep(0.02)
    await sandbox.stop()
    with pytest.raises(SandboxNotFound):
        await running  # stopped under it
    assert host_processes_with("sleep 4243.5") == []
    assert left_of(provider, sandbox.id) == NOTHING
    await sandbox.stop()  # idempotent
    with pytest.raises(SandboxNotFound):
        await sandbox.exec(["true"], timeout_s=5)
    with pytest.raises(SandboxNotFound):
        await provider.attach(sandbox.id)


async def test_reap_stops_sandboxes_past_their_ttl(
    tmp_path: Path, provider: LocalProvider, image: str
) -> None:
    now = [1000.0]
    timed = LocalProvider(provider.root, provider.images, clock=lambda: now[0])
    short = await timed.create(SandboxSpec(image, ttl_s=10), owner="test")
    long = await timed.create(SandboxSpec(image, ttl_s=100), owner="test")
    assert await timed.reap() == 0
    now[0] += 11
    assert await timed.reap() == 1
    assert left_of(timed, short.id) == NOTHING
    assert (await long.exec(["true"], timeout_s=10)).exit_code == 0


async def test_reap_stops_sandboxes_of_a_dead_owner(provider: LocalProvider, image: str) -> None:
    """A process creates a sandbox, starts a command in it and dies without stopping it (a crashed
    gateway); the next reap finds the owner gone and leaves nothing."""
    script = textwrap.dedent(
        f"""
        import asyncio, os
        from pathlib import Path
        from rewardfleet.services.sandbox import SandboxSpec
        from rewardfleet.services.sandbox.images import ImageStore
        from rewardfleet.services.sandbox.local import LocalProvider

        async def main():
            root, cache = Path({str(provider.root)!r}), Path({str(provider.images.cache)!r})
            provider = LocalProvider(root, ImageStore(cache))
            sandbox = await provider.create(SandboxSpec({image!r}), owner="doomed")
            print(sandbox.id, flush=True)
            asyncio.create_task(sandbox.exec(["sleep", "4244.5"], timeout_s=600))
            while True:
                await asyncio.sleep(0.05)

        asyncio.run(main())
        """
    )
    doomed = await asyncio.create_subprocess_exec(sys.executable, "-c", script, stdout=subprocess.PIPE)
    assert doomed.stdout is not None
    sandbox_id = (await asyncio.wait_for(doomed.stdout.readline(), 60)).decode().strip()
    while not host_processes_with("sleep 4244.5"):  # noqa: ASYNC110 - no event tells when bwrap has exec'd
        await asyncio.sleep(0.02)
    doomed.kill()
    await doomed.wait()
    mine = await provider.create(SandboxSpec(image), owner="alive")
    assert await provider.reap() == 1
    assert left_of(provider, sandbox_id) == NOTHING
    assert host_processes_with("sleep 4244.5") == []
    assert (await mine.exec(["true"], timeout_s=10)).exit_code == 0


async def test_reap_clears_a_create_that_crashed_half_way(provider: LocalProvider, image: str) -> None:
    """A folder whose record was never written: left alone while a create could still be under way,
    stopped once it is old (here: its mtime set back)."""
    sandbox = await provider.create(SandboxSpec(image), owner="test")
    folder = provider.folder(sandbox.id)
    (folder / "sandbox.json").unlink()
    assert await provider.reap() == 0
    os.utime(folder, (1, 1))
    assert await provider.reap() == 1
    assert left_of(provider, sandbox.id) == NOTHING


async def test_stop_owned_stops_this_process_sandboxes(provider: LocalProvider, image: str) -> None:
    made = [await provider.create(SandboxSpec(image), owner="gateway") for _ in range(3)]
    assert await provider.stop_owned() == 3
    assert [left_of(provider, s.id) for s in made] == [NOTHING] * 3


async def test_32_sandboxes_of_one_image_share_it_and_leave_nothing(
    provider: LocalProvider, image: str, tiny_rootfs: Path
) -> None:
    spec = SandboxSpec(image, resources=Resources(disk_mb=16, memory_mb=64, pids=16))
    sandboxes = await asyncio.gather(*(provider.create(spec, owner="load") for _ in range(32)))
    results = await asyncio.gather(
        *(
            s.exec(f"echo {i} > /mine; cat /mine /etc/image-marker", timeout_s=60)
            for i, s in enumerate(sandboxes)
        )
    )
    assert [r.stdout for r in results] == [f"{i}\nfrom the image\n".encode() for i in range(32)]
    lowers = {s.record.lower for s in sandboxes}
    assert lowers == {str(tiny_rootfs)}  # one copy of the image below all 32 overlays
    assert len(mounts_under(provider.root)) == 64  # a tmpfs and an overlay each, nothing more
    await asyncio.gather(*(s.stop() for s in sandboxes))
    assert [left_of(provider, s.id) for s in sandboxes] == [NOTHING] * 32
    assert os.listdir(provider.root) == []


async def test_snapshot_and_restore_the_writable_layer(provider: LocalProvider, image: str) -> None:
    sandbox = await provider.create(SandboxSpec(image, workdir="/app"), owner="test")
    await sandbox.exec("echo one > /app/state; rm /etc/image-marker", timeout_s=10)
    saved = await sandbox.snapshot()
    await sandbox.exec(
        "echo two > /app/state; echo new > /app/extra; echo back > /etc/image-marker", timeout_s=10
    )
    await sandbox.restore(saved)
    seen = await sandbox.exec("cat /app/state; ls /app; ls /etc", timeout_s=10)
    assert seen.stdout == b"one\nstate\npasswd\n"  # the image file stays deleted: its whiteout came back
    await sandbox.exec("rm /app/state", timeout_s=10)
    await sandbox.restore(saved)
    assert await sandbox.read_file("/app/state") == b"one\n"
    with pytest.raises(SandboxSpecInvalid) as unknown:
        await sandbox.restore("../../etc")
    assert unknown.value.field == "snapshot"
    await sandbox.stop()
    assert left_of(provider, sandbox.id) == NOTHING
