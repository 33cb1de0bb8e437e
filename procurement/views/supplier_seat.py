"""The supplier seat's pages: its start form and the page where the analyst answers."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from procurement.forms import SupplierSeatForm
from procurement.models import Episode
from procurement.services.supplier_seat import (
    SEAT_CLOSED,
    seat_hides_record,
    supplier_seat_start,
)
from procurement.views.access import call_service, role_required


def seat_checked(request: HttpRequest, episode: Episode) -> Episode:
    """``episode``, unless the viewer plays its supplier seat while it runs (403)."""
    if seat_hides_record(episode, request.user):
        raise PermissionDenied(SEAT_CLOSED)
    return episode


@role_required("analyst")
def supplier_seat_new(request: HttpRequest) -> HttpResponse:
    initial = {"scenario": request.GET.get("scenario", "bilateral")[:100]}
    form = SupplierSeatForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        episode = call_service(
            form, lambda: supplier_seat_start(user=request.user, **form.cleaned_data)
        )
        if episode is not None:
            return redirect("supplier-seat-page", episode_id=episode.pk)
    status = 400 if form.errors else 200
    return render(request, "procurement/supplier_seat_new.html", {"form": form}, status=status)


@role_required("analyst")
def supplier_seat_page(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = get_object_or_404(Episode, pk=episode_id)
    if not episode.supplier_seat:
        raise Http404("No one plays a supplier of this episode.")
    context = {
        "episode": episode,
        "seat": episode.supplier_seat,
        "mine": episode.created_by_id == request.user.pk,
        "idle_minutes": round(episode.supplier_seat.get("idle_seconds", 600) / 60, 1),
    }
    return render(request, "procurement/supplier_seat.html", context)
