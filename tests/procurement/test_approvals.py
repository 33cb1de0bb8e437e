"""Human approval of escalations: the run stops and frees its worker, an approver (or
the timeout) answers, the run goes on, and the decision records who answered and when."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from negotiation import load_scenario, run_episode
from procurement.models import ApprovalRequest, Episode, PolicyConfig
from procurement.selectors.approvals import pending_approvals
from procurement.services import approvals, recovery
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.scenarios import scenario_create
from procurement.services.sweeps import sweep_create

pytestmark = pytest.mark.django_db
SEED = 1  # the expert escalates at step 5 of easy_negotiation with this seed


@pytest.fixture
def gated(seeded):
    config = {**load_scenario("easy_negotiation").model_dump(), "escalation_approver": "human"}
    return scenario_create(name="approvals_demo", config=config)


@pytest.fixture
def waiting(gated, api_client_for):
    starter = api_client_for("analyst")
    episode = episode_create(
        scenario=gated,
        policy=PolicyConfig.objects.get(name="expert"),
        seed=SEED,
        user=starter.user,
        enqueue=False,
    )
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    return starter, episode


def _escalation_step() -> int:
    result = run_episode("easy_negotiation", "expert", seed=SEED)
    return next(s.step for s in result.steps if s.action["action_type"] == "escalate")


def test_the_run_stops_at_the_escalation_and_frees_its_worker(waiting) -> None:
    _, episode = waiting
    step = _escalation_step()
    [request] = pending_approvals(episode=episode)
    assert (episode.status, episode.steps, request.step) == ("running", step, step)
    assert request.action["action_type"] == "escalate" and "approval" not in request.action
    stalled = recovery.stalled_episode_ids(live=[], queued_grace_s=0, stall_s=0)
    assert episode.pk not in [pk for pk, _ in stalled]  # waits for a person, not a worker


def test_an_approved_escalation_records_who_and_when_and_plays_as_the_rule(waiting) -> None:
    starter, episode = waiting
    answer = starter.post(f"/api/episodes/{episode.pk}/approve/")
    assert answer.status_code == 200 and answer.json()["decided_by"] == starter.user.username
    assert starter.post(f"/api/episodes/{episode.pk}/approve/").status_code == 409  # once
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    decision = episode.decisions.get(step=_escalation_step())
    assert decision.action["approval"]["decision"] == "approved"
    assert decision.action["approval"]["by"] == starter.user.username
    assert decision.action["approval"]["at"]
    plain = run_episode("easy_negotiation", "expert", seed=SEED)
    assert episode.status == "finished" and episode.score == pytest.approx(plain.score)


def test_a_refused_escalation_has_no_effect_and_costs_nothing(waiting) -> None:
    starter, episode = waiting
    assert starter.post(f"/api/episodes/{episode.pk}/refuse/").status_code == 200
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    decision = episode.decisions.get(step=_escalation_step())
    assert decision.action["approval"]["decision"] == "refused" and decision.valid
    assert [e["kind"] for e in decision.events][:1] == ["escalation_refused"]
    assert decision.reward == 0.0


def test_without_an_answer_the_scenarios_rule_decides_at_the_deadline(waiting) -> None:
    _, episode = waiting
    assert approvals.approvals_expire() == []  # not yet
    ApprovalRequest.objects.update(deadline=timezone.now() - timedelta(seconds=1))
    assert approvals.approvals_expire() == [episode.pk]
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    approval = episode.decisions.get(step=_escalation_step()).action["approval"]
    assert approval == {**approval, "decision": "timed_out", "by": "the scenario's rule"}
    assert episode.status == "finished"


def test_only_people_who_steer_the_run_answer(waiting, api_client_for) -> None:
    _, episode = waiting
    other = api_client_for("analyst")
    assert other.post(f"/api/episodes/{episode.pk}/approve/").status_code == 403
    assert api_client_for("ops").post(f"/api/episodes/{episode.pk}/refuse/").status_code == 200


def test_cancelling_withdraws_the_request(waiting) -> None:
    starter, episode = waiting
    assert starter.post(f"/api/episodes/{episode.pk}/cancel/").status_code == 200
    assert ApprovalRequest.objects.get(episode=episode).status == "withdrawn"
    assert pending_approvals() == []


def test_sweeps_never_wait_for_a_person(gated) -> None:
    from procurement.services.sweep_runner import sweep_cells_run, sweep_start

    sweep = sweep_create(
        scenarios=[gated],
        policies=[PolicyConfig.objects.get(name="expert")],
        seeds=2,
        enqueue=False,
    )
    for chunk in sweep_start(sweep_id=sweep.pk):
        sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunk.cell_ids)
    assert not ApprovalRequest.objects.exists()
    assert Episode.objects.filter(sweep=sweep, status="finished").count() == 2
