"""Reads for escalations waiting on (or given) a person's answer."""

from __future__ import annotations

from typing import Any

from procurement.models import ApprovalRequest, ApprovalStatus, Episode, EpisodeStatus


def approval_payload(request: ApprovalRequest) -> dict[str, Any]:
    action = request.action
    return {
        "episode": request.episode_id,
        "step": request.step,
        "status": request.status,
        "requirement_id": action.get("requirement_id"),
        "supplier_id": action.get("supplier_id"),
        "rationale": action.get("rationale"),
        "deadline": request.deadline.isoformat(),
        "decided_by": request.decided_by.get_username() if request.decided_by else None,
        "decided_at": request.decided_at.isoformat() if request.decided_at else None,
    }


def pending_approvals(*, episode: Episode | None = None) -> list[ApprovalRequest]:
    """Pending requests of running episodes (of ``episode``; None: of all), oldest first."""
    queryset = ApprovalRequest.objects.filter(
        status=ApprovalStatus.PENDING, episode__status=EpisodeStatus.RUNNING
    ).select_related("decided_by")
    if episode is not None:
        queryset = queryset.filter(episode=episode)
    return list(queryset.order_by("requested_at"))
