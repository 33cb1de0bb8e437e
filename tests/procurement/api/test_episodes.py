"""/api/episodes/: create = enqueue (analysts and up), filters, detail, paginated decisions."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test import override_settings

from procurement.models import Episode, EpisodeStatus, PolicyConfig, Scenario
from procurement.services.episodes import episode_claim, episode_create, episode_decisions_append
from workers.celery_app import app

URL = "/api/episodes/"


@app.task(name="tests.procurement.close_thread_connections")
def close_thread_connections() -> None:
    """Run on the in-process worker thread: let the test database be dropped afterwards."""
    connections.close_all()


def record(step: int) -> dict:
    return {
        "step": step,
        "week": step // 6,
        "action": {"action_type": "defer"},
        "valid": True,
        "error": None,
        "response": None,
        "reward": 0.0,
        "running_score": 0.1,
        "events": [],
        "state": {"step": step},
    }


@pytest.fixture
def episodes(preset, expert):
    """Three stored episodes: a finished one with 450 decisions, a queued and a failed one."""
    done = episode_create(scenario=preset, policy=expert, seed=1, enqueue=False)
    episode_decisions_append(
        episode=done, records=[record(i) for i in range(450)], attempt=episode_claim(episode=done)
    )
    Episode.objects.filter(pk=done.pk).update(status=EpisodeStatus.FINISHED, score=0.6)
    queued = episode_create(scenario=preset, policy=expert, seed=2, enqueue=False)
    random = PolicyConfig.objects.get(name="random")
    failed = episode_create(scenario=preset, policy=random, seed=3, enqueue=False)
    Episode.objects.filter(pk=failed.pk).update(status=EpisodeStatus.FAILED, error="boom")
    return done, queued, failed


@pytest.mark.django_db
def test_roles_on_episodes(api_client_for, episodes, preset, snapshot_counts) -> None:
    done = episodes[0]
    anonymous, nobody = api_client_for("anonymous"), api_client_for("none")
    before = snapshot_counts()
    for client, code in ((anonymous, 401), (nobody, 403)):
        assert client.get(URL).status_code == code
        assert client.get(f"{URL}{done.pk}/").status_code == code
        assert client.get(f"{URL}{done.pk}/decisions/").status_code == code
        assert (
            client.post(URL, {"scenario": preset.pk, "policy": "expert"}, format="json").status_code
            == code
        )
        assert client.post(f"{URL}{done.pk}/cancel/").status_code == code
    assert snapshot_counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["analyst", "ops", "admin"])
def test_every_role_may_start_an_episode(
    api_client_for, preset, expert, role, django_capture_on_commit_callbacks
) -> None:
    client = api_client_for(role)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            URL, {"scenario": preset.pk, "policy": "expert", "seed": 42}, format="json"
        )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["status"] == "queued" and data["seed"] == 42 and data["queue"] == "cpu"
    assert (data["scenario"], data["scenario_name"], data["policy_name"]) == (
        preset.pk,
        "easy_negotiation",
        "expert",
    )
    assert len(callbacks) == 1  # handed to a worker only once the row is committed
    episode = Episode.objects.get(pk=data["id"])
    assert episode.created_by == client.user and episode.scenario_snapshot == preset.engine_config()


@pytest.mark.django_db(transaction=True)
@override_settings(TASK_RUNNER="thread")
def test_posted_episode_runs_on_the_worker_and_stores_its_decisions(api_client_for, seeded) -> None:
    from workers.inprocess import get_runner

    client = api_client_for("analyst")
    scenario = Scenario.objects.get(name="easy_negotiation")
    response = client.post(
        URL, {"scenario": scenario.pk, "policy": "expert", "seed": 3}, format="json"
    )
    assert response.status_code == 201
    episode_id = response.json()["id"]
    try:
        assert get_runner().join(timeout=30)
    finally:
        get_runner().submit(close_thread_connections.name)
        get_runner().join(timeout=10)
    detail = client.get(f"{URL}{episode_id}/").json()
    assert detail["status"] == "finished", detail["error"]
    assert detail["steps"] > 0 and 0.0 <= detail["score"] <= 1.0
    assert detail["metrics"]["score"] == pytest.approx(detail["score"], abs=1e-6)  # rounded
    assert detail["scenario_snapshot"]["name"] == "easy_negotiation"
    decisions = client.get(f"{URL}{episode_id}/decisions/", {"page_size": 5000}).json()
    assert decisions["count"] == detail["steps"]
    steps = [d["step"] for d in decisions["results"]]
    assert steps == list(range(detail["steps"]))
    assert decisions["results"][-1]["running_score"] == pytest.approx(detail["score"], abs=1e-9)


@pytest.mark.django_db
def test_detail_and_paginated_decisions(api_client_for, episodes) -> None:
    done = episodes[0]
    client = api_client_for("analyst")
    detail = client.get(f"{URL}{done.pk}/").json()
    assert detail["steps"] == 450 and detail["status"] == "finished"
    assert "scenario_snapshot" in detail and "policy_snapshot" in detail

    first = client.get(f"{URL}{done.pk}/decisions/").json()
    assert first["count"] == 450 and len(first["results"]) == 200
    assert [d["step"] for d in first["results"]] == list(range(200))
    assert first["previous"] is None and "page=2" in first["next"]
    last = client.get(f"{URL}{done.pk}/decisions/", {"page": 3}).json()
    assert [d["step"] for d in last["results"]] == list(range(400, 450))
    assert last["next"] is None
    small = client.get(f"{URL}{done.pk}/decisions/", {"page_size": 7, "page": 2}).json()
    assert [d["step"] for d in small["results"]] == list(range(7, 14))
    capped = client.get(f"{URL}{done.pk}/decisions/", {"page_size": 10**9}).json()
    assert len(capped["results"]) == 450
    assert set(first["results"][0]) >= {
        "step",
        "week",
        "action",
        "valid",
        "error",
        "response",
        "reward",
        "running_score",
        "events",
        "state",
        "actor",
    }
    for page in ("99", "abc", "0", "-1"):
        response = client.get(f"{URL}{done.pk}/decisions/", {"page": page})
        assert response.status_code == 404, page
    assert client.get(f"{URL}{done.pk}/decisions/", {"page_size": "x"}).status_code == 200


@pytest.mark.django_db
def test_decisions_after_a_step_fill_a_live_pages_hole(api_client_for, episodes) -> None:
    done = episodes[0]
    client = api_client_for("analyst")
    hole = client.get(f"{URL}{done.pk}/decisions/", {"after_step": 297, "page_size": 100}).json()
    assert hole["count"] == 152 and [d["step"] for d in hole["results"]] == list(range(298, 398))
    assert "after_step=297" in hole["next"] and "page=2" in hole["next"]
    everything = client.get(f"{URL}{done.pk}/decisions/", {"after_step": -1}).json()
    assert everything["count"] == 450
    for bad in ("x", "-2", "1.5", "9" * 12):
        response = client.get(f"{URL}{done.pk}/decisions/", {"after_step": bad})
        assert response.status_code == 400 and "after_step" in response.json(), bad


@pytest.mark.django_db
def test_list_and_filters(api_client_for, episodes) -> None:
    done, queued, failed = episodes
    client = api_client_for("analyst")

    def ids(**params) -> list[int]:
        response = client.get(URL, params)
        assert response.status_code == 200, response.json()
        return [e["id"] for e in response.json()["results"]]

    assert ids() == [failed.pk, queued.pk, done.pk]  # newest first
    assert ids(status="finished") == [done.pk]
    assert ids(status="failed") == [failed.pk]
    assert ids(policy="random") == [failed.pk]
    assert ids(scenario="easy_negotiation", status="queued") == [queued.pk]
    assert ids(scenario="nope") == []
    assert ids(seed=2) == [queued.pk]
    assert ids(sweep=123) == []
    assert "scenario_snapshot" not in client.get(URL).json()["results"][0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params",
    [
        {"status": "bogus"},
        {"seed": "abc"},
        {"sweep": "x"},
        {"seed": "1e999"},
        {"status": ["finished", "bogus"]},
    ],
)
def test_bad_filters_are_400(api_client_for, episodes, params) -> None:
    response = api_client_for("analyst").get(URL, params)
    assert response.status_code == 400
    assert set(response.json()) & set(params)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params", [{"seed": "99999999999999999999999"}, {"sweep": "99999999999999999999999"}]
)
def test_huge_filter_values_are_400_never_a_500(api_client_for, episodes, params) -> None:
    response = api_client_for("analyst").get(URL, params)
    assert response.status_code == 400
    assert set(response.json()) == set(params)


@pytest.mark.django_db
def test_cancel(api_client_for, episodes) -> None:
    done, queued, _ = episodes
    client = api_client_for("ops")  # analysts: only their own (test_pages)
    response = client.post(f"{URL}{queued.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    again = client.post(f"{URL}{queued.pk}/cancel/")
    assert again.status_code == 409 and "cancelled" in again.json()["detail"]
    assert client.post(f"{URL}{done.pk}/cancel/").status_code == 409
    done.refresh_from_db()
    assert done.status == "finished"


MAX = "99999999999999999999999"
BAD_CREATE = [
    ({"data": "{oops", "content_type": "application/json"}, "detail"),
    ({"data": "scenario=1", "content_type": "text/plain"}, "detail"),
    ({"data": [], "format": "json"}, "non_field_errors"),
    ({"data": {}, "format": "json"}, "scenario"),
    ({"data": {"scenario": "abc", "policy": "expert"}, "format": "json"}, "scenario"),
    ({"data": {"scenario": 999999, "policy": "expert"}, "format": "json"}, "scenario"),
    ({"data": {"scenario": int(MAX), "policy": "expert"}, "format": "json"}, "scenario"),
    ({"data": {"scenario": MAX, "policy": "expert"}, "format": "json"}, "scenario"),
    ({"data": {"scenario": {"id": 1}, "policy": "expert"}, "format": "json"}, "scenario"),
    ({"data": {"scenario": None, "policy": "expert"}, "format": "json"}, "scenario"),
    ({"data": {"scenario": "PRESET", "policy": "nope"}, "format": "json"}, "policy"),
    ({"data": {"scenario": "PRESET", "policy": ["expert"]}, "format": "json"}, "policy"),
    ({"data": {"scenario": "PRESET", "policy": "expert", "seed": -1}, "format": "json"}, "seed"),
    ({"data": {"scenario": "PRESET", "policy": "expert", "seed": "x"}, "format": "json"}, "seed"),
    ({"data": {"scenario": "PRESET", "policy": "expert", "seed": 2**70}, "format": "json"}, "seed"),
    ({"data": {"scenario": "PRESET", "policy": "expert", "seed": 1.5}, "format": "json"}, "seed"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("kwargs", "field"), BAD_CREATE)
def test_malformed_create_bodies_are_400_and_change_nothing(
    api_client_for, preset, snapshot_counts, django_capture_on_commit_callbacks, kwargs, field
) -> None:
    client = api_client_for("analyst")
    data = kwargs.get("data")
    if isinstance(data, dict) and data.get("scenario") == "PRESET":
        kwargs = {**kwargs, "data": {**data, "scenario": preset.pk}}
    before = snapshot_counts()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(URL, **kwargs)
    assert response.status_code in (400, 415), response.content
    assert response.json()[field], response.json()
    assert snapshot_counts() == before and callbacks == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    ["abc/", f"{MAX}/", "999999/", "abc/decisions/", f"{MAX}/decisions/", "999999/cancel/", "1.0/"],
)
def test_bad_ids_are_404(api_client_for, episodes, path, snapshot_counts) -> None:
    client = api_client_for("analyst")
    before = snapshot_counts()
    method = client.post if path.endswith("cancel/") else client.get
    assert method(f"{URL}{path}").status_code == 404
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_unsupported_methods_are_405(api_client_for, episodes) -> None:
    client = api_client_for("admin")
    done = episodes[0]
    assert client.put(f"{URL}{done.pk}/", {}, format="json").status_code == 405
    assert client.delete(f"{URL}{done.pk}/").status_code == 405


@pytest.mark.django_db
def test_replay_reproduces_a_finished_episode_and_refuses_others(api_client_for, seeded) -> None:
    from procurement.services.episode_runner import episode_run

    scenario = Scenario.objects.get(name="hard_arena")
    policy = PolicyConfig.objects.get(name="greedy_lowball")
    done = episode_create(scenario=scenario, policy=policy, seed=3, enqueue=False)
    episode_run(episode_id=done.pk, live_updates=False)
    queued = episode_create(scenario=scenario, policy=policy, seed=4, enqueue=False)
    client = api_client_for("analyst")

    body = client.post(f"/api/episodes/{done.pk}/replay/").json()
    done.refresh_from_db()
    assert body == {
        "episode_id": done.pk,
        "steps": done.steps,
        "stored_score": done.score,
        "replayed_score": pytest.approx(done.score),
        "matches": True,
    }
    response = client.post(f"/api/episodes/{queued.pk}/replay/")
    assert response.status_code == 409 and "queued" in response.json()["detail"]
    assert api_client_for("none").post(f"/api/episodes/{done.pk}/replay/").status_code == 403


@pytest.mark.django_db
def test_replay_of_an_llm_supplier_episode_reads_the_record_and_runs_no_model(
    api_client_for, expert
) -> None:
    from negotiation import run_episode
    from procurement.services.episodes import episode_finish
    from procurement.services.scenarios import scenario_copy
    from tests.negotiation.llm.scripted import ScriptedBackend
    from tests.negotiation.suppliers.test_recorded import failing, moody

    # A model that exists nowhere: replaying must not need it (a load would raise).
    scenario = scenario_copy(source=Scenario.objects.get(name="llm_bilateral"), name="nowhere")
    spec = {**scenario.config["supplier_llm"], "model": "/nonexistent/model"}
    scenario.config = {**scenario.config, "supplier_llm": spec}
    scenario.save(update_fields=["config"])
    episode = episode_create(scenario=scenario, policy=expert, seed=4, enqueue=False)
    assert episode.queue == "gpu"
    # Played with a scripted model (fair, rule-breaking, unparsable and failed replies).
    backend = ScriptedBackend(moody, error=failing)
    played = run_episode(episode.scenario_snapshot, "expert", 4, llm_backend=backend)
    attempt = episode_claim(episode=episode)
    records = [r.to_dict() for r in played.steps]
    episode_decisions_append(episode=episode, records=records, attempt=attempt)
    episode_finish(
        episode=episode, attempt=attempt, score=played.score, metrics={}, engine_seconds=0.0
    )
    assert {r["supplier_actor"] for r in records} >= {"llm", "fallback:rule"}

    body = api_client_for("analyst").post(f"/api/episodes/{episode.pk}/replay/").json()
    assert body["matches"] is True and body["steps"] == len(records)
    assert body["replayed_score"] == played.score


@pytest.mark.django_db
def test_an_episode_without_a_deal_has_no_buyer_share(api_client_for, preset, expert) -> None:
    # Before: buyer_share 0.0 (the engine's placeholder), shown as 0.000 on the episode page.
    no_deal = episode_create(scenario=preset, policy=expert, seed=1, enqueue=False)
    dealt = episode_create(scenario=preset, policy=expert, seed=2, enqueue=False)
    for episode, rate, share in ((no_deal, 0.0, 0.0), (dealt, 0.5, 0.0)):
        metrics = {"deal_rate": rate, "buyer_share": share, "rounds_per_deal": 3.0 * rate}
        Episode.objects.filter(pk=episode.pk).update(status="finished", metrics=metrics)
    api = api_client_for("analyst")
    shown = api.get(f"/api/episodes/{no_deal.pk}/").json()["metrics"]
    assert shown == {"deal_rate": 0.0, "buyer_share": None, "rounds_per_deal": None}
    kept = api.get(f"/api/episodes/{dealt.pk}/").json()["metrics"]
    assert kept["buyer_share"] == 0.0 and kept["rounds_per_deal"] == 1.5  # a deal at the ceiling
    page = api.get(f"/episodes/{no_deal.pk}/").content.decode()
    assert '"buyer_share": null' in page  # the page's own JSON, before any API call
    assert Episode.objects.get(pk=no_deal.pk).metrics["buyer_share"] == 0.0  # stored as run
