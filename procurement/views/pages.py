"""The overview page, the glossary, and the icon for pages that link none."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static

from negotiation.config import scenario_currency
from procurement.models import Sweep
from procurement.roles import has_role
from procurement.selectors.aggregates import episode_leaderboard
from procurement.selectors.approvals import approval_payload, pending_approvals
from procurement.selectors.episodes import episode_list
from procurement.selectors.glossary import figure_glossary, metric_glossary
from procurement.views.access import role_required


@role_required("analyst")
def overview(request: HttpRequest) -> HttpResponse:
    episodes = episode_list()
    context = {
        "can_sweep": has_role(request.user, "ops"),
        "recent": episodes.filter(sweep__isnull=True)[:20],
        "sweeps": Sweep.objects.order_by("-created_at")[:10],
        "approvals": [approval_payload(a) for a in pending_approvals()],
        "leaderboard": episode_leaderboard(episodes.filter(sweep__isnull=True)),
    }
    return render(request, "procurement/overview.html", context)


@role_required("analyst")
def glossary(request: HttpRequest) -> HttpResponse:
    """What every metric and every action figure means, with its unit."""
    currency = scenario_currency({})
    context = {
        "currency": currency,
        "metrics": metric_glossary(currency),
        "figures": figure_glossary(currency),
    }
    return render(request, "procurement/glossary.html", context)


@login_not_required
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on pages that link no icon (the admin, the API
    docs): send them to the app's own."""
    return redirect(static("procurement/favicon.svg"), permanent=True)
