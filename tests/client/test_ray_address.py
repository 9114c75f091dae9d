"""A client given `ray:` follows the gateways the fleet publishes: posts go round them, and a retry leaves a
gateway that refused or is gone (the directory actor is stood in for; tests/fleet/on_ray asks a real one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rewardfleet.services.client import AsyncRewardClient, RetryPolicy, ray_discovery
from tests.client.fake_gateway import FakeGateway, Reply, ok_reply

FAST = RetryPolicy(initial_backoff_s=0.01, max_backoff_s=0.05, max_attempts=4)
asked: list[str] = []  # each question the client put to the directory


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The fleet's directory: `_ask` is where `ray_discovery` asks Ray for the gateways' URLs."""
    urls: list[str] = []

    def ask(namespace: str, name: str, timeout_s: float) -> list[str]:
        asked.append(name)
        return list(urls)

    asked.clear()
    monkeypatch.setattr(ray_discovery, "_ask", ask)
    monkeypatch.setattr(ray_discovery, "_cache", {})
    yield urls


def _sample(i: int) -> dict[str, object]:
    return {"data_source": "t", "solution_str": "a", "ground_truth": "a", "uid": f"u-{i}"}


async def test_posts_go_round_the_published_gateways(published: list[str]) -> None:
    with FakeGateway() as one, FakeGateway() as two:
        published += [one.url, two.url]
        async with AsyncRewardClient("ray:", retry=FAST) as client:
            ray_discovery._cache.clear()  # the list has expired: 40 posts want it at once
            results = await client.score_many([_sample(i) for i in range(40)])
        assert all(r.status == "ok" for r in results)
        assert len(one.bodies) == len(two.bodies) == 20
        assert len(asked) == 2  # the client's first address, then one question for all 40 posts


async def test_a_retry_leaves_a_draining_or_gone_gateway(published: list[str]) -> None:
    def draining(body: dict[str, object], attempt: int) -> Reply:
        return Reply(status=503, body={"error": {"type": "ShuttingDown", "message": "draining"}})

    with FakeGateway(draining) as leaving, FakeGateway(ok_reply) as staying:
        published += [leaving.url, staying.url]
        gone = "http://127.0.0.1:9"  # nothing listens: a gateway whose process has exited
        async with AsyncRewardClient("ray:", retry=FAST) as client:
            published.append(gone)
            ray_discovery._cache.clear()
            results = await client.score_many([_sample(i) for i in range(30)])
        assert all(r.status == "ok" for r in results), [r for r in results if r.status != "ok"][:2]
        assert len(staying.bodies) == 30 and leaving.bodies  # each post answered by the one that stays
        assert max(r.attempts for r in results) <= 3  # never the same gateway twice


async def test_an_address_that_is_not_ray_stays_on_its_gateway(published: list[str]) -> None:
    with FakeGateway() as one, FakeGateway() as two:
        published += [one.url, two.url]
        async with AsyncRewardClient(one.url, retry=FAST) as client:
            await client.score_many([_sample(i) for i in range(10)])
        assert len(one.bodies) == 10 and not two.bodies
