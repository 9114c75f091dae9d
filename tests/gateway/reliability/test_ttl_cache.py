"""The in-process result cache's TTL and bound, on an injected clock: time moves when the test says so."""

from __future__ import annotations

from rewardfleet.services.gateway.cache.idempotency import TTLCache
from tests.clock import FakeClock


def test_an_entry_lives_ttl_s_then_is_gone() -> None:
    clock = FakeClock()
    cache = TTLCache(max_entries=10, ttl_s=60.0, clock=clock)
    cache.put("k", '{"score": 1.0}')
    clock.now += 60.0
    assert cache.get("k") == '{"score": 1.0}'  # valid through its last instant
    clock.now += 0.001
    assert cache.get("k") is None and len(cache) == 0  # expired: dropped on the read


def test_storing_again_restarts_the_ttl() -> None:
    clock = FakeClock()
    cache = TTLCache(max_entries=10, ttl_s=60.0, clock=clock)
    cache.put("k", "a")
    clock.now += 50.0
    cache.put("k", "b")
    clock.now += 50.0
    assert cache.get("k") == "b"


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = TTLCache(max_entries=2, ttl_s=60.0, clock=FakeClock())
    cache.put("a", "1")
    cache.put("b", "2")
    assert cache.get("a") == "1"  # `a` is now the most recent
    cache.put("c", "3")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("1", None, "3")
