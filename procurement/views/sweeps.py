"""Sweep pages: the start form with its size estimate, and the live sweep page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from procurement.forms import StartSweepForm
from procurement.models import Sweep
from procurement.roles import has_role
from procurement.selectors import live
from procurement.selectors.catalog import llm_names
from procurement.services.sweeps import sweep_create
from procurement.views.access import call_service, role_required


@role_required("ops")
def sweep_new(request: HttpRequest) -> HttpResponse:
    form = StartSweepForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        sweep = call_service(
            form,
            lambda: sweep_create(
                scenarios=list(data["scenarios"]),
                policies=list(data["policies"]),
                seeds=data["seeds"],
                seed_start=data["seed_start"],
                name=data["name"],
                user=request.user,
            ),
        )
        if sweep is not None:
            return redirect("sweep-page", sweep_id=sweep.pk)
    context = {"form": form, "llm_names": llm_names()}
    return render(
        request, "procurement/sweep_new.html", context, status=400 if form.errors else 200
    )


@role_required("analyst")
def sweep_detail(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = get_object_or_404(Sweep.objects.prefetch_related("scenarios", "policies"), pk=sweep_id)
    context = {
        "sweep": sweep,
        "page": {"sweep": live.sweep_payload(sweep)},
        "can_cancel": has_role(request.user, "ops"),
    }
    return render(request, "procurement/sweep_detail.html", context)
