"""The three images, built from docker/*.Dockerfile with buildah and run with their own entrypoints.

No Docker engine and no registry here (see tests/deploy/images.py): the pinned Python base is a stand-in made
with debootstrap, so this verifies everything but the base image itself. Each image then runs its real
ENTRYPOINT (+ CMD) with `buildah run --network host`: the gateway answers `/score`, the model server serves a
tiny model and answers `/v1/embeddings`, and the router starts against that model server and proxies to it.
A model mounted with root-only file permissions makes the (uid 10001) model server fail with a clear error.

The model-server image takes torch from `TORCH_INDEX_URL` / `TORCH_FIND_LINKS` build arguments; this machine's
pip finds torch 2.13.0 (a CPU build) in a local find-links folder, which the build mounts read-only.
Slow: ~7 min for the three builds here, plus ~1 min of runs; it prints the time of each step.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import free_port
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from tests.deploy import images as im
from tests.deploy.helpers import DOCKER, tool

# The three builds take minutes (pip downloads every dependency; vfs copies each layer): the first test, which
# waits for them, needs more than the suite's 300 s default.
pytestmark = pytest.mark.timeout(1800)

TORCH_VERSION = "2.13.0"
PYPI = "https://pypi.org/simple"


@dataclass(frozen=True)
class Built:
    buildah: im.Buildah
    tags: dict[str, str]
    logs: Path
    containers: dict[str, str]  # one working container per image, shared by the tests (vfs copies each)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    b = im.Buildah(tool("buildah"))
    logs = tmp_path_factory.mktemp("image-logs")
    started = time.perf_counter()
    if not (im.BASE_ROOTFS / "usr/bin/python3").is_file():
        tool("debootstrap")
    rootfs = im.ensure_base_rootfs()
    base = im.base_image_name(DOCKER / "gateway.Dockerfile")
    if not b.has_image(base):
        b.import_rootfs(rootfs, base)
    print(f"\nbase image {base} (debootstrap stand-in): {time.perf_counter() - started:.0f}s")
    wheels = im.local_torch_wheels(TORCH_VERSION)
    torch_args = ["--build-arg", f"TORCH_INDEX_URL={PYPI}"]
    if wheels is not None:
        torch_args += [
            "-v",
            f"{wheels}:/mnt/torch-wheels:ro",
            "--build-arg",
            "TORCH_FIND_LINKS=/mnt/torch-wheels",
        ]
    extra = {"gateway": [], "router": [], "model-server": torch_args}
    tags = {}
    for name, args in extra.items():
        tag = f"localhost/rewardfleet/{name}:test"
        t0 = time.perf_counter()
        b.build(DOCKER / f"{name}.Dockerfile", tag, logs / f"build-{name}.log", *args)
        print(f"built {name}: {time.perf_counter() - t0:.0f}s")
        tags[name] = tag
    print(f"all images: {time.perf_counter() - started:.0f}s")
    with ExitStack() as stack:
        containers = {name: stack.enter_context(b.container(tag)) for name, tag in tags.items()}
        yield Built(b, tags, logs, containers)


@pytest.fixture
def model_dir() -> Iterator[Path]:
    """A tiny reward model in a folder every uid can enter (the images run as uid 10001)."""
    root = Path(tempfile.mkdtemp(prefix="rewardfleet-image-model-", dir="/tmp"))
    root.chmod(0o755)
    model = build_tiny_qwen2(root / "rm", kind="seq_cls")
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    yield model
    shutil.rmtree(root)


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 240) -> None:
    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: container exited {proc.returncode}:\n{log.read_text()[-4000:]}")
        return httpx.get(url, timeout=5).status_code == 200

    eventually(ready, timeout_s=timeout_s, interval_s=0.5, what=f"{url} ready", retry_on=(httpx.HTTPError,),
               detail=lambda: log.read_text()[-4000:])  # fmt: skip


def entrypoint(built: Built, name: str, args: list[str] | None = None) -> list[str]:
    """The image's ENTRYPOINT followed by `args`, or by its CMD (what `docker run IMAGE [args]` runs)."""
    config = built.buildah.config(built.tags[name])
    return list(config["Entrypoint"]) + (args if args is not None else list(config.get("Cmd") or []))


def test_gateway_image_scores(built: Built) -> None:
    port = free_port()
    log = built.logs / "run-gateway.log"
    env = {"REWARDFLEET_GATEWAY_PORT": str(port)}
    proc = built.buildah.start(built.containers["gateway"], entrypoint(built, "gateway"), log, env=env)
    try:
        _wait(f"http://127.0.0.1:{port}/health", proc, log)
        body = {"data_source": "openai/gsm8k", "solution_str": "so #### 42", "ground_truth": "42"}
        resp = httpx.post(f"http://127.0.0.1:{port}/score", json=body, timeout=30)
    finally:
        im.stop(proc)
    assert resp.status_code == 200, resp.text
    assert resp.json()["score"] == 1.0 and resp.json()["reward_fn"] == "gsm8k"


CODE_SAMPLE = {
    "data_source": "codecontests",
    "reward_fn": "code",
    "solution_str": "```python\nprint(int(input()) * 2)\n```",
    "ground_truth": {"inputs": ["21\n"], "outputs": ["42\n"]},
}


def test_gateway_image_has_bubblewrap_and_refuses_code_where_namespaces_are_forbidden(built: Built) -> None:
    b, ctr = built.buildah, built.containers["gateway"]
    log = built.logs / "run-gateway-bwrap.log"
    assert b.start(ctr, ["bwrap", "--version"], log).wait(timeout=120) == 0
    assert log.read_text().startswith("bubblewrap "), log.read_text()
    # buildah's chroot isolation is a runtime that forbids user namespaces (the kernel refuses them in a
    # chroot): the code reward's start-up check says so and names the options, it never runs code unsandboxed.
    check = ["python", "-c", "from rewardfleet.reward_fns import code; code.startup_check({})"]
    log = built.logs / "run-gateway-check.log"
    assert b.start(ctr, check, log).wait(timeout=120) != 0
    out = log.read_text()
    assert "SandboxUnavailable" in out and "create new namespace" in out and "sandbox_fusion_url" in out, out


def test_gateway_image_scores_code_in_its_sandbox(built: Built) -> None:
    """The gateway as the image runs it (entrypoint, uid 10001), under a runtime that allows user namespaces:
    the `code` built-in passes its start-up check and scores a program in a bwrap sandbox."""
    port = free_port()
    log = built.logs / "run-gateway-unconfined.log"
    config = built.buildah.config(built.tags["gateway"])
    with built.buildah.mounted(built.containers["gateway"]) as rootfs:
        env = {"REWARDFLEET_GATEWAY_PORT": str(port)}
        proc = im.start_unconfined(rootfs, config, entrypoint(built, "gateway"), log, env=env)
        try:
            _wait(f"http://127.0.0.1:{port}/health", proc, log)
            right = httpx.post(f"http://127.0.0.1:{port}/score", json=CODE_SAMPLE, timeout=60)
            wrong = httpx.post(
                f"http://127.0.0.1:{port}/score", json={**CODE_SAMPLE, "ground_truth": {"inputs": ["1\n"],
                "outputs": ["3\n"]}}, timeout=60)  # fmt: skip
        finally:
            im.stop(proc)
    out = log.read_text()
    assert "start-up check failed" not in out, out[-3000:]
    assert right.status_code == 200 and right.json()["status"] == "ok", right.text
    assert right.json()["score"] == 1.0 and right.json()["extra"]["verdicts"] == ["pass"], right.text
    assert wrong.json()["score"] == 0.0 and wrong.json()["extra"]["verdicts"] == ["wrong_answer"], wrong.text


def test_model_server_and_router_images(built: Built, model_dir: Path) -> None:
    ms_port, router_port, prom_port = free_port(), free_port(), free_port()
    ms_log, router_log = built.logs / "run-model-server.log", built.logs / "run-router.log"
    b = built.buildah
    ms_args = ["--model-path", "/models/rm", "--served-model-name", "rm", "--is-embedding"]
    ms_args += ["--host", "127.0.0.1", "--port", str(ms_port)]
    router_args = ["--worker-urls", f"http://127.0.0.1:{ms_port}", "--host", "127.0.0.1"]
    router_args += ["--port", str(router_port), "--prometheus-port", str(prom_port)]
    ms_ctr, router_ctr = built.containers["model-server"], built.containers["router"]
    volume = (f"{model_dir}:/models/rm:ro",)
    ms = b.start(ms_ctr, entrypoint(built, "model-server", ms_args), ms_log, volumes=volume)
    router = None
    try:
        _wait(f"http://127.0.0.1:{ms_port}/ready", ms, ms_log)
        direct = httpx.post(
            f"http://127.0.0.1:{ms_port}/v1/embeddings", json={"model": "rm", "input": "hi"}, timeout=30
        )
        router = b.start(router_ctr, entrypoint(built, "router", router_args), router_log)
        _wait(f"http://127.0.0.1:{router_port}/readiness", router, router_log)
        routed = httpx.post(
            f"http://127.0.0.1:{router_port}/v1/embeddings",
            json={"model": "rm", "input": "hi"},
            timeout=30,
        )
    finally:
        if router is not None:
            im.stop(router)
        im.stop(ms)
    assert direct.status_code == 200, direct.text
    assert routed.status_code == 200, routed.text
    (value,) = direct.json()["data"][0]["embedding"]
    assert routed.json()["data"][0]["embedding"] == pytest.approx([value], abs=1e-5)


def test_model_server_image_refuses_root_only_model_files(built: Built, model_dir: Path) -> None:
    for f in model_dir.iterdir():
        f.chmod(0o600)  # owned by root, as a checkpoint copied in by root without a+r
    log = built.logs / "run-model-server-perm.log"
    args = ["--model-path", "/models/rm", "--port", str(free_port())]
    proc = built.buildah.start(
        built.containers["model-server"],
        entrypoint(built, "model-server", args),
        log,
        volumes=(f"{model_dir}:/models/rm:ro",),
    )
    try:
        code = proc.wait(timeout=120)
    finally:
        im.stop(proc)
    out = log.read_text()
    assert code != 0, out
    assert "cannot be read by this process (uid 10001; mode 0600, owner uid 0)" in out, out[-3000:]
    assert "No such file" not in out
