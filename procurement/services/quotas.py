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
from procurement.models.policy import snapshot_uses_llm


def uses_llm(scenario_config: dict, policy_snapshot: dict) -> bool:
    return bool(snapshot_uses_llm(policy_snapshot) or scenario_config.get("supplier_llm"))


def check_llm_episode_quota(*, user, scenario_config: dict, policy_snapshot: dict) -> None:
    if user is None or not uses_llm(scenario_config, policy_snapshot):
        return
    limit = settings.LLM_MAX_ACTIVE_EPISODES_PER_USER
    active = Episode.objects.filter(
        created_by=user,
        sweep__isnull=True,
        queue="gpu",
        status__in=[EpisodeStatus.QUEUED, EpisodeStatus.RUNNING],
    ).count()
    if active >= limit:
        raise QuotaExceeded(
            f"You have {active} LLM episode(s) queued or running; the limit is {limit}. "
            "Wait for one to finish or cancel one."
        )


def check_llm_sweep_quota(*, user, llm_pairs: Iterable[bool], seeds: int) -> None:
    """``llm_pairs``: for each (scenario, policy) pair of the grid, whether it uses an LLM."""
    if user is None:
        return
    cells = sum(seeds for is_llm in llm_pairs if is_llm)
    limit = settings.LLM_MAX_SWEEP_CELLS_PER_USER
    if cells > limit:
        raise QuotaExceeded(
            f"This sweep has {cells} LLM-backed cells; the limit per sweep is {limit}. "
            "Use fewer seeds or fewer LLM policies."
        )
