"""The supplier seat through the API: an analyst answers a rule buyer's offers as one
supplier; the run stops at each offer and goes on after the answer; bad answers and other
users change nothing; the buyer's side stays closed to the seat holder while it runs;
an idle seat passes to the rule supplier; the finished episode replays, exports, and
joins the suppliers' ratings as human:<username>."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from procurement import dispatch
from procurement.models import Episode
from procurement.services import supplier_seat
from procurement.services.datasets import dataset_export
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_replay
from procurement.services.evaluations import evaluation_create, start_evaluation
from procurement.worlds import episode_env
from tests.recording_runner import RecordingRunner

pytestmark = pytest.mark.django_db
SEED = 4


@pytest.fixture(autouse=True)
def _world_key(settings) -> None:
    settings.WORLD_KEY = "the test server's world key"


def _start(client, **over):
    body = {"scenario": "bilateral", "policy": "expert", "seed": SEED, **over}
    return client.post("/api/episodes/supplier-seat/", body, format="json")


@pytest.fixture
def seat(api_client_for, seeded):
    """An analyst's supplier seat against the expert buyer, stopped at its first offer."""
    analyst = api_client_for("analyst")
    response = _start(analyst)
    assert response.status_code == 201, response.json()
    episode_run(episode_id=response.json()["id"], live_updates=False)
    return analyst, Episode.objects.get(pk=response.json()["id"])


def _view(client, episode) -> dict:
    response = client.get(f"/api/episodes/{episode.pk}/seat/")
    assert response.status_code == 200
    return response.json()


def _answer(client, episode, **body):
    return client.post(f"/api/episodes/{episode.pk}/answer/", body, format="json")


def _buyer_secrets(episode) -> list[str]:
    """The buyer's private figures of this world as a page could print them."""
    world = episode_env(episode).world
    figures = [world.budget_total] + [r.ceiling_unit_price for r in world.requirements]
    return [f"{x:.2f}" for x in figures] + [f"{x:,.2f}" for x in figures]


def _play_to_the_end(client, episode) -> list[dict]:
    """Counter 3 % under the last ask (never below the lowest counter) until the buyer
    comes near, then accept; each answer sends the run on (here: played in-line)."""
    views = []
    for _ in range(60):
        episode.refresh_from_db()
        if episode.is_terminal:
            return views
        view = _view(client, episode)
        views.append(view)
        turn = view["turn"]
        assert turn is not None, view
        p = turn["private"]
        target = round(max(p["lowest_counter"], (p["last_counter"] or p["opening"]) * 0.97), 2)
        if turn["offer"] >= p["floor"] and turn["offer"] >= target * 0.9:
            body = {"decision": "accept", "message": f"Deal. Our floor was {p['floor']}."}
        else:
            said = f"We can do {target}; our floor is {p['floor']}."
            body = {"decision": "counter", "price": target, "message": said}
        response = _answer(client, episode, step=turn["step"], **body)
        assert response.status_code == 201, response.json()
        episode.refresh_from_db()
        if not episode.is_terminal:
            episode_run(episode_id=episode.pk, live_updates=False)
    raise AssertionError("the episode did not end")


def test_a_whole_episode_played_as_the_supplier(seat) -> None:
    analyst, episode = seat
    assert episode.sealed and episode.supplier_seat["supplier_id"] == "S01"
    assert episode.queue == "cpu"  # the buyer's lane: a rule buyer
    first = _view(analyst, episode)["turn"]
    assert first["step"] == episode.steps and first["offer"] > 0
    views = _play_to_the_end(analyst, episode)
    episode.refresh_from_db()
    assert episode.status == "finished" and episode.score is not None
    human = list(
        episode.decisions.filter(supplier_actor="human").values_list("response", flat=True)
    )
    assert len(human) == len(views) >= 2
    final = _view(analyst, episode)
    # the person's words reach the buyer as typed, though they name the floor (which
    # the guard screens out of a model's message)
    floor = first["private"]["floor"]
    assert human[0]["message"] == f"We can do {human[0]['price']}; our floor is {floor}."
    assert [r["message"] for r in human] == [r["message"] for r in final["thread"] if "by" in r]
    assert final["turn"] is None and final["private"]["floor"] == first["private"]["floor"]
    if episode.metrics["deal_rate"] > 0:  # the award that names the seat is on its thread
        assert any(r["kind"] == "award_contract" for r in final["thread"])
    # the seat's JSON never carries the buyer's side
    shown = json.dumps(views)
    for secret in _buyer_secrets(episode):
        assert secret not in shown
    for word in ("budget", "rationale", "ceiling", "events", "state"):
        assert word not in shown
    # a replay rebuilds the same world from the person's stored answers
    assert episode_replay(episode=episode).matches is True
    # the buyer's side exports as training data like any episode
    export = dataset_export(scenarios=["bilateral"])
    records = [json.loads(line) for line in export.lines()]
    mine = [r for r in records if r["episode_id"] == episode.pk]
    assert len(mine) == episode.steps and export.skipped_llm_suppliers == 0


def test_a_sealed_evaluation_takes_its_worlds_out_of_the_training_export(
    seat, api_client_for
) -> None:
    """A seat's episode on a world a sealed evaluation later holds out (exposed) is no
    longer training data; a public evaluation or another range leaves it in."""
    analyst, episode = seat
    _play_to_the_end(analyst, episode)
    bilateral = {"policies": "expert", "scenarios": "bilateral", "enqueue": False}
    start_evaluation(**bilateral, seeds=3, seed_start=SEED)  # public: nothing held out
    start_evaluation(**bilateral, seeds=3, seed_start=SEED + 1, sealed=True)  # other seeds
    export = dataset_export(scenarios=["bilateral"])
    assert episode.pk in {json.loads(line)["episode_id"] for line in export.lines()}
    assert export.skipped_held_out == 0
    held = start_evaluation(**bilateral, seeds=3, seed_start=SEED - 1, sealed=True)
    assert held.exposed[0]["episodes"] == [episode.pk]
    export = dataset_export(scenarios=["bilateral"])
    assert episode.pk not in {json.loads(line)["episode_id"] for line in export.lines()}
    assert export.skipped_held_out == 1
    assert "Left out 1 episodes on held-out worlds" in export.summary("x")
    response = api_client_for("analyst").get("/api/datasets/export/", {"scenario": "bilateral"})
    assert response.status_code == 200 and response["X-Held-Out-Excluded"] == "1"
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert episode.pk not in {json.loads(line)["episode_id"] for line in lines}


def test_the_buyer_side_is_closed_to_the_seat_holder_while_it_runs(seat, api_client_for) -> None:
    analyst, episode = seat
    for path in ("", "decisions/", "state/?step=-1", "approvals/"):
        assert analyst.get(f"/api/episodes/{episode.pk}/{path}").status_code == 403, path
    page = analyst.get(f"/episodes/{episode.pk}/")
    assert page.status_code == 302 and page["Location"].endswith("/supplier-seat/")
    for path in ("transcript.csv", "print/"):
        assert analyst.get(f"/episodes/{episode.pk}/{path}").status_code == 403
    needs = analyst.get("/api/episodes/", {"needs": "you"}).json()["results"]
    assert [e["id"] for e in needs] == [episode.pk]  # the offer waits on its holder
    html = analyst.get(f"/episodes/{episode.pk}/supplier-seat/").content.decode()
    assert "Your private facts" in html
    for secret in _buyer_secrets(episode):
        assert secret not in html
    # someone else reads the record (they do not play it), but may not answer
    other = api_client_for("analyst")
    assert other.get(f"/api/episodes/{episode.pk}/").status_code == 200
    turn = _view(analyst, episode)["turn"]
    before = episode.decisions.count()
    refused = _answer(other, episode, step=turn["step"], decision="walk_away")
    assert refused.status_code == 403
    assert episode.decisions.count() == before
    assert _view(analyst, episode)["turn"] == turn


def test_bad_answers_are_refused_and_change_nothing(seat, snapshot_counts) -> None:
    analyst, episode = seat
    turn = _view(analyst, episode)["turn"]
    p, step, offer = turn["private"], turn["step"], turn["offer"]
    assert offer < p["floor"]  # the expert opens low: accepting would sell below the floor
    before = snapshot_counts()
    for body, code, field in [
        ({"step": step + 1, "decision": "walk_away"}, 409, None),
        ({"step": step, "decision": "maybe"}, 400, "decision"),
        ({"step": step, "decision": "counter"}, 400, "price"),
        ({"step": step, "decision": "counter", "price": p["lowest_counter"] - 0.01}, 400, "price"),
        ({"step": step, "decision": "counter", "price": 1234.567}, 400, "price"),
        ({"step": step, "decision": "counter", "price": "abc"}, 400, "price"),
        ({"step": step, "decision": "accept"}, 400, "decision"),
        ({"step": step, "decision": "walk_away", "message": "x" * 2001}, 400, "message"),
        ({"step": -1, "decision": "walk_away"}, 400, "step"),
    ]:
        response = _answer(analyst, episode, **body)
        assert response.status_code == code, (body, response.json())
        if field is not None:
            data = response.json()
            assert data.get("field") == field or field in data, (body, data)
    assert snapshot_counts() == before
    assert _view(analyst, episode)["turn"] == turn
    # a counter above the last counter, once there is one
    first = _answer(analyst, episode, step=step, decision="counter", price=p["opening"])
    assert first.status_code == 201
    episode_run(episode_id=episode.pk, live_updates=False)
    turn = _view(analyst, episode)["turn"]
    raised = _answer(
        analyst, episode, step=turn["step"], decision="counter", price=p["opening"] + 1
    )
    assert raised.status_code == 400 and raised.json()["field"] == "price"
    # an answer played twice is played once
    again = _answer(analyst, episode, step=step, decision="walk_away")
    assert again.status_code == 409


@pytest.mark.parametrize(
    "over, field",
    [
        ({"supplier_id": "S99"}, "supplier_id"),
        ({"policy": "human"}, "policy"),
        ({"scenario": "llm_bilateral"}, "scenario"),
        ({"idle_seconds": 5}, "idle_seconds"),
        ({"seed": -3}, "seed"),
        ({"scenario": "no_such_scenario"}, "scenario"),
    ],
)
def test_a_bad_start_is_refused_and_creates_nothing(
    api_client_for, seeded, snapshot_counts, over, field
) -> None:
    analyst = api_client_for("analyst")
    before = snapshot_counts()
    response = _start(analyst, **over)
    assert response.status_code == 400 and field in json.dumps(response.json()), response.json()
    assert snapshot_counts() == before


def test_a_chosen_seed_in_a_sealed_range_is_refused_and_creates_nothing(
    api_client_for, seeded, snapshot_counts
) -> None:
    held = start_evaluation(
        policies="expert", scenarios="bilateral", seeds=5, seed_start=10, sealed=True, enqueue=False
    )
    start_evaluation(  # a public evaluation holds nothing back
        policies="expert", scenarios="bilateral", seeds=5, seed_start=20, enqueue=False
    )
    analyst = api_client_for("analyst")
    before = snapshot_counts()
    for seed in (10, 14):
        response = _start(analyst, seed=seed)
        assert response.status_code == 400, response.json()
        assert f"sealed evaluation #{held.pk}" in json.dumps(response.json()["seed"])
    assert snapshot_counts() == before
    # outside the range, on a public evaluation's seeds, or drawn by the server: allowed
    for over in ({"seed": 9}, {"seed": 15}, {"seed": 22}, {}):
        assert _start(analyst, **over).status_code == 201, over
    assert Episode.objects.filter(supplier_seat__isnull=False).count() == 4


def test_a_rehearsed_world_is_rated_once(api_client_for, seeded) -> None:
    analyst = api_client_for("analyst")
    for _ in range(2):  # the same world twice, before any evaluation holds it
        response = _start(analyst)
        assert response.status_code == 201
        episode = Episode.objects.get(pk=response.json()["id"])
        episode_run(episode_id=episode.pk, live_updates=False)
        _play_to_the_end(analyst, episode)
    evaluation = evaluation_create(
        policies="expert", scenarios="bilateral", seeds=1, seed_start=SEED, sealed=True
    )
    name = f"human:{analyst.user.get_username()}"
    suppliers = {r["player"]: r for r in evaluation.ratings if r["kind"] == "supplier"}
    assert suppliers[name]["matches"] == 1


def test_an_idle_seat_passes_to_the_rule_supplier(seat) -> None:
    analyst, episode = seat
    assert supplier_seat.idle_turns() == []
    seat_json = dict(episode.supplier_seat)
    asked = timezone.now() - timedelta(seconds=seat_json["idle_seconds"] + 1)
    seat_json["turn"] = {**seat_json["turn"], "asked_at": asked.isoformat()}
    Episode.objects.filter(pk=episode.pk).update(supplier_seat=seat_json)
    assert [e.pk for e in supplier_seat.idle_turns()] == [episode.pk]
    step = seat_json["turn"]["step"]
    assert supplier_seat.supplier_seat_hand_over(episode=episode)
    assert not supplier_seat.supplier_seat_hand_over(episode=episode)  # once
    view = _view(analyst, episode)
    assert view["turn"] is None and view["handed_over"]["step"] == step
    late = _answer(analyst, episode, step=step, decision="walk_away")
    assert late.status_code == 409
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    assert episode.status == "finished"
    actors = set(
        episode.decisions.exclude(supplier_actor=None).values_list("supplier_actor", flat=True)
    )
    assert actors == {"timeout:rule"}
    answers = [r for r in _view(analyst, episode)["thread"] if "by" in r]
    assert answers and {r["by"] for r in answers} == {"rule supplier (timed out)"}
    assert episode_replay(episode=episode).matches is True


def test_a_finished_seat_joins_the_suppliers_ratings(seat) -> None:
    analyst, episode = seat
    _play_to_the_end(analyst, episode)
    name = f"human:{analyst.user.get_username()}"
    evaluation = evaluation_create(
        policies="expert", scenarios="bilateral", seeds=1, seed_start=SEED, sealed=True
    )
    suppliers = {r["player"]: r for r in evaluation.ratings if r["kind"] == "supplier"}
    assert name in suppliers and suppliers[name]["matches"] == 1
    assert name not in {r["player"] for r in evaluation.ratings if r["kind"] == "buyer"}
    # an evaluation of public worlds played other worlds: the seat does not join it
    public = evaluation_create(policies="expert", scenarios="bilateral", seeds=1, seed_start=SEED)
    assert name not in {r["player"] for r in public.ratings}


@pytest.mark.django_db(transaction=True)  # an LLM episode hands its connection back
def test_an_llm_buyer_plays_on_the_model_lane_and_waits_for_the_seat(
    api_client_for, seeded, tiny_model, monkeypatch, settings
) -> None:
    from procurement.services.policies import policy_create

    # narrator: the expert picks action and price, the model writes the words
    params = {"mode": "narrator", "max_tokens": 24}
    policy_create(
        name="tiny", policy="llm", backend="transformers", model=str(tiny_model), params=params
    )
    analyst = api_client_for("analyst")
    # The runs are handed to a recorder and played here, never also by a lane thread.
    runner = RecordingRunner()
    monkeypatch.setattr(dispatch, "_local_runner", lambda: runner)
    settings.TASK_RUNNER = "thread"
    response = _start(analyst, policy="tiny")
    assert response.status_code == 201, response.json()
    episode = Episode.objects.get(pk=response.json()["id"])
    assert episode.queue == "gpu"
    assert [(args, queue) for _, args, queue in runner.sent] == [((episode.pk,), "gpu")]
    episode_run(episode_id=episode.pk, live_updates=False)
    turn = _view(analyst, episode)["turn"]
    assert turn is not None and turn["step"] == 0
    answer = _answer(analyst, episode, step=0, decision="walk_away", message="No.")
    assert answer.status_code == 201 and answer.json()["response"]["response"] == "walk_away"
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    assert episode.status == "finished"  # the only seller walked: nothing left to buy
    stored = episode.decisions.get(step=0)
    assert stored.supplier_actor == "human" and stored.actor in {"llm", "fallback:expert"}


def test_in_an_arena_the_seat_never_shows_the_other_suppliers(api_client_for, seeded) -> None:
    """Seated as one of several suppliers, after the buyer has talked to others: none of
    their private prices, nor their words, reach the seat."""
    analyst = api_client_for("analyst")
    for sid in ("S01", "S02", "S03", "S04", "S05"):
        response = _start(analyst, scenario="easy_negotiation", supplier_id=sid)
        assert response.status_code == 201, response.json()
        episode = Episode.objects.get(pk=response.json()["id"])
        episode_run(episode_id=episode.pk, live_updates=False)
        episode.refresh_from_db()
        env = episode_env(episode)
        for action in episode.decisions.order_by("step").values_list("action", flat=True):
            env.step(action)
        others = [(k, h) for k, h in env.world.th_hidden.items() if k[0] != sid]
        if not others or episode.is_terminal:
            continue  # the buyer has talked to no one else yet: try another seat
        shown = json.dumps(_view(analyst, episode))
        for _, hidden in others:
            for x in (hidden.reservation, hidden.cost, hidden.floor, hidden.anchor):
                assert f"{x:.2f}" not in shown
        said = [
            r["message"]
            for r in episode.decisions.exclude(response=None).values_list("response", flat=True)
            if r["supplier_id"] != sid
        ]
        assert said and not any(m in shown for m in said)
        assert '"S0' not in shown.replace(f'"{sid}"', "")  # no other supplier is named
        return
    raise AssertionError("no seat met a buyer who had talked to another supplier first")
