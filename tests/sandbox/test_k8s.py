"""The kubernetes provider, driven through the official client against a stand-in API server that answers
in a real API server's shapes (`k8s_apiserver.py`: not a live cluster, said plainly; the pods' containers
are local sandboxes)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s_client

from rewardfleet.services.sandbox import (
    FileTooLarge,
    Resources,
    SandboxFailed,
    SandboxNotFound,
    SandboxSpec,
    SandboxSpecInvalid,
    VerifierMounts,
)
from rewardfleet.services.sandbox.k8s import KubernetesProvider
from rewardfleet.services.sandbox.local import LocalProvider
from tests.sandbox.k8s_apiserver import FakeApiServer, serving
from tests.support.sandbox import needs_local

pytestmark = needs_local
TASK_IMAGE = "registry.example/task:1"


@pytest.fixture
def api_server(provider: LocalProvider, tiny_rootfs: Path) -> Iterator[tuple[FakeApiServer, str]]:
    fake = FakeApiServer(provider, {TASK_IMAGE: f"dir:{tiny_rootfs}"})
    with serving(fake) as url:
        yield fake, url


@pytest.fixture
def k8s(api_server: tuple[FakeApiServer, str]) -> KubernetesProvider:
    _, url = api_server
    api = k8s_client.ApiClient(k8s_client.Configuration(host=url))
    return KubernetesProvider(api, "sandboxes", images={"dir:/task": TASK_IMAGE}, runtime_class="gvisor")


async def test_pod_has_the_limits_and_exec_reads_output_and_exit_codes(
    k8s: KubernetesProvider, api_server: tuple[FakeApiServer, str]
) -> None:
    fake, _ = api_server
    spec = SandboxSpec(
        "dir:/task",
        workdir="/app",
        env={"TASK": "7"},
        files={"/app/in.txt": b"data\n"},
        resources=Resources(cpus=0.5, memory_mb=256, disk_mb=64),
        ttl_s=600,
    )
    sandbox = await k8s.create(spec, owner="session-1")
    pod = fake.pods[f"rf-sandbox-{sandbox.id}"]
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "64Mi"}
    assert pod["spec"]["runtimeClassName"] == "gvisor"
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert pod["spec"]["activeDeadlineSeconds"] == 600
    assert pod["metadata"]["labels"]["rewardfleet.io/network"] == "off"
    assert container["securityContext"]["allowPrivilegeEscalation"] is False

    done = await sandbox.exec("cat in.txt; echo $TASK $EXTRA; pwd", timeout_s=10, env={"EXTRA": "x"})
    assert (done.exit_code, done.stdout) == (0, b"data\n7 x\n/app\n")
    failed = await sandbox.exec(["sh", "-c", "echo no >&2; exit 3"], timeout_s=10, cwd="/tmp")
    assert (failed.exit_code, failed.stderr) == (3, b"no\n")
    fed = await sandbox.exec(["wc", "-c"], timeout_s=10, stdin=b"12345")
    assert fed.stdout.strip() == b"5"
    slow = await sandbox.exec(["sleep", "30"], timeout_s=1)
    assert slow.timed_out and slow.exit_code == -9
    capped = await sandbox.exec("yes | head -c 100000", timeout_s=10, max_output_bytes=100)
    assert capped.truncated and len(capped.stdout) == 100


async def test_files_through_exec(k8s: KubernetesProvider) -> None:
    sandbox = await k8s.create(SandboxSpec("dir:/task"), owner="s")
    await sandbox.write_file("/work/a/b.txt", b"hello", mode=0o600)
    assert await sandbox.read_file("/work/a/b.txt") == b"hello"
    assert (await sandbox.exec("stat -c %a /work/a/b.txt", timeout_s=10)).stdout == b"600\n"
    with pytest.raises(FileTooLarge):
        await sandbox.read_file("/work/a/b.txt", max_bytes=3)
    with pytest.raises(FileNotFoundError):
        await sandbox.read_file("/absent")


async def test_verifier_copies_tests_in_and_the_fresh_folder_out(
    k8s: KubernetesProvider, tmp_path: Path
) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    sandbox = await k8s.create(SandboxSpec("dir:/task"), owner="s")
    await sandbox.exec("mkdir -p /logs/verifier; echo forged > /logs/verifier/reward.txt", timeout_s=10)
    verify = await sandbox.exec(
        ["sh", "/tests/test.sh"],
        timeout_s=30,
        verifier=VerifierMounts(read_only={"/tests": str(tests)}, fresh=["/logs/verifier"]),
    )
    assert verify.exit_code == 0, verify
    assert verify.collected == {"/logs/verifier/reward.txt": b"1\n"}
    after = await sandbox.exec("ls -A /tests /logs/verifier", timeout_s=10)
    assert after.stdout == b"/logs/verifier:\n\n/tests:\n"


async def test_attach_stop_reap_and_errors(
    k8s: KubernetesProvider, api_server: tuple[FakeApiServer, str]
) -> None:
    fake, _ = api_server
    sandbox = await k8s.create(SandboxSpec("dir:/task", workdir="/tmp"), owner="s")
    again = await k8s.attach(sandbox.id)
    assert (await again.exec("pwd", timeout_s=10)).stdout == b"/tmp\n"
    await sandbox.stop()
    await sandbox.stop()
    assert fake.pods == {}
    with pytest.raises(SandboxNotFound):
        await k8s.attach(sandbox.id)
    with pytest.raises(SandboxNotFound):
        await sandbox.exec(["true"], timeout_s=5)
    with pytest.raises(SandboxSpecInvalid) as unmapped:
        await k8s.create(SandboxSpec("dir:/elsewhere"), owner="s")
    assert unmapped.value.field == "image"
    unpullable = KubernetesProvider(
        k8s.core.api_client, "sandboxes", images={"dir:/task": "registry.example/none:1"}
    )
    with pytest.raises(SandboxFailed, match="422"):
        await unpullable.create(SandboxSpec("dir:/task"), owner="s")

    now = [1000.0]
    timed = KubernetesProvider(
        k8s.core.api_client, "sandboxes", images={"dir:/task": TASK_IMAGE}, clock=lambda: now[0]
    )
    short = await timed.create(SandboxSpec("dir:/task", ttl_s=10), owner="s")
    await timed.create(SandboxSpec("dir:/task", ttl_s=100), owner="s")
    assert await timed.reap() == 0
    now[0] += 11
    assert await timed.reap() == 1
    assert f"rf-sandbox-{short.id}" not in fake.pods and len(fake.pods) == 1
    await asyncio.gather(
        *(timed.stop(p["metadata"]["labels"]["rewardfleet.io/sandbox"]) for p in list(fake.pods.values()))
    )
