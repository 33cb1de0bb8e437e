"""The human seat: an analyst plays the buyer move by move through the API; no worker
waits; refused moves store nothing; each move is played exactly once (it names its step);
idle seats are handed to the fallback policy."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from rest_framework.test import APIClient

from negotiation import ProcurementEnv, get_policy, load_scenario
from procurement.models import Decision, Episode, PolicyConfig, Scenario
from procurement.selectors import live as live_selectors
from procurement.selectors.live import episode_snapshot
from procurement.services import human_seat
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create, episode_replay
from procurement.services.evaluations import evaluation_create
from procurement.worlds import episode_env

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _world_key(settings) -> None:
    settings.WORLD_KEY = "the test server's world key"


@pytest.fixture
def seat(api_client_for, seeded):
    analyst = api_client_for("analyst")
    episode = episode_create(
        scenario=Scenario.objects.get(name="bilateral_hardball"),
        policy=PolicyConfig.objects.get(name="human"),
        user=analyst.user,
    )
    # the server drew a seed at random: the tests below play one known sealed world
    Episode.objects.filter(pk=episode.pk).update(seed=0)
    episode.refresh_from_db()
    return analyst, episode


OFFER = {"action_type": "negotiate"}


def _list_price(client, episode) -> float:
    """S01's asking price for R01, as the seat's board shows it."""
    state = client.get(f"/api/episodes/{episode.pk}/state/", {"step": -1}).json()
    return state["suppliers"][0]["list_prices"]["R01"]


def _act(client, episode, action, step: int | None = None):
    """POST a move for ``step`` (default: the next one, as a page that is up to date)."""
    if step is None:
        step = Episode.objects.get(pk=episode.pk).steps
    body = {"step": step, "action": action}
    return client.post(f"/api/episodes/{episode.pk}/act/", body, format="json")


def test_a_human_episode_waits_for_its_analyst_on_no_queue(seat) -> None:
    _, episode = seat
    assert (episode.status, episode.queue, episode.attempts) == ("running", "human", 1)
    assert episode.decisions.count() == 0


def test_valid_moves_are_stored_and_refused_ones_change_nothing(seat, snapshot_counts) -> None:
    analyst, episode = seat
    offer = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    ask = _list_price(analyst, episode)
    first = _act(analyst, episode, {**offer, "price": round(ask * 0.8, 2)})
    assert first.status_code == 201, first.json()
    assert first.json()["actor"] == "human" and first.json()["response"]["response"]
    before = snapshot_counts()
    for action, code, field in [
        ({**offer, "supplier_id": "S99", "price": 21.0}, "unknown_supplier", "supplier_id"),
        ({**offer, "price": -5}, "out_of_range", "price"),
        (offer, "missing_field", "price"),
        ({"action_type": "fly"}, "unknown_action_type", "action_type"),
    ]:
        refused = _act(analyst, episode, action)
        assert refused.status_code == 400
        assert refused.json()["code"] == code and refused.json()["field"] == field
    assert snapshot_counts() == before
    second = _act(analyst, episode, {**offer, "price": round(ask * 0.82, 2)})
    assert second.status_code == 201 and second.json()["step"] == 1


def test_a_move_for_a_step_already_played_is_refused_and_changes_nothing(
    seat, snapshot_counts
) -> None:
    analyst, episode = seat
    move = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    ask = _list_price(analyst, episode)
    first, second = round(ask * 0.8, 2), round(ask * 0.82, 2)
    assert _act(analyst, episode, {**move, "price": first}, step=0).status_code == 201
    before = snapshot_counts()
    for step in (0, 2):  # resent or stale; a step not reached yet
        refused = _act(analyst, episode, {**move, "price": second}, step=step)
        assert refused.status_code == 409, refused.json()
        assert refused.json()["next_step"] == 1 and "nothing was played" in refused.json()["detail"]
    missing = analyst.post(
        f"/api/episodes/{episode.pk}/act/", {"action": {**move, "price": second}}, format="json"
    )
    assert missing.status_code == 400 and "step" in missing.json()
    assert snapshot_counts() == before
    assert _act(analyst, episode, {**move, "price": second}, step=1).status_code == 201


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_moves_store_exactly_one(user_with_role, seeded) -> None:
    """Six identical moves at once, each on its own connection: one is played, five are
    refused. (The embedded SQLite file, whose IMMEDIATE transactions serialise them, is
    checked on the real site in test_pages_browser: the tests' in-memory SQLite refuses
    concurrent writers outright instead of waiting.)"""
    analyst = user_with_role("analyst")
    episode = episode_create(
        scenario=Scenario.objects.get(name="bilateral_hardball"),
        policy=PolicyConfig.objects.get(name="human"),
        user=analyst,
    )
    move = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    start = threading.Barrier(6)

    def play(_: int) -> int:
        client = APIClient()
        client.force_login(analyst)
        try:
            start.wait(timeout=30)
            return _act(client, episode, {**move, "price": 21.0}, step=0).status_code
        finally:
            connections.close_all()  # this thread's own connection

    with ThreadPoolExecutor(6) as pool:
        codes = sorted(pool.map(play, range(6)))
    assert codes == [201, 409, 409, 409, 409, 409]
    assert list(Decision.objects.filter(episode=episode).values_list("step", flat=True)) == [0]
    episode.refresh_from_db()
    assert episode.steps == 1 and episode.status == "running"


def test_only_the_seat_holder_plays_and_only_while_it_runs(seat, api_client_for) -> None:
    analyst, episode = seat
    move = {"action_type": "defer"}
    assert _act(api_client_for("ops"), episode, move).status_code == 403
    assert _act(api_client_for("anonymous"), episode, move).status_code in (401, 403)
    assert analyst.post(f"/api/episodes/{episode.pk}/cancel/").status_code == 200
    gone = _act(analyst, episode, move)
    assert gone.status_code == 409 and "cancelled" in gone.json()["detail"]
    assert Decision.objects.filter(episode=episode).count() == 0


def test_a_human_playing_the_experts_moves_gets_the_experts_score(seat) -> None:
    analyst, episode = seat
    env = episode_env(episode)  # the server's own view: the seat's sealed world
    observation = env.observation()
    expert = get_policy("expert", seed=episode.seed)
    while not env.done:
        action = expert.act(observation)
        assert _act(analyst, episode, action).status_code == 201
        observation = env.step(action).observation
    episode.refresh_from_db()
    assert episode.status == "finished" and episode.steps == env.world.steps_taken
    assert episode.score == pytest.approx(env.score().score)


def test_an_idle_seat_is_handed_to_the_fallback_which_finishes_it(seat) -> None:
    analyst, episode = seat
    offer = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    price = round(_list_price(analyst, episode) * 0.8, 2)
    assert _act(analyst, episode, {**offer, "price": price}).status_code == 201
    assert human_seat.idle_seats() == []
    Episode.objects.filter(pk=episode.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    [idle] = human_seat.idle_seats()
    assert human_seat.seat_hand_over(episode=idle) and not human_seat.seat_hand_over(
        episode=idle
    )  # once
    assert (idle.queue, idle.policy_snapshot["policy"]) == ("cpu", "expert")
    assert idle.policy_name == "human then expert"
    episode_run(episode_id=idle.pk, live_updates=False)
    idle.refresh_from_db()
    actors = list(idle.decisions.order_by("step").values_list("actor", flat=True))
    assert idle.status == "finished" and actors[0] == "human" and set(actors[1:]) == {"policy"}
    # the fallback played on in the seat's sealed world: a replay with the key agrees
    assert idle.sealed and episode_replay(episode=idle).matches
    late = _act(analyst, idle, {**offer, "price": price})
    assert late.status_code == 400  # no longer a human episode


def test_the_seat_needs_rule_suppliers_and_stays_out_of_sweeps(api_client_for, seeded) -> None:
    api = api_client_for("ops")
    llm = api.post(
        "/api/episodes/", {"scenario": "llm_bilateral", "policy": "human"}, format="json"
    )
    assert llm.status_code == 400 and "language models" in str(llm.json()["scenario"])
    sweep = api.post(
        "/api/sweeps/",
        {"scenarios": ["bilateral"], "policies": ["human"], "seeds": 1},
        format="json",
    )
    assert sweep.status_code == 400 and "human" in str(sweep.json()["policies"])
    assert not Episode.objects.exists()


def test_the_human_policy_refuses_to_run_unattended() -> None:
    from negotiation import run_episode
    from negotiation.policies import HumanSeatError

    with pytest.raises(HumanSeatError, match="episode page"):
        run_episode("bilateral", "human", seed=0)


# --- a sealed seat: its world cannot be rebuilt from what its holder is shown ---------------

SEAT = {"scenario": "easy_negotiation", "policy": "human"}


def _open_seat(client) -> int:
    created = client.post("/api/episodes/", SEAT, format="json")
    assert created.status_code == 201, created.json()
    return created.json()["id"]


def _everything_shown(client, pk: int) -> dict:
    """What the seat's holder can read about it: the API (detail, list, decisions, the
    replay boards' state), the page and the live stream's snapshot."""
    return {
        "detail": client.get(f"/api/episodes/{pk}/").json(),
        "list": client.get("/api/episodes/").json()["results"],
        "decisions": client.get(f"/api/episodes/{pk}/decisions/").json(),
        "state": client.get(f"/api/episodes/{pk}/state/", {"step": -1}).json(),
        "page": client.get(f"/episodes/{pk}/").content.decode(),
        "overview": client.get("/").content.decode(),
        "snapshot": episode_snapshot(episode_id=pk)[1],
    }


def test_a_seat_holder_cannot_replay_the_suppliers_from_what_they_are_shown(
    api_client_for, seeded
) -> None:
    analyst = api_client_for("analyst")
    pk = _open_seat(analyst)
    # The worst case, and one known world: the server happened to draw a seed the player
    # guesses first.
    Episode.objects.filter(pk=pk).update(seed=0)
    shown = _everything_shown(analyst, pk)
    rows = [shown["detail"], shown["snapshot"]["episode"], *shown["list"]]
    seeds = {row["seed"] for row in rows if row["id"] == pk and row["seed"] is not None}
    seeds |= {int(s) for s in re.findall(r"seed (\d+)", shown["page"])}
    # A player without a shown seed guesses; with one, on main, a local engine fed the
    # shown seed and scenario snapshot answered exactly as the server did.
    candidates = seeds | set(range(16))
    config = shown["detail"]["scenario_snapshot"]
    state = shown["state"]
    moves = []
    for r in state["requirements"]:
        s = next(s for s in state["suppliers"] if r["id"] in s["list_prices"])
        price = round(s["list_prices"][r["id"]] * 0.85, 2)
        moves.append({**OFFER, "supplier_id": s["id"], "requirement_id": r["id"], "price": price})
    answers = []
    for move in moves:
        played = _act(analyst, Episode(pk=pk), move)
        assert played.status_code == 201, played.json()
        answers.append(played.json()["response"])
    for seed in candidates:
        local = ProcurementEnv(load_scenario(config))
        local.reset(seed=seed)
        predicted = [local.step(move).info["response"] for move in moves]
        # no answer (price, message and tells) predicted: as good as chance
        assert not [p for p, a in zip(predicted, answers, strict=True) if p == a], seed


def test_a_seats_seed_is_shown_to_no_one_until_it_ends(api_client_for, seeded) -> None:
    analyst, ops = api_client_for("analyst"), api_client_for("ops")
    pk = _open_seat(analyst)
    seed = 987_654_321_012  # no other number on a page looks like it
    Episode.objects.filter(pk=pk).update(seed=seed)
    assert _act(analyst, Episode(pk=pk), {"action_type": "defer"}).status_code == 201
    for client in (analyst, ops):
        shown = _everything_shown(client, pk)
        assert shown["detail"]["seed"] is None and shown["detail"]["sealed"] is True
        assert str(seed) not in json.dumps(shown)
        assert client.get("/api/episodes/", {"seed": seed}).json()["count"] == 0
    episode = Episode.objects.get(pk=pk)
    assert str(seed) not in str(episode) and live_selectors.episode_payload(episode)["seed"] is None

    assert analyst.post(f"/api/episodes/{pk}/cancel/").status_code == 200  # it ends
    shown = _everything_shown(analyst, pk)
    assert shown["detail"]["seed"] == seed and shown["snapshot"]["episode"]["seed"] == seed
    assert f"seed {seed}" in shown["page"]
    assert analyst.get("/api/episodes/", {"seed": seed}).json()["count"] == 1


def test_the_server_draws_each_seats_seed_and_refuses_a_chosen_one(
    api_client_for, seeded, snapshot_counts
) -> None:
    analyst = api_client_for("analyst")
    first, second = (Episode.objects.get(pk=_open_seat(analyst)) for _ in range(2))
    assert first.sealed and second.sealed and first.seed != second.seed
    before = snapshot_counts()
    chosen = analyst.post("/api/episodes/", {**SEAT, "seed": first.seed}, format="json")
    assert chosen.status_code == 400 and chosen.json()["seed"] == [human_seat.SEAT_SEED_REFUSED]
    page = analyst.post("/episodes/new/", {**SEAT, "seed": 5, "pace": "live"})
    assert page.status_code == 400 and "leave seed out" in page.content.decode()
    assert snapshot_counts() == before


def test_the_persons_words_are_kept_on_their_decision(seat) -> None:
    analyst, episode = seat
    price = round(_list_price(analyst, episode) * 0.8, 2)
    words = {"message": "Can you do better?", "rationale": "Anchor low."}
    offer = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    played = _act(analyst, episode, {**offer, "price": price, **words})
    assert played.status_code == 201
    assert {k: played.json()[k] for k in words} == words
    stored = Decision.objects.get(episode=episode)
    assert (stored.message, stored.rationale) == (words["message"], words["rationale"])


def test_the_seats_state_lists_the_actions_the_engine_admits(seat) -> None:
    analyst, episode = seat
    state = analyst.get(f"/api/episodes/{episode.pk}/state/", {"step": -1}).json()
    negotiate = [o for o in state["valid_actions"] if o["action_type"] == "negotiate"]
    assert negotiate and negotiate[0]["fields"]["supplier_id"]["values"] == ["S01"]
    assert negotiate[0]["fields"]["price"]["high"] > 0
    assert state["actions_left_this_week"] == state["actions_per_week"]


def test_a_takeover_is_recorded_and_announced(seat, monkeypatch) -> None:
    _, episode = seat
    sent = []
    monkeypatch.setattr(human_seat.live, "publish_episode_status", sent.append)
    Episode.objects.filter(pk=episode.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    [idle] = human_seat.idle_seats()
    assert human_seat.seat_hand_over(episode=idle)
    shown = live_selectors.episode_payload(idle)["handed_over"]
    assert (shown["to"], shown["idle_seconds"], shown["step"]) == ("expert", 600, 0)
    assert sent == [idle]


def test_only_the_latest_state_carries_the_valid_actions(seat) -> None:
    analyst, episode = seat
    price = round(_list_price(analyst, episode) * 0.8, 2)
    offer = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    assert _act(analyst, episode, {**offer, "price": price}).status_code == 201
    url = f"/api/episodes/{episode.pk}/state/"
    assert "valid_actions" not in analyst.get(url, {"step": -1}).json()  # scrubbed back
    assert analyst.get(url, {"step": 0}).json()["valid_actions"]


def test_a_finished_seat_joins_a_sealed_evaluations_buyer_ratings(seat) -> None:
    analyst, episode = seat
    env = episode_env(episode)
    observation = env.observation()
    expert = get_policy("expert", seed=episode.seed)
    while not env.done:
        action = expert.act(observation)
        assert _act(analyst, episode, action).status_code == 201
        observation = env.step(action).observation
    name = f"human:{analyst.user.get_username()}"
    options = {"policies": "expert", "scenarios": "bilateral_hardball", "seeds": 1}
    sealed = evaluation_create(**options, sealed=True)
    buyers = {r["player"]: r for r in sealed.ratings if r["kind"] == "buyer"}
    # the same sealed world and the expert's own moves: a tie in the one match played
    assert buyers[name]["matches"] == 1 and buyers[name]["mu"] == buyers["expert"]["mu"]
    # a public evaluation played other worlds: the seat does not join it
    public = evaluation_create(**options)
    assert name not in {r["player"] for r in public.ratings}
