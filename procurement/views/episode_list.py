"""The episode list: every episode, filtered as the API filters them, 50 to a page."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from procurement.models import Episode
from procurement.selectors.episode_filters import EpisodeFilter, with_owner
from procurement.selectors.episodes import episode_list
from procurement.views.access import role_required

PAGE_SIZE = 50


@role_required("analyst")
def episode_index(request: HttpRequest) -> HttpResponse:
    found = EpisodeFilter(request.GET, queryset=with_owner(episode_list()), request=request)
    # A value that does not parse is named on the form and lists nothing (never a 500).
    episodes = found.qs if found.is_valid() else Episode.objects.none()
    page = Paginator(episodes, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "filter": found,
        "page": page,
        "query": query.urlencode(),
        "filtered": any(v for k, v in request.GET.items() if k != "page"),
    }
    return render(
        request, "procurement/episode_list.html", context, status=400 if found.errors else 200
    )
