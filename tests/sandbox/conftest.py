"""Fixtures: the tiny root file system (once per session) and a local provider under a temp folder that,
at teardown, must have left no sandbox, mount or cgroup behind."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rewardfleet.services.sandbox import SandboxUnavailable
from rewardfleet.services.sandbox.cgroups import Cgroups
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.local import LocalProvider
from rewardfleet.services.sandbox.mounts import mounts_under
from tests.sandbox.rootfs import make_rootfs


@functools.cache
def _local_provider_missing() -> str | None:
    """Why this host cannot run the local provider (probed once), or None."""
    if os.geteuid() != 0:
        return "the local sandbox provider mounts overlays: these tests run as root (CI does)"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if Cgroups.detect() is None:
        return "no writable cgroups (v2 delegated or v1 pids+memory) on this host"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            LocalProvider(Path(tmp), ImageStore(Path(tmp) / "images")).check()
        except SandboxUnavailable as exc:
            return f"the local provider cannot run here: {exc}"
    return None


needs_local = pytest.mark.skipif(_local_provider_missing() is not None, reason=str(_local_provider_missing()))


@pytest.fixture(scope="session")
def tiny_rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_rootfs(tmp_path_factory.mktemp("image") / "rootfs")


@pytest.fixture
def image(tiny_rootfs: Path) -> str:
    return f"dir:{tiny_rootfs}"


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[LocalProvider]:
    missing = _local_provider_missing()
    if missing:
        pytest.skip(missing)
    made = LocalProvider(tmp_path / "sandboxes", ImageStore(tmp_path / "images"))
    yield made
    seen = set(made.ids())
    for sandbox_id in made.ids():
        await made.stop(sandbox_id)
    assert mounts_under(tmp_path) == []
    assert list((tmp_path / "sandboxes").iterdir()) == []
    assert [f for i in seen for f in made.cgroups.folders(i) if f.exists()] == []
