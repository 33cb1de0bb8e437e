"""Human approval of escalations: the run stops and frees its worker, someone other than
its starter (or the timeout) answers, the run goes on, a refusal stands for its
requirement, and every answer records who, when and why."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from negotiation import load_scenario, run_episode
from procurement.models import ApprovalRequest, Episode, PolicyConfig
from procurement.selectors.approvals import pending_approvals
from procurement.services import approvals, recovery
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.scenarios import scenario_create
from procurement.services.sweeps import sweep_create

pytestmark = pytest.mark.django_db
SEED = 1  # the expert escalates once in easy_negotiation with this seed
# With this seed the expert escalates R06's pending PR at steps 5, 9 and 11 when refused.
REPEATS = ("medium_adversarial", 2, "R06")


@pytest.fixture
def gated_scenario(seeded) -> Callable:
    names = iter(range(100))

    def make(base: str = "easy_negotiation", **over):
        config = {**load_scenario(base).model_dump(), "escalation_approver": "human", **over}
        return scenario_create(name=f"gated_{next(names)}", config=config)

    return make


@pytest.fixture
def gated(gated_scenario):
    return gated_scenario()


def _start(scenario, user, seed: int = SEED) -> Episode:
    episode = episode_create(
        scenario=scenario,
        policy=PolicyConfig.objects.get(name="expert"),
        seed=seed,
        user=user,
        enqueue=False,
    )
    return _run(episode)


def _run(episode: Episode) -> Episode:
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    return episode


@pytest.fixture
def waiting(gated, api_client_for):
    starter = api_client_for("analyst")
    return starter, _start(gated, starter.user)


def _escalation_steps(scenario: str = "easy_negotiation", seed: int = SEED) -> list[int]:
    result = run_episode(scenario, "expert", seed=seed)
    return [s.step for s in result.steps if s.action["action_type"] == "escalate"]


def _answer(client, episode: Episode, verb: str):
    return client.post(f"/api/episodes/{episode.pk}/{verb}/")


def test_the_run_stops_at_the_escalation_and_frees_its_worker(waiting) -> None:
    _, episode = waiting
    [step] = _escalation_steps()
    [request] = pending_approvals(episode=episode)
    assert (episode.status, episode.steps, request.step) == ("running", step, step)
    assert request.action["action_type"] == "escalate" and "approval" not in request.action
    assert request.stake > 0  # the PR's amount
    stalled = recovery.stalled_episode_ids(live=[], queued_grace_s=0, stall_s=0)
    assert episode.pk not in [pk for pk, _ in stalled]  # waits for a person, not a worker


def test_the_request_says_what_is_at_stake_and_who_answers_in_plain_words(waiting) -> None:
    starter, episode = waiting
    body = starter.get(f"/api/episodes/{episode.pk}/approvals/").json()[0]
    assert body["subject"].startswith("approve PR") and "for R" in body["subject"]
    assert f"{body['stake']:,.2f}" in body["subject"] and body["requested_at"]
    assert body["approvers"] == "ops or admins"  # was "opss or admins"


def test_the_request_carries_the_rule_policys_reason_not_the_action_played(
    waiting, api_client_for
) -> None:
    starter, episode = waiting
    body = starter.get(f"/api/episodes/{episode.pk}/approvals/").json()[0]
    assert body["rationale"] and "escalat" in body["rationale"].lower()  # the expert's why
    assert _answer(api_client_for("ops"), episode, "approve").status_code == 200
    episode = _run(episode)
    played = episode.decisions.get(step=body["step"])
    assert "rationale" not in played.action  # the reason is the decision's, not an action field
    assert played.rationale == body["rationale"]


def test_an_approved_escalation_records_who_when_and_why_and_plays_as_the_rule(
    waiting, api_client_for
) -> None:
    _, episode = waiting
    ops = api_client_for("ops")
    answer = _answer(ops, episode, "approve")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["decided_by"], body["answered_by"]) == (ops.user.username, ops.user.username)
    assert body["decided_at"] and body["reason"] == f"Approved by {ops.user.username} (ops)."
    assert _answer(ops, episode, "approve").status_code == 409  # once
    episode = _run(episode)
    [step] = _escalation_steps()
    approval = episode.decisions.get(step=step).action["approval"]
    assert (approval["decision"], approval["by"]) == ("approved", ops.user.username)
    assert approval["at"] and approval["reason"] == body["reason"]
    plain = run_episode("easy_negotiation", "expert", seed=SEED)
    assert episode.status == "finished" and episode.score == pytest.approx(plain.score)
    [listed] = ops.get(f"/api/episodes/{episode.pk}/approvals/").json()
    assert listed == {**body, "status": "approved"}


def test_a_refused_escalation_has_no_effect_and_costs_nothing(waiting, api_client_for) -> None:
    _, episode = waiting
    assert _answer(api_client_for("ops"), episode, "refuse").status_code == 200
    episode = _run(episode)
    [step] = _escalation_steps()
    decision = episode.decisions.get(step=step)
    assert decision.action["approval"]["decision"] == "refused" and decision.valid
    assert [e["kind"] for e in decision.events][:1] == ["escalation_refused"]
    assert decision.reward == 0.0


def test_without_an_answer_the_scenarios_rule_decides_at_the_deadline(waiting) -> None:
    _, episode = waiting
    assert approvals.approvals_expire() == []  # not yet
    ApprovalRequest.objects.update(deadline=timezone.now() - timedelta(seconds=1))
    assert approvals.approvals_expire() == [episode.pk]
    episode = _run(episode)
    [step] = _escalation_steps()
    approval = episode.decisions.get(step=step).action["approval"]
    assert approval == {**approval, "decision": "timed_out", "by": "the scenario's rule"}
    assert approval["at"] and approval["reason"].startswith("No answer within 120 s")
    assert ApprovalRequest.objects.get().decided_by is None
    assert episode.status == "finished"


@pytest.mark.parametrize("role", ["analyst", "ops", "admin", "superuser"])
def test_the_starter_never_answers_whatever_their_role(
    gated, api_client_for, django_user_model, role
) -> None:
    if role == "superuser":
        starter = APIClient()
        starter.user = django_user_model.objects.create_superuser("root", password="x" * 16)
        starter.force_login(starter.user)
    else:
        starter = api_client_for(role)
    episode = _start(gated, starter.user)
    for verb in ("approve", "refuse"):
        answer = _answer(starter, episode, verb)
        assert answer.status_code == 403
        assert answer.json()["detail"] == (
            "You started this run; someone else must answer its escalations."
        )
    [request] = pending_approvals(episode=episode)
    assert request.decided_by is None  # nothing changed
    assert request.status == "pending"


@pytest.mark.parametrize(
    "approver_role, refused, allowed",
    [("analyst", [], ["analyst", "ops"]), ("ops", ["analyst"], ["ops"]), ("admin", ["ops"], [])],
)
def test_the_scenario_names_the_lowest_role_that_answers(
    gated_scenario, api_client_for, approver_role, refused, allowed
) -> None:
    scenario = gated_scenario(escalation_approver_role=approver_role)
    episode = _start(scenario, api_client_for("analyst").user)
    for role in refused:
        answer = _answer(api_client_for(role), episode, "refuse")
        assert answer.status_code == 403 and "answered by" in answer.json()["detail"]
    [request] = pending_approvals(episode=episode)
    assert request.status == "pending"
    answer = _answer(api_client_for([*allowed, "admin"][0]), episode, "refuse")
    assert answer.status_code == 200


def test_escalations_at_or_below_the_amount_are_answered_by_the_rule_at_once(
    gated_scenario, api_client_for
) -> None:
    starter = api_client_for("analyst").user
    stake = _start(gated_scenario(), starter).approvals.get().stake
    scenario = gated_scenario(escalation_approval_above=stake)
    episode = _start(scenario, starter)  # not stopped: one run plays it to the end
    request = episode.approvals.get()
    assert (episode.status, request.status, request.decided_by) == ("finished", "approved", None)
    assert request.reason == f"{stake:,.2f} at stake is not above {stake:,.2f}: the rule approves."
    [step] = _escalation_steps()
    approval = episode.decisions.get(step=step).action["approval"]
    assert (approval["decision"], approval["by"]) == ("approved", "the scenario's rule")
    just_below = gated_scenario(escalation_approval_above=stake - 0.01)
    assert pending_approvals(episode=_start(just_below, starter))  # a person answers


@pytest.fixture
def refused_once(gated_scenario, api_client_for):
    """The expert's first escalation on R06 refused by ops; its repeat waits for review."""
    base, seed, rid = REPEATS
    starter, refuser = api_client_for("analyst"), api_client_for("ops")
    episode = _start(gated_scenario(base), starter.user, seed=seed)
    assert _answer(refuser, episode, "refuse").status_code == 200
    episode = _run(episode)
    [review] = pending_approvals(episode=episode)
    first = episode.approvals.get(step=_escalation_steps(base, seed)[0])
    assert review.action["requirement_id"] == first.action["requirement_id"] == rid
    assert review.step > first.step and review.standing_refusal == first
    return starter, refuser, episode, review


def test_a_repeat_after_a_refusal_is_answered_by_neither_the_starter_nor_the_refuser(
    refused_once, api_client_for
) -> None:
    starter, refuser, episode, review = refused_once
    assert _answer(starter, episode, "approve").status_code == 403
    answer = _answer(refuser, episode, "approve")
    assert answer.status_code == 403 and "You refused" in answer.json()["detail"]
    [pending] = pending_approvals(episode=episode)
    assert pending.status == "pending"
    payload = api_client_for("ops").get(f"/api/episodes/{episode.pk}/approvals/").json()[-1]
    assert set(payload["barred"]) == {starter.user.username, refuser.user.username}
    assert payload["standing_refusal"]["by"] == refuser.user.username
    other = api_client_for("admin")
    answer = _answer(other, episode, "approve")
    assert answer.status_code == 200
    assert answer.json()["reason"].startswith(
        f"Approved by {other.user.username} (admin), lifting the standing refusal by "
        f"{refuser.user.username} at "
    )
    episode = _run(episode)
    approval = episode.decisions.get(step=review.step).action["approval"]
    assert (approval["decision"], approval["by"]) == ("approved", other.user.username)


def test_a_refusal_nobody_else_reviews_stands_for_the_rest_of_the_episode(refused_once) -> None:
    _, refuser, episode, review = refused_once
    ApprovalRequest.objects.filter(pk=review.pk).update(deadline=timezone.now())
    assert approvals.approvals_expire() == [episode.pk]  # the refusal holds, not the rule
    review.refresh_from_db()
    standing = f"standing refusal by {refuser.user.username} at "
    assert (review.status, review.decided_by) == ("refused", None) and review.decided_at
    assert review.reason.startswith(f"Refused: {standing}")
    episode = _run(episode)  # later repeats are refused at once: the run does not stop
    assert episode.status == "finished"
    later = list(episode.approvals.filter(step__gt=review.step))
    assert later and all(r.status == "refused" and r.decided_by is None for r in later)
    assert all(r.reason.startswith(f"Refused at once: {standing}") for r in later)
    for request in [review, *later]:
        approval = episode.decisions.get(step=request.step).action["approval"]
        assert approval["decision"] == "refused" and approval["reason"] == request.reason
        assert approval["by"] == f"{refuser.user.username} (standing refusal)"


def test_cancelling_withdraws_the_request(waiting) -> None:
    starter, episode = waiting
    assert starter.post(f"/api/episodes/{episode.pk}/cancel/").status_code == 200
    request = ApprovalRequest.objects.get(episode=episode)
    assert request.status == "withdrawn" and request.reason == "The run ended before an answer."
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
