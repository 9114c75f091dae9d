"""Fixtures: the tiny root file system (once per session) and a local provider under a temp folder that,
at teardown, must have left no sandbox, mount or cgroup behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.harness.sandbox_rootfs import make_rootfs
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.local import LocalProvider
from rewardfleet.services.sandbox.mounts import mounts_under
from tests.support.sandbox import local_provider_missing


@pytest.fixture(scope="session")
def tiny_rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_rootfs(tmp_path_factory.mktemp("image") / "rootfs")


@pytest.fixture
def image(tiny_rootfs: Path) -> str:
    return f"dir:{tiny_rootfs}"


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[LocalProvider]:
    missing = local_provider_missing()
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
