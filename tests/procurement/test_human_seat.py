"""The human seat: an analyst plays the buyer move by move through the API; no worker
waits; refused moves store nothing; each move is played exactly once (it names its step);
idle seats are handed to the fallback policy."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from rest_framework.test import APIClient

from negotiation import ProcurementEnv, get_policy, load_scenario
from procurement.models import Decision, Episode, PolicyConfig, Scenario
from procurement.services import human_seat
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def seat(api_client_for, seeded):
    analyst = api_client_for("analyst")
    episode = episode_create(
        scenario=Scenario.objects.get(name="bilateral_hardball"),
        policy=PolicyConfig.objects.get(name="human"),
        seed=0,
        user=analyst.user,
    )
    return analyst, episode


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
    first = _act(analyst, episode, {**offer, "price": 21.0})
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
    second = _act(analyst, episode, {**offer, "price": 22.0})
    assert second.status_code == 201 and second.json()["step"] == 1


def test_a_move_for_a_step_already_played_is_refused_and_changes_nothing(
    seat, snapshot_counts
) -> None:
    analyst, episode = seat
    move = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    assert _act(analyst, episode, {**move, "price": 21.0}, step=0).status_code == 201
    before = snapshot_counts()
    for step in (0, 2):  # resent or stale; a step not reached yet
        refused = _act(analyst, episode, {**move, "price": 22.0}, step=step)
        assert refused.status_code == 409, refused.json()
        assert refused.json()["next_step"] == 1 and "nothing was played" in refused.json()["detail"]
    missing = analyst.post(
        f"/api/episodes/{episode.pk}/act/", {"action": {**move, "price": 22.0}}, format="json"
    )
    assert missing.status_code == 400 and "step" in missing.json()
    assert snapshot_counts() == before
    assert _act(analyst, episode, {**move, "price": 22.0}, step=1).status_code == 201


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
        seed=0,
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
    env = ProcurementEnv(load_scenario(episode.scenario_snapshot))
    observation = env.reset(seed=episode.seed)
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
    assert _act(analyst, episode, {**offer, "price": 21.0}).status_code == 201
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
    late = _act(analyst, idle, {**offer, "price": 23.0})
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
