"""Live streams over WebSocket through the real ASGI application (auth, origin check,
routing), fed by a real episode run publishing through the channel layer."""

from __future__ import annotations

import asyncio
import gc
import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from config.asgi import application
from procurement.consumers import READ_ONLY
from procurement.publish import bind_server_loop
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.live import encoded
from procurement.services.scenarios import presets_seed
from procurement.services.sweeps import sweep_create
from tests.websockets import HOST, ORIGIN, refused_code

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def _close_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


@sync_to_async
def _session_cookie(user_with_role, role: str | None) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user_with_role(role))
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


@sync_to_async
def _episode(seed: int = 4):
    from procurement.models import PolicyConfig, Scenario

    presets_seed()
    return episode_create(
        scenario=Scenario.objects.get(name="easy_negotiation"),
        policy=PolicyConfig.objects.get(name="expert"),
        seed=seed,
        enqueue=False,
    )


async def _connect(path: str, *headers) -> tuple[WebsocketCommunicator, bool, int | None]:
    communicator = WebsocketCommunicator(application, path, headers=[ORIGIN, HOST, *headers])
    connected, code = await communicator.connect()
    return communicator, connected, code


def _run(episode_id: int) -> None:
    try:
        episode_run(episode_id=episode_id)
    finally:
        connections.close_all()


async def test_an_analyst_watches_every_decision_of_a_running_episode(user_with_role) -> None:
    cookie = await _session_cookie(user_with_role, "analyst")
    episode = await _episode()
    communicator, connected, _ = await _connect(f"/ws/episodes/{episode.pk}/", cookie)
    assert connected
    snapshot = await communicator.receive_json_from()
    assert snapshot["type"] == "episode.snapshot"
    assert snapshot["episode"]["status"] == "queued" and snapshot["decisions"] == []

    from channels.layers import get_channel_layer

    if type(get_channel_layer()).__name__ == "InMemoryChannelLayer":
        bind_server_loop(asyncio.get_running_loop())  # embedded: this loop serves the layer
    try:
        await asyncio.to_thread(_run, episode.pk)
        steps, status = [], None
        while status != "finished":
            event = await communicator.receive_json_from(timeout=10)
            if event["type"] == "episode.decisions":
                steps += [d["step"] for d in event["decisions"]]
            elif event["type"] == "episode.status":
                status = event["episode"]["status"]
    finally:
        bind_server_loop(None)
    await sync_to_async(episode.refresh_from_db)()
    assert steps == list(range(episode.steps))

    # A late joiner gets the whole (short) history in its snapshot.
    late, connected, _ = await _connect(f"/ws/episodes/{episode.pk}/", cookie)
    snapshot = await late.receive_json_from()
    assert [d["step"] for d in snapshot["decisions"]] == steps
    assert snapshot["episode"]["score"] == pytest.approx(episode.score)
    await late.disconnect()
    await communicator.disconnect()


async def test_streams_need_a_login_and_a_role(user_with_role) -> None:
    episode = await _episode()
    assert await refused_code(f"/ws/episodes/{episode.pk}/") == 4401
    no_role = await _session_cookie(user_with_role, None)
    assert await refused_code(f"/ws/episodes/{episode.pk}/", no_role) == 4403


async def test_unknown_ids_and_foreign_origins_are_refused(user_with_role) -> None:
    cookie = await _session_cookie(user_with_role, "ops")
    assert await refused_code("/ws/episodes/999999/", cookie) == 4404
    assert await refused_code("/ws/sweeps/999999/", cookie) == 4404
    assert await refused_code("/ws/nothing/here/", cookie) == 4404
    assert await refused_code("/elsewhere", cookie) == 4404
    # The origin check refuses the handshake itself (daphne answers HTTP 403).
    evil = (b"origin", b"http://evil.example")
    assert await refused_code("/ws/overview/", cookie, origin=evil) == 1000


async def test_a_reconnecting_client_resumes_after_its_last_step(user_with_role) -> None:
    cookie = await _session_cookie(user_with_role, "analyst")
    episode = await _episode(seed=5)
    await asyncio.to_thread(_run, episode.pk)
    await sync_to_async(episode.refresh_from_db)()
    communicator, connected, _ = await _connect(f"/ws/episodes/{episode.pk}/", cookie)
    assert connected
    await communicator.receive_json_from()  # the snapshot
    await communicator.send_json_to({"type": "resume", "after_step": 3})
    caught_up = await communicator.receive_json_from()
    assert caught_up["type"] == "episode.decisions"
    assert [d["step"] for d in caught_up["decisions"]] == list(range(4, episode.steps))
    await communicator.send_json_to({"type": "resume", "after_step": episode.steps - 1})
    assert (await communicator.receive_json_from())["decisions"] == []
    for bad in ("3", None, True, -2):
        await communicator.send_json_to({"type": "resume", "after_step": bad})
        error = await communicator.receive_json_from()
        assert error["type"] == "error" and "after_step" in error["message"]
    await communicator.disconnect()


async def test_sweep_and_overview_snapshots_and_read_only_errors(user_with_role) -> None:
    cookie = await _session_cookie(user_with_role, "ops")
    episode = await _episode()

    @sync_to_async
    def make_sweep():
        from procurement.models import PolicyConfig, Scenario

        return sweep_create(
            scenarios=[Scenario.objects.get(name="hard_arena")],
            policies=[PolicyConfig.objects.get(name="random")],
            seeds=3,
            enqueue=False,
        )

    sweep = await make_sweep()
    communicator, connected, _ = await _connect(f"/ws/sweeps/{sweep.pk}/", cookie)
    assert connected
    assert await communicator.receive_json_from() == {
        "type": "sweep.snapshot",
        "sweep": {
            "id": sweep.pk,
            "name": sweep.name,
            "status": "queued",
            "total_cells": 3,
            "done_cells": 0,
            "failed_cells": 0,
            "progress": 0.0,
        },
    }
    await communicator.send_to(text_data="{not json")
    assert (await communicator.receive_json_from())["type"] == "error"
    await communicator.send_json_to({"action_type": "award_contract"})
    error = await communicator.receive_json_from()
    assert error == {
        "type": "error",
        "message": READ_ONLY,
    }
    await communicator.disconnect()

    overview, connected, _ = await _connect("/ws/overview/", cookie)
    snapshot = await overview.receive_json_from()
    assert snapshot["type"] == "overview.snapshot"
    assert [e["id"] for e in snapshot["episodes"]] == [episode.pk]
    assert [s["id"] for s in snapshot["sweeps"]] == [sweep.pk]
    await overview.disconnect()


async def test_group_events_go_out_encoded_once_and_without_a_database_hop(
    user_with_role, monkeypatch
) -> None:
    """A published event reaches the viewer as the text the publisher encoded (the same
    text send_json made of it before); a plain event (an older publisher) still goes out
    as JSON; neither costs a close_old_connections thread hop per viewer."""
    import channels.consumer
    from channels.layers import get_channel_layer

    hops = []

    async def counted() -> None:
        hops.append(1)

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", counted)
    cookie = await _session_cookie(user_with_role, "analyst")
    episode = await _episode()
    communicator, connected, _ = await _connect(f"/ws/episodes/{episode.pk}/", cookie)
    assert connected
    await communicator.receive_json_from()  # the snapshot
    assert gc.get_freeze_count() > 0  # the server's startup heap, out of the collector's way
    hops.clear()  # the connect's own (it queries the database)

    event = {"type": "episode.decisions", "episode": episode.pk, "decisions": [{"step": 0}]}
    layer = get_channel_layer()
    await layer.group_send(episode.group_name, encoded(event))
    assert await communicator.receive_from() == json.dumps(event)
    plain = {"type": "episode.status", "episode": {"id": episode.pk, "status": "running"}}
    await layer.group_send(episode.group_name, plain)
    assert await communicator.receive_json_from() == plain
    assert hops == []
    await communicator.disconnect()


@sync_to_async
def _store_decisions(episode, count: int) -> None:
    from procurement.models import Decision

    row = {"week": 1, "action": {"action_type": "defer"}, "valid": True, "reward": 0.0}
    Decision.objects.bulk_create(
        Decision(episode=episode, step=step, running_score=0.0, **row) for step in range(count)
    )


async def test_a_resume_answers_a_page_at_a_time(user_with_role) -> None:
    # Before: one resume answered every stored decision after the step (5,000 at most,
    # 4.8 MB), as often as a client asked.
    from procurement.selectors.live import STREAM_PAGE

    cookie = await _session_cookie(user_with_role, "analyst")
    episode = await _episode()
    total = 2 * STREAM_PAGE + 50
    await _store_decisions(episode, total)
    communicator, connected, _ = await _connect(f"/ws/episodes/{episode.pk}/", cookie)
    assert connected
    snapshot = await communicator.receive_json_from()
    assert [d["step"] for d in snapshot["decisions"]] == list(range(total - STREAM_PAGE, total))
    steps, after, messages = [], -1, 0
    while after is not None:
        await communicator.send_json_to({"type": "resume", "after_step": after})
        page = await communicator.receive_json_from()
        assert len(page["decisions"]) <= STREAM_PAGE
        steps += [d["step"] for d in page["decisions"]]
        after, messages = page["next_after_step"], messages + 1
    assert steps == list(range(total)) and messages == 3
    await communicator.disconnect()
