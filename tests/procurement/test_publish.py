"""channels-redis round trips, including publishing from synchronous worker code."""

import asyncio
import uuid

import pytest
from channels.layers import get_channel_layer

from procurement.publish import publish_many

pytestmark = pytest.mark.redis


async def test_group_round_trip_through_redis() -> None:
    layer = get_channel_layer()
    assert type(layer).__name__ in ("RedisChannelLayer", "RedisPubSubChannelLayer")
    group = f"test-{uuid.uuid4().hex}"
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    await layer.group_send(group, {"type": "decision.created", "step": 1})
    message = await asyncio.wait_for(layer.receive(channel), 5)
    assert message == {"type": "decision.created", "step": 1}
    await layer.group_discard(group, channel)


async def test_sync_publish_from_a_worker_thread_reaches_subscribers() -> None:
    layer = get_channel_layer()
    group = f"test-{uuid.uuid4().hex}"
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    events = [{"type": "decision.created", "step": i} for i in range(3)]
    # Twice, from different threads: pools must survive between sends.
    await asyncio.to_thread(publish_many, group, events[:2])
    await asyncio.to_thread(publish_many, group, events[2:])
    received = [await asyncio.wait_for(layer.receive(channel), 5) for _ in range(3)]
    assert [m["step"] for m in received] == [0, 1, 2]


async def test_a_subscriber_idle_longer_than_the_blocking_pop_keeps_receiving() -> None:
    """Before: with redis-py 8's 5 s read timeout, a receive that saw nothing for 5 s
    raised "Timeout reading from ...", which ended every quiet WebSocket consumer."""
    layer = get_channel_layer()
    channel = await layer.new_channel()

    async def send_later() -> None:
        await asyncio.sleep(7)  # longer than the layer's 5 s blocking pop
        await layer.send(channel, {"type": "late.event"})

    sender = asyncio.create_task(send_later())
    message = await asyncio.wait_for(layer.receive(channel), 20)
    assert message == {"type": "late.event"}
    await sender
