"""What is waiting for a user, for the header's indicator: escalations they may answer
now (the approval rules of selectors.approvals: their role, never the starter, never the
refuser under review) and their own sweeps that ended since they last looked.

"Last looked" is the client's: the indicator sends the time its user last opened it, so
the server keeps no per-user read state. Without one, sweeps that ended within
``RECENT`` count."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.urls import reverse
from django.utils import timezone

from procurement.models import Sweep
from procurement.models.status import RunStatus
from procurement.roles import has_role
from procurement.selectors.approvals import (
    ApprovalRules,
    barred_from_answering,
    pending_approvals,
)

RECENT = timedelta(days=1)
SHOWN = 20
ENDED = (RunStatus.FINISHED, RunStatus.FAILED)  # the most items of each kind the indicator lists


def approvals_to_answer(user) -> list[dict[str, Any]]:
    """Pending escalations of running episodes that ``user`` may answer, oldest first."""
    out = []
    for request in pending_approvals():
        episode = request.episode
        if not has_role(user, ApprovalRules.of(episode).role):
            continue
        if user.pk in barred_from_answering(episode, request):
            continue
        ids = [request.action.get("supplier_id"), request.action.get("requirement_id")]
        target = " on ".join(filter(None, ids))
        out.append(
            {
                "episode": episode.pk,
                "step": request.step,
                "text": f"Episode {episode.pk}: escalate {target} (step {request.step})",
                "subject": request.subject,
                "stake": request.stake,
                "deadline": request.deadline.isoformat(),
                "url": reverse("episode-page", args=[episode.pk]) + "#approvals-card",
            }
        )
    return out[:SHOWN]


def sweeps_ended(user, since: datetime | None) -> list[dict[str, Any]]:
    """``user``'s sweeps that finished or failed after ``since`` (a cancel is their own)."""
    since = since or timezone.now() - RECENT
    sweeps = Sweep.objects.filter(
        created_by_id=user.pk, status__in=ENDED, finished_at__gt=since
    ).order_by("-finished_at")[:SHOWN]
    return [
        {
            "sweep": s.pk,
            "status": s.status,
            "text": f"Sweep {s.pk}{f' {s.name}' if s.name else ''} {s.status}",
            "finished_at": s.finished_at.isoformat(),
            "url": reverse("sweep-page", args=[s.pk]),
        }
        for s in sweeps
    ]


def notifications_for(user, *, since: datetime | None = None) -> dict[str, Any]:
    approvals = approvals_to_answer(user)
    sweeps = sweeps_ended(user, since)
    return {"count": len(approvals) + len(sweeps), "approvals": approvals, "sweeps": sweeps}
