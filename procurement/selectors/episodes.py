"""Reads for episodes and decisions."""

from __future__ import annotations

from django.db.models import QuerySet

from procurement.models import Decision, Episode


def episode_list() -> QuerySet[Episode]:
    """Episodes for listings (the API's FilterSet narrows them): snapshots left out."""
    return Episode.objects.defer("scenario_snapshot", "policy_snapshot")


def episode_decisions(episode: Episode) -> QuerySet[Decision]:
    return episode.decisions.order_by("step")
