"""What waits for whom (selectors.notifications and GET /api/notifications/): escalations
a user may answer (never the starter, never below the scenario's role) and their own
sweeps that ended since they last looked; a bad ``since`` is a 400."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from negotiation import load_scenario
from procurement.models import PolicyConfig, Sweep
from procurement.selectors.notifications import notifications_for
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.scenarios import scenario_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def escalation(seeded, user_with_role):
    """A live episode waiting on a person's answer, started by an admin."""
    config = {**load_scenario("easy_negotiation").model_dump(), "escalation_approver": "human"}
    scenario = scenario_create(name="gated", config=config)
    starter = user_with_role("admin")
    episode = episode_create(
        scenario=scenario,
        policy=PolicyConfig.objects.get(name="expert"),
        seed=1,  # the expert escalates once (tests/procurement/test_approvals.py)
        user=starter,
        enqueue=False,
    )
    episode_run(episode_id=episode.pk, live_updates=False)
    return starter, episode


def test_only_those_who_may_answer_see_a_waiting_escalation(escalation, user_with_role) -> None:
    starter, episode = escalation
    [seen] = notifications_for(user_with_role("ops"))["approvals"]
    assert seen["episode"] == episode.pk
    assert seen["url"] == f"/episodes/{episode.pk}/#approvals-card"
    assert seen["subject"].startswith("approve PR") and seen["stake"] > 0
    assert notifications_for(user_with_role("admin"))["count"] == 1
    assert notifications_for(user_with_role("analyst"))["approvals"] == []  # below ops
    assert notifications_for(starter)["approvals"] == []  # never the starter, an admin too


def test_a_users_own_sweeps_that_ended_since_they_looked(user_with_role) -> None:
    ops, other = user_with_role("ops"), user_with_role("ops")
    now = timezone.now()
    ended = Sweep.objects.create(seeds=1, status="finished", created_by=ops, finished_at=now)
    Sweep.objects.create(seeds=1, status="failed", created_by=other, finished_at=now)
    Sweep.objects.create(seeds=1, status="running", created_by=ops)
    Sweep.objects.create(seeds=1, status="cancelled", created_by=ops, finished_at=now)
    old = now - timedelta(days=2)
    Sweep.objects.create(seeds=1, status="finished", created_by=ops, finished_at=old)
    [sweep] = notifications_for(ops)["sweeps"]  # default: the last day
    assert sweep["sweep"] == ended.pk and sweep["url"] == f"/sweeps/{ended.pk}/"
    assert notifications_for(ops, since=now + timedelta(seconds=1))["count"] == 0
    assert len(notifications_for(ops, since=old - timedelta(days=1))["sweeps"]) == 2


def test_the_endpoint_answers_its_user_and_refuses_bad_input(api_client_for) -> None:
    ops = api_client_for("ops")
    body = ops.get("/api/notifications/").json()
    assert body == {"count": 0, "approvals": [], "sweeps": []}
    since = (timezone.now() - timedelta(hours=1)).isoformat()
    assert ops.get("/api/notifications/", {"since": since}).status_code == 200
    bad = ops.get("/api/notifications/", {"since": "yesterday"})
    assert bad.status_code == 400 and "since" in bad.json()
    assert api_client_for(None).get("/api/notifications/").status_code == 403
