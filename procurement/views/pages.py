"""The overview page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from procurement.models import Sweep
from procurement.roles import has_role, user_role
from procurement.selectors.aggregates import episode_leaderboard
from procurement.selectors.approvals import approval_payload, pending_approvals
from procurement.selectors.episodes import episode_list
from procurement.views.access import role_required


@role_required("analyst")
def overview(request: HttpRequest) -> HttpResponse:
    episodes = episode_list()
    context = {
        "role": user_role(request.user),
        "can_sweep": has_role(request.user, "ops"),
        "recent": episodes.filter(sweep__isnull=True)[:20],
        "sweeps": Sweep.objects.order_by("-created_at")[:10],
        "approvals": [approval_payload(a) for a in pending_approvals()],
        "leaderboard": episode_leaderboard(episodes.filter(sweep__isnull=True)),
    }
    return render(request, "procurement/overview.html", context)
