"""One episode's transcript: a CSV download and a page made for printing."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from negotiation.metrics import shown_metrics
from procurement.models import Episode
from procurement.services.exports import (
    TRANSCRIPT_COLUMNS,
    transcript_rows,
    write_transcript_csv,
)
from procurement.views.access import role_required


@role_required("analyst")
def transcript_csv(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = get_object_or_404(Episode, pk=episode_id)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"episode-{episode.pk}-transcript.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    write_transcript_csv(episode, response)  # an HttpResponse is a file to write to
    return response


@role_required("analyst")
def transcript_print(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = get_object_or_404(Episode, pk=episode_id)
    context = {
        "episode": episode,
        "columns": TRANSCRIPT_COLUMNS,
        # (column, value) pairs: a phone shows each value under its column's name
        "rows": [
            list(zip(TRANSCRIPT_COLUMNS, row, strict=True)) for row in transcript_rows(episode)
        ],
        "metrics": sorted(shown_metrics(episode.metrics or {}).items()),
    }
    return render(request, "procurement/episode_print.html", context)
