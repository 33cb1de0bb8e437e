"""Reads for the live streams: the payloads events carry, and the snapshot a viewer gets
on connect (a late joiner misses nothing)."""

from __future__ import annotations

from typing import Any

from procurement.errors import NotFound
from procurement.models import Decision, Episode, Sweep
from procurement.selectors.approvals import approval_payload, pending_approvals

OVERVIEW_GROUP = "overview"
SNAPSHOT_DECISIONS = 500  # the latest decisions sent on connect; older ones via the API


def decision_payload(decision: Decision) -> dict[str, Any]:
    return {f: getattr(decision, f) for f in Decision.STORED_FIELDS}


def decisions_after(*, episode_id: int, step: int, limit: int = 5000) -> list[dict[str, Any]]:
    """The stored decisions after ``step`` (the catch-up of a reconnecting client)."""
    rows = Decision.objects.filter(episode_id=episode_id, step__gt=step).order_by("step")
    return [decision_payload(d) for d in rows[:limit]]


def episode_payload(episode: Episode) -> dict[str, Any]:
    return {
        "id": episode.pk,
        "status": episode.status,
        "scenario": episode.scenario_name,
        "policy": episode.policy_name,
        "seed": episode.seed,
        "steps": episode.steps,
        "score": episode.score,
        "sweep": episode.sweep_id,
    }


def sweep_payload(sweep: Sweep) -> dict[str, Any]:
    return {
        "id": sweep.pk,
        "status": sweep.status,
        "name": sweep.name,
        "total_cells": sweep.total_cells,
        "done_cells": sweep.done_cells,
        "failed_cells": sweep.failed_cells,
        "progress": sweep.progress,
    }


def episode_snapshot(*, episode_id: int) -> tuple[str, dict[str, Any]]:
    """The episode's group and its snapshot: the episode, its latest decisions and the
    approvals it waits on. NotFound when there is no such episode."""
    episode = Episode.objects.filter(pk=episode_id).first()
    if episode is None:
        raise NotFound(f"No episode {episode_id}.")
    latest = list(episode.decisions.order_by("-step")[:SNAPSHOT_DECISIONS])
    return episode.group_name, {
        "type": "episode.snapshot",
        "episode": episode_payload(episode),
        "decisions": [decision_payload(d) for d in reversed(latest)],
        "approvals": [approval_payload(a) for a in pending_approvals(episode=episode)],
    }


def sweep_snapshot(*, sweep_id: int) -> tuple[str, dict[str, Any]]:
    """The sweep's group and its snapshot; NotFound when there is no such sweep."""
    sweep = Sweep.objects.filter(pk=sweep_id).first()
    if sweep is None:
        raise NotFound(f"No sweep {sweep_id}.")
    return sweep.group_name, {"type": "sweep.snapshot", "sweep": sweep_payload(sweep)}


def overview_snapshot() -> tuple[str, dict[str, Any]]:
    """The overview group and its snapshot: recent single episodes, open sweeps, and every
    approval waiting for an answer."""
    recent = Episode.objects.filter(sweep__isnull=True).order_by("-created_at")[:20]
    running = Sweep.objects.filter(status__in=["queued", "running"])[:20]
    return OVERVIEW_GROUP, {
        "type": "overview.snapshot",
        "episodes": [episode_payload(e) for e in recent],
        "sweeps": [sweep_payload(s) for s in running],
        "approvals": [approval_payload(a) for a in pending_approvals()],
    }
