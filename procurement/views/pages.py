"""Server-rendered pages."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from procurement.roles import CAPABILITIES, user_role
from procurement.selectors.aggregates import episode_leaderboard
from procurement.selectors.episodes import episode_list


def overview(request: HttpRequest) -> HttpResponse:
    episodes = episode_list()
    context = {
        "role": user_role(request.user),
        "capabilities": CAPABILITIES,
        "recent": episodes.select_related(None)[:20],
        "leaderboard": episode_leaderboard(episodes.filter(sweep__isnull=True)),
    }
    return render(request, "procurement/overview.html", context)
