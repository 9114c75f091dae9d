"""A session's sandbox through `Sessions` with the real local provider (bubblewrap over the tiny root file
system): made on first use, attached to by later calls and verify, stopped on close, on expiry and when the
call that made it fails; nothing is left under the provider's root."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from bench.harness.sandbox_rootfs import make_rootfs
from rewardfleet.services.gateway.environments.config import EnvironmentsConfig
from rewardfleet.services.gateway.environments.errors import EnvironmentFailed
from rewardfleet.services.gateway.environments.loading import load_environments
from rewardfleet.services.gateway.environments.memory_store import MemorySessionStore
from rewardfleet.services.gateway.environments.metrics import SessionMetrics
from rewardfleet.services.gateway.environments.sandboxes import SessionSandboxes
from rewardfleet.services.gateway.environments.sessions import Sessions
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.local import LocalProvider
from tests.support.sandbox import local_provider_missing

ENVS = Path(__file__).parent / "envs"


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[LocalProvider]:
    missing = local_provider_missing()
    if missing:
        pytest.skip(missing)
    made = LocalProvider(tmp_path / "sandboxes", ImageStore(tmp_path / "images"))
    yield made
    left = made.ids()
    for sandbox_id in left:
        await made.stop(sandbox_id)
    assert left == []


async def test_a_sessions_sandbox_lives_and_dies_with_it(tmp_path: Path, provider: LocalProvider) -> None:
    image = f"dir:{make_rootfs(tmp_path / 'rootfs')}"
    clock = Clock()
    sessions = Sessions(
        load_environments(None, [ENVS]),
        MemorySessionStore(),
        SessionMetrics(CollectorRegistry()),
        EnvironmentsConfig(),
        clock=clock,
        sandboxes=SessionSandboxes(provider),
    )
    closed = await sessions.open("t", "boxed", {"image": image})
    assert provider.ids() == []  # made on first use, not at open
    made = (await sessions.call("t", closed.token, "write", {"text": "hello"})).output["sandbox"]
    read = (await sessions.call("t", closed.token, "read", {})).output
    assert read == {"text": "hello", "sandbox": made}  # the same sandbox, attached to again
    assert (await sessions.verify("t", closed.token, {"expected": "hello"})).reward == 1.0
    assert provider.ids() == [made]
    await sessions.close("t", closed.token)
    assert provider.ids() == []

    crashed = await sessions.open("t", "boxed", {"image": image})
    with pytest.raises(EnvironmentFailed, match="a bug after the sandbox was made"):
        await sessions.call("t", crashed.token, "write_then_crash", {})
    assert provider.ids() == []  # its id was saved nowhere: stopped at once

    expiring = await sessions.open("t", "boxed", {"image": image})
    await sessions.call("t", expiring.token, "write", {"text": "x"})
    assert len(provider.ids()) == 1
    clock.now += 10_000
    assert await sessions.reap() == 2  # `crashed` and `expiring`
    assert provider.ids() == []
