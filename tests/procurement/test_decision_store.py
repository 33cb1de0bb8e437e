"""Stored decisions keep the guard's repairs with reasons that never give a floor away,
on PostgreSQL (COPY) and SQLite alike."""

from __future__ import annotations

import pytest

from negotiation.suppliers.guard import ACCEPT_BELOW_FLOOR, CONTRADICTS, PRICE_HELD
from procurement.services.decision_store import insert_decisions
from procurement.services.episodes import episode_create
from tests.workers.helpers import seeded

pytestmark = pytest.mark.django_db


def _record(step: int, **extra) -> dict:
    return {
        "step": step,
        "week": 0,
        "action": {"action_type": "defer"},
        "valid": True,
        "error": None,
        "response": None,
        "reward": 0.0,
        "running_score": 0.0,
        "events": [],
        "state": {},
        **extra,
    }


def test_repair_reasons_are_stored_as_anyone_may_read_them() -> None:
    scenarios, policies = seeded()
    episode = episode_create(
        scenario=scenarios["easy_negotiation"], policy=policies["expert"], seed=1, enqueue=False
    )
    repaired = _record(0, guard_interventions=2, guard_repairs=[ACCEPT_BELOW_FLOOR, CONTRADICTS])
    assert insert_decisions([(episode.pk, repaired), (episode.pk, _record(1))]) == 2
    first, second = episode.decisions.order_by("step")
    assert first.guard_repairs == [PRICE_HELD, CONTRADICTS]
    assert first.guard_interventions == 2
    assert second.guard_repairs == [] and second.guard_interventions == 0
