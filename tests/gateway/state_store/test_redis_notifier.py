"""The notifier against a real redis-server: a per-key channel (subscribed while listened to) and a group
channel (covered by the pattern subscribed at connect) both wake their listeners on another replica's
PUBLISH; nothing else wakes them."""

from __future__ import annotations

import asyncio

from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend


async def woken(replicas: list[RedisBackend], channel: str) -> bool:
    listener, publisher = replicas[0].store, replicas[1].store
    async with listener.notifier.listen(channel) as inbox:
        await publisher.client.publish(channel, b"1")
        try:
            await asyncio.wait_for(inbox.event.wait(), 10.0)
        except TimeoutError:
            return False
        return inbox.error is None


async def test_per_key_channel(replicas: list[RedisBackend]) -> None:
    assert await woken(replicas, replicas[0].store.key("r", "{some-key}"))
    assert not replicas[0].store.notifier._channels  # unsubscribed once nobody listens


async def test_group_channel_rides_the_pattern(replicas: list[RedisBackend]) -> None:
    assert await woken(replicas, replicas[0].store.key("g", '{"grp-1"}'))


async def test_other_channels_do_not_wake(replicas: list[RedisBackend]) -> None:
    store = replicas[0].store
    publisher = replicas[1].store.client
    async with (
        store.notifier.listen(store.key("g", '{"a"}')) as inbox,
        store.notifier.listen(store.key("g", '{"last"}')) as last,
    ):
        await publisher.publish(store.key("g", '{"b"}'), b"1")
        await publisher.publish(store.key("r", "{a}"), b"1")
        # Redis delivers one publisher's messages in order on the notifier's one connection: once the last
        # is in, the two before it were read (and woke nobody), no guessed wait needed.
        await publisher.publish(store.key("g", '{"last"}'), b"1")
        await asyncio.wait_for(last.event.wait(), 10.0)
        assert not inbox.event.is_set()
