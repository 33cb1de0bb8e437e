"""Per-user shares of the machine: how much one user may hold open at once.

Each user may have only so many single episodes queued or running (of any policy), so
many open human seats, and, among those episodes, so many that use a language model
(buyer or suppliers: they hold a GPU, or many CPU seconds, per decision); an LLM sweep
may hold only so many LLM cells. OpenEnv sessions have their own per-user limit, kept by
the OpenEnv server (``negotiation.interfaces.openenv_sessions``). Every refusal is a
``QuotaExceeded`` (a 429) whose ``extra`` says the limit and how many the user holds.
Runs started without a user (operators' commands) are not limited.

The count and the new row are one transaction, and the user's row is locked first, so
two requests of one user at once cannot both take the last place (SQLite serialises
writes anyway: its transactions begin IMMEDIATE).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from procurement.errors import QuotaExceeded
from procurement.models import Episode, EpisodeStatus
from procurement.run_plan import GPU_QUEUE, HUMAN_QUEUE, RunPlan

OPEN = [EpisodeStatus.QUEUED, EpisodeStatus.RUNNING]


def _open_single_episodes(user) -> QuerySet[Episode]:
    return Episode.objects.filter(created_by=user, sweep__isnull=True, status__in=OPEN)


def _check(held: int, limit: int, what: str, advice: str) -> None:
    if held >= limit:
        raise QuotaExceeded(
            f"You have {held} {what}; the limit is {limit}. {advice}",
            {"limit": limit, "held": held},
        )


def _lock_user(user) -> None:
    """Serialise this user's starts until the transaction ends (a no-op on SQLite)."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).exists()


def episode_quota_check(*, user, plan: RunPlan) -> None:
    """QuotaExceeded when ``user`` already holds their limit of the kind ``plan`` needs:
    open seats for a human seat; otherwise episodes queued or running and, for a run
    that uses a model, LLM episodes (those on the gpu queue, as each run plan chose).
    Call it inside the transaction that creates the episode."""
    if user is None:
        return
    _lock_user(user)
    mine = _open_single_episodes(user)
    if plan.queue == HUMAN_QUEUE:
        _check(
            mine.filter(queue=HUMAN_QUEUE).count(),
            settings.MAX_OPEN_SEATS_PER_USER,
            "human seat(s) open",
            "Finish or cancel one first.",
        )
        return
    _check(
        mine.exclude(queue=HUMAN_QUEUE).count(),
        settings.MAX_ACTIVE_EPISODES_PER_USER,
        "episode(s) queued or running",
        "Wait for one to finish or cancel one.",
    )
    if plan.uses_llm:
        _check(
            mine.filter(queue=GPU_QUEUE).count(),
            settings.LLM_MAX_ACTIVE_EPISODES_PER_USER,
            "LLM episode(s) queued or running",
            "Wait for one to finish or cancel one.",
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
            "Use fewer seeds or fewer LLM policies.",
            {"limit": limit, "cells": cells},
        )


def llm_evaluation_quota_check(*, user, llm_episodes: int) -> None:
    """An evaluation a person starts plays at most as many LLM episodes as a sweep may
    have LLM cells (LLM_MAX_SWEEP_CELLS_PER_USER); the command line (no user) is not
    limited."""
    if user is None:
        return
    limit = settings.LLM_MAX_SWEEP_CELLS_PER_USER
    if llm_episodes > limit:
        raise QuotaExceeded(
            f"This evaluation has {llm_episodes} episodes that call a language model; the "
            f"limit per run is {limit}. Use fewer seeds, replays, LLM buyers or LLM line-ups.",
            {"limit": limit, "llm_episodes": llm_episodes},
        )
