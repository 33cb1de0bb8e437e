"""Reads for episodes and decisions."""

from __future__ import annotations

from django.db.models import QuerySet

from procurement.models import Decision, Episode


def episode_list(
    *,
    status: str | None = None,
    scenario: str | None = None,
    policy: str | None = None,
    sweep: int | None = None,
) -> QuerySet[Episode]:
    qs = Episode.objects.all()
    if status:
        qs = qs.filter(status=status)
    if scenario:
        qs = qs.filter(scenario_name=scenario)
    if policy:
        qs = qs.filter(policy_name=policy)
    if sweep is not None:
        qs = qs.filter(sweep_id=sweep)
    return qs.defer("scenario_snapshot")


def episode_decisions(episode: Episode) -> QuerySet[Decision]:
    return episode.decisions.order_by("step")
