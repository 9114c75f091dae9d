"""A Harbor task's image, built without Docker.

buildah (vfs storage, chroot isolation) builds it over the Debian base `build_base.sh` makes, unpacked into a
root file system folder the sandbox's image store reads (`dir:`).

Cached by the digest of the task's `environment/` folder and the base's recipe: the first session of a task
builds it (seconds; minutes when its Dockerfile installs packages), every later one, in any process, reuses
the folder. Builds of one cache are serialised by a file lock, so two processes never build the same image
twice. The folder is never written after it is published; sandboxes see it through their own overlay.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardfleet.reward_fns.environments._harbor.task import HarborTask

BUILD_BASE = Path(__file__).with_name("build_base.sh")
BASE_IMAGE = "localhost/rewardfleet/harbor-base:bookworm"
# Bump when the steps below change what a published image holds.
RECIPE = "1"
_LOG_TAIL = 4000


class ImageBuildFailed(RuntimeError):
    """The task's image could not be built (the base, buildah, or its Dockerfile failed); the message ends
    with the tail of the build's log."""


def default_cache_dir() -> Path:
    """`$REWARDFLEET_IMAGE_CACHE/harbor` (default /var/cache/rewardfleet/harbor), as `build_base.sh`."""
    return Path(os.environ.get("REWARDFLEET_IMAGE_CACHE", "/var/cache/rewardfleet")) / "harbor"


@dataclass(frozen=True)
class TaskImage:
    """A built task image: its root file system folder and what its config says a process starts with."""

    rootfs: Path
    workdir: str
    env: dict[str, str]

    @property
    def reference(self) -> str:
        return f"dir:{self.rootfs}"


class ImageBuilder:
    """Builds (once) and finds the images of Harbor tasks under one cache folder."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self._storage = [
            "--root", str(cache_dir / "buildah"), "--runroot", str(cache_dir / "buildah-run"),
            "--storage-driver", "vfs",
        ]  # fmt: skip
        self._keys: dict[Path, str] = {}

    def folder(self, task: HarborTask) -> Path:
        key = self._keys.get(task.folder)
        if key is None:
            key = self._keys[task.folder] = _key(task)
        return self.cache_dir / "tasks" / key  # tasks with the same environment/ share one image

    def built(self, task: HarborTask) -> TaskImage | None:
        """The task's image when it is built, else None; reads only the cache."""
        folder = self.folder(task)
        try:
            meta = json.loads((folder / "image.json").read_text())
        except (OSError, ValueError):
            return None
        return TaskImage(rootfs=folder / "rootfs", workdir=meta["workdir"], env=meta["env"])

    async def ensure(self, task: HarborTask) -> TaskImage:
        """The task's image, built first when the cache lacks it; `ImageBuildFailed` when it cannot be."""
        image = self.built(task)
        if image is not None:
            return image
        return await asyncio.to_thread(self._build_locked, task)

    def _build_locked(self, task: HarborTask) -> TaskImage:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(self.cache_dir / "build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building this very image
            image = self.built(task)
            return image if image is not None else self._build(task)

    def _build(self, task: HarborTask) -> TaskImage:
        folder = self.folder(task)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        log = partial / "build.log"
        self._run(["bash", str(BUILD_BASE), str(self.cache_dir)], log, task.build_timeout_s, "the base image")
        tag = f"localhost/rewardfleet/harbor-task/{task.name}:{folder.name}"
        self._buildah(
            ["bud", "--isolation", "chroot", "--network", "host", "--pull-never", "--layers=false",
             "-f", str(task.environment_dir / "Dockerfile"), "-t", tag, str(task.environment_dir)],
            log, task.build_timeout_s, "environment/Dockerfile",
        )  # fmt: skip
        try:
            config = json.loads(self._buildah(["inspect", "--type", "image", tag], log, 120, "inspect"))
            container = self._buildah(["from", "--pull-never", tag], log, 120, "from").strip()
            try:
                mounted = self._buildah(["mount", container], log, 120, "mount").strip()
                try:
                    self._run(["cp", "-a", f"{mounted}/.", str(partial / "rootfs")], log, 600, "unpacking")
                finally:
                    subprocess.run([*self._cmd(), "umount", container], capture_output=True, timeout=120)
            finally:
                subprocess.run([*self._cmd(), "rm", container], capture_output=True, timeout=120)
        finally:
            # The folder is the image from now on: buildah's copy would only double the disk it takes.
            subprocess.run([*self._cmd(), "rmi", tag], capture_output=True, timeout=300)
        oci: dict[str, Any] = config.get("OCIv1", {}).get("config", {}) or {}
        env = dict(item.split("=", 1) for item in oci.get("Env") or [] if "=" in item)
        meta = {"task": task.name, "workdir": oci.get("WorkingDir") or "/", "env": env}
        (partial / "image.json").write_text(json.dumps(meta, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        image = self.built(task)
        if image is None:
            raise ImageBuildFailed(f"task {task.name}: the image was built but its folder cannot be read")
        return image

    def _cmd(self) -> list[str]:
        exe = shutil.which("buildah")
        if exe is None:
            raise ImageBuildFailed("buildah is not installed (Debian: apt-get install buildah debootstrap)")
        return [exe, *self._storage]

    def _buildah(self, args: list[str], log: Path, timeout_s: float, what: str) -> str:
        return self._run([*self._cmd(), *args], log, timeout_s, what)

    @staticmethod
    def _run(cmd: list[str], log: Path, timeout_s: float, what: str) -> str:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            limit = f"{timeout_s:.0f} s (build_timeout_sec)"
            raise ImageBuildFailed(f"building {what} took over {limit}") from None
        except OSError as exc:
            raise ImageBuildFailed(f"building {what}: {exc}") from None
        with log.open("a") as out:
            out.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr)[-_LOG_TAIL:]
            raise ImageBuildFailed(f"building {what} failed (exit {proc.returncode}):\n{tail}")
        return proc.stdout


def _key(task: HarborTask) -> str:
    """The image's cache key: the recipe, the base's build script and the task's `environment/` folder."""
    digest = hashlib.sha256(f"{RECIPE}\0{task.environment_digest()}\0".encode())
    digest.update(BUILD_BASE.read_bytes())
    return digest.hexdigest()[:16]
