"""Per-user limits on runs that use a language model (buyer or suppliers).

LLM runs hold a GPU (or many CPU seconds) per decision, so each user may have only so
many LLM episodes queued or running at once, and an LLM sweep only so many LLM cells.
Rule-only runs are not limited here (their bounds are the input limits of limits.py).
Runs started without a user (operators' commands) are not limited either.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from procurement.errors import QuotaExceeded
from procurement.models import Episode, EpisodeStatus
from procurement.run_plan import GPU_QUEUE, RunPlan


def llm_episode_quota_check(*, user, plan: RunPlan) -> None:
    """QuotaExceeded when ``user`` already has their limit of LLM episodes open (those on
    the gpu queue: the queue each episode's run plan chose when it was built)."""
    if user is None or not plan.uses_llm:
        return
    limit = settings.LLM_MAX_ACTIVE_EPISODES_PER_USER
    active = Episode.objects.filter(
        created_by=user,
        sweep__isnull=True,
        queue=GPU_QUEUE,
        status__in=[EpisodeStatus.QUEUED, EpisodeStatus.RUNNING],
    ).count()
    if active >= limit:
        raise QuotaExceeded(
            f"You have {active} LLM episode(s) queued or running; the limit is {limit}. "
            "Wait for one to finish or cancel one."
        )


def llm_sweep_quota_check(*, user, plans: Iterable[RunPlan], seeds: int) -> None:
    """``plans``: the run plan of each (scenario, policy) pair of the grid."""
    if user is None:
        return
    cells = sum(seeds for plan in plans if plan.uses_llm)
    limit = settings.LLM_MAX_SWEEP_CELLS_PER_USER
    if cells > limit:
        raise QuotaExceeded(
            f"This sweep has {cells} LLM-backed cells; the limit per sweep is {limit}. "
            "Use fewer seeds or fewer LLM policies."
        )
