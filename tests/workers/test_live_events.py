"""Live events reach channel-layer subscribers: every decision of a single episode, and
sweep progress at most 4 times a second."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connections
from django.test import override_settings

from procurement.publish import bind_server_loop
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.live import event_content
from tests.workers.helpers import seeded

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def _close_thread_connections():
    yield
    # sync_to_async runs ORM calls in a shared executor thread: close its connection.
    await sync_to_async(connections.close_all)()


@sync_to_async
def _new_episode(seed: int):
    scenarios, policies = seeded()
    return episode_create(
        scenario=scenarios["medium_adversarial"],
        policy=policies["expert"],
        seed=seed,
        enqueue=False,
    )


def _run_in_worker_thread(episode_id: int) -> None:
    try:
        episode_run(episode_id=episode_id)
    finally:
        connections.close_all()  # this thread's connection must not outlive the test


async def _drain(layer, channel: str, until_type: str, timeout: float = 10) -> list[dict]:
    messages = []
    while True:
        message = event_content(await asyncio.wait_for(layer.receive(channel), timeout))
        messages.append(message)
        if message["type"] == until_type and message.get("episode", {}).get("status") in (
            "finished",
            "failed",
        ):
            return messages


@pytest.mark.parametrize("layer_backend", ["configured", "in-memory"])
async def test_every_decision_of_a_single_episode_is_published(layer_backend: str) -> None:
    in_memory = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    overrides = {"CHANNEL_LAYERS": in_memory} if layer_backend == "in-memory" else {}
    with override_settings(**overrides):
        from channels.layers import channel_layers

        channel_layers.backends.clear()  # pick up the overridden layer
        layer = get_channel_layer()
        # The embedded default: the server's loop owns the (in-memory) layer.
        bind_server_loop(asyncio.get_running_loop() if layer_backend == "in-memory" else None)
        try:
            episode = await _new_episode(seed=9)
            channel = await layer.new_channel()
            await layer.group_add(episode.group_name, channel)
            await asyncio.to_thread(_run_in_worker_thread, episode.pk)
            messages = await _drain(layer, channel, "episode.status")
        finally:
            bind_server_loop(None)
            channel_layers.backends.clear()
    steps = [
        d["step"] for m in messages if m["type"] == "episode.decisions" for d in m["decisions"]
    ]
    await sync_to_async(episode.refresh_from_db)()
    assert steps == list(range(episode.steps))
    assert messages[0]["type"] == "episode.status"
    assert messages[-1]["episode"]["status"] == "finished"
    assert messages[-1]["episode"]["score"] == pytest.approx(episode.score)


@override_settings(TASK_RUNNER="thread", SWEEP_CHUNK_CELLS=1)
async def test_sweep_progress_is_throttled_to_four_messages_a_second() -> None:
    from procurement.services.sweeps import sweep_create
    from workers.inprocess import get_runner

    layer = get_channel_layer()
    scenarios, policies = await sync_to_async(seeded)()
    sweep = await sync_to_async(sweep_create)(
        scenarios=[scenarios["hard_arena"]],
        policies=[policies["expert"]],
        seeds=60,
        enqueue=False,
    )
    channel = await layer.new_channel()
    await layer.group_add(sweep.group_name, channel)
    from workers.tasks import run_sweep_task

    if type(layer).__name__ == "InMemoryChannelLayer":  # embedded: this loop serves the layer
        bind_server_loop(asyncio.get_running_loop())

    started = time.monotonic()
    get_runner().submit(run_sweep_task.name, (sweep.pk,))
    stamps, last = [], None
    while last is None or last["sweep"]["status"] == "running":
        last = event_content(await asyncio.wait_for(layer.receive(channel), 30))
        stamps.append(last["sent_at"])
    bind_server_loop(None)
    elapsed = time.monotonic() - started
    assert last["sweep"]["status"] == "finished" and last["sweep"]["done_cells"] == 60
    gaps = [b - a for a, b in itertools.pairwise(stamps[:-1])]
    assert all(gap >= 0.2 for gap in gaps), gaps  # the last message (final state) is free
    assert len(stamps) <= 4 * elapsed + 2
