"""The gateway image runs the `code` built-in under the deploy files' settings, as far as this machine can
apply them: the image built with buildah (tests/deploy/images.py), its entrypoint run as its user 10001
with no capability, an unmasked /proc, a pivot_root runtime (bwrap standing in for Docker's runc, see
images.start_unconfined) and our seccomp profile (deploy/seccomp/gateway.json, compiled with libseccomp
and loaded by that runtime just before the entrypoint). The gateway's own bwrap then builds each sandbox
under the profile. AppArmor is not on this machine: its setting is not exercised here.

The same image under the profile less `unshare` (what Docker's default profile is for bwrap): the gateway
starts, and `/ready` names the missing seccomp setting. Slow: builds the gateway image (~3-5 min here).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import free_port
from bench.harness.waiting import eventually
from tests.deploy import images as im
from tests.deploy import seccomp_profile as sp
from tests.deploy.helpers import DOCKER, tool

pytestmark = pytest.mark.timeout(1800)

RIGHT = {
    "data_source": "codecontests",
    "reward_fn": "code",
    "solution_str": "```python\nprint(int(input()) * 2)\n```",
    "ground_truth": {"inputs": ["21\n", "5\n"], "outputs": ["42\n", "10\n"]},
}
WRONG = {**RIGHT, "solution_str": "```python\nprint(int(input()) + 2)\n```"}


@dataclass(frozen=True)
class Image:
    rootfs: Path
    config: dict[str, Any]
    logs: Path


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    b = im.Buildah(tool("buildah"))
    logs = tmp_path_factory.mktemp("gateway-image")
    if not (im.BASE_ROOTFS / "usr/bin/python3").is_file():
        tool("debootstrap")
    base = im.base_image_name(DOCKER / "gateway.Dockerfile")
    if not b.has_image(base):
        b.import_rootfs(im.ensure_base_rootfs(), base)
    tag = "localhost/rewardfleet/gateway:sandbox-test"
    started = time.perf_counter()
    b.build(DOCKER / "gateway.Dockerfile", tag, logs / "build-gateway.log")
    print(f"\nbuilt gateway: {time.perf_counter() - started:.0f}s")
    with b.container(tag) as ctr, b.mounted(ctr) as rootfs:
        yield Image(rootfs, b.config(tag), logs)


def _start(image: Image, profile: dict[str, Any], name: str) -> tuple[Any, str, Path]:
    port = free_port()
    log = image.logs / f"{name}.log"
    argv = list(image.config["Entrypoint"]) + list(image.config.get("Cmd") or [])
    fd = sp.bpf_fd(profile, image.logs)
    try:
        proc = im.start_unconfined(
            image.rootfs,
            image.config,
            argv,
            log,
            env={"REWARDFLEET_GATEWAY_PORT": str(port)},
            seccomp_bpf_fd=fd,
        )
    finally:
        os.close(fd)
    return proc, f"http://127.0.0.1:{port}", log


def _wait_ready(url: str, proc: Any, log: Path, timeout_s: float = 240) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        if proc.poll() is not None:  # not retried: the gateway is gone
            raise RuntimeError(f"gateway exited {proc.returncode}:\n{log.read_text()[-4000:]}")
        resp = httpx.get(f"{url}/ready", timeout=5)
        return resp.json() if resp.status_code == 200 else None

    return eventually(
        ready,
        timeout_s=timeout_s,
        interval_s=0.5,
        what=f"{url}/ready 200",
        retry_on=(httpx.HTTPError,),
        detail=lambda: log.read_text()[-4000:],
    )


def _status_of(pid: int) -> dict[str, str]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {k: v.strip() for k, v in fields.items()}


def test_gateway_image_scores_code_under_our_seccomp_profile(image: Image) -> None:
    proc, url, log = _start(image, sp.load(), "gateway-profile")
    try:
        ready = _wait_ready(url, proc, log)
        gateway_pid = _gateway_pid(proc.pid)
        status = _status_of(gateway_pid)
        uid_map = Path(f"/proc/{gateway_pid}/uid_map").read_text().split()
        right = httpx.post(f"{url}/score", json=RIGHT, timeout=60)
        wrong = httpx.post(f"{url}/score", json=WRONG, timeout=60)
    finally:
        im.stop(proc)
    out = log.read_text()
    # The gateway ran as a confined container process: filtered, no capability, the image's user (10001 in
    # the runtime's user namespace; the stand-in runtime maps it to the root that started it, where Docker
    # runs it as uid 10001 of the host: either way it holds no capability outside its own namespaces).
    assert status["Seccomp"] == "2" and status["NoNewPrivs"] == "1", status
    assert status["CapEff"] == "0000000000000000" and status["CapPrm"] == "0000000000000000", status
    assert uid_map[0] == "10001" and uid_map[2] == "1", uid_map
    assert ready["startup_checks"]["code"]["ok"] is True, ready
    assert "code: start-up check passed: sandbox backend: bubblewrap" in out, out[-3000:]
    assert right.status_code == 200 and right.json()["status"] == "ok", right.text
    assert right.json()["score"] == 1.0 and right.json()["extra"]["verdicts"] == ["pass", "pass"], right.text
    assert wrong.json()["score"] == 0.0, wrong.text
    assert wrong.json()["extra"]["verdicts"] == ["wrong_answer", "wrong_answer"], wrong.text


def test_gateway_image_names_a_missing_seccomp_setting(image: Image) -> None:
    profile = sp.load()
    profile["syscalls"] = [
        {**r, "names": [n for n in r["names"] if n != "unshare"]} for r in profile["syscalls"]
    ]
    proc, url, log = _start(image, profile, "gateway-no-unshare")
    try:
        ready = _wait_ready(url, proc, log)
        code = httpx.post(f"{url}/score", json=RIGHT, timeout=60)
    finally:
        im.stop(proc)
    check = ready["startup_checks"]["code"]
    assert check["ok"] is False and "missing setting: seccomp: " in check["detail"], json.dumps(ready)
    assert code.json()["status"] == "error" and code.json()["error"]["type"] == "SandboxUnavailable", (
        code.text
    )


def _gateway_pid(runtime_pid: int) -> int:
    """The gateway process, below the runtime (bwrap forks it): the first descendant without exactly one
    child (the gateway starts its worker pool's processes; every descendant inherits the same filter)."""
    pid = runtime_pid
    while True:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if len(children) != 1:
            return pid
        pid = int(children[0])
