"""One episode's transcript: a CSV download and a page made for printing."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from negotiation.metrics import shown_metrics
from procurement.models import Episode
from procurement.services.exports import (
    episode_transcript_columns,
    transcript_rows,
    write_transcript_csv,
)
from procurement.views.access import role_required
from procurement.views.supplier_seat import seat_checked


@role_required("analyst")
def transcript_csv(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = seat_checked(request, get_object_or_404(Episode, pk=episode_id))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"episode-{episode.pk}-transcript.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    write_transcript_csv(episode, response)  # an HttpResponse is a file to write to
    return response


@role_required("analyst")
def transcript_print(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = seat_checked(request, get_object_or_404(Episode, pk=episode_id))
    rows = transcript_rows(episode)
    columns = episode_transcript_columns(episode)
    # Paper has no room for columns no decision filled (a rule policy writes no message).
    kept = [i for i, _ in enumerate(columns) if any(r[i] != "" for r in rows)]
    kept = kept or list(range(len(columns)))
    context = {
        "episode": episode,
        "columns": [columns[i] for i in kept],
        "dropped": [c for i, c in enumerate(columns) if i not in kept],
        # (column, value) pairs: a phone shows each value under its column's name
        "rows": [[(columns[i], r[i]) for i in kept] for r in rows],
        "metrics": sorted(shown_metrics(episode.metrics or {}).items()),
    }
    return render(request, "procurement/episode_print.html", context)
