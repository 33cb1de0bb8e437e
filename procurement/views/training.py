"""Training pages: the runs with the start form, and one run's live curves."""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from procurement.errors import ApplicationError
from procurement.forms import StartTrainingForm
from procurement.models import TrainingRun
from procurement.roles import CAPABILITIES, has_role, user_role
from procurement.selectors.training import (
    training_bench_curves,
    training_bench_report,
    training_payload,
    training_run_list,
)
from procurement.services.training import training_cancel, training_create, training_requeue
from procurement.views.access import call_service, role_required


@role_required("analyst")
def training_index(request: HttpRequest) -> HttpResponse:
    may_start = has_role(request.user, "ops")
    if request.method == "POST" and not may_start:
        return _refused(request)
    form = StartTrainingForm(request.POST or None) if may_start else None
    if form is not None and request.method == "POST" and form.is_valid():
        run = call_service(
            form,
            lambda: training_create(request=form.training_request(), user=request.user),
        )
        if run is not None:
            return redirect("training-page", run_id=run.pk)
    context = {"runs": training_run_list()[:200], "form": form, "bench": training_bench_report()}
    status = 400 if form is not None and form.errors else 200
    return render(request, "procurement/training_list.html", context, status=status)


@role_required("analyst")
def training_bench_image(request: HttpRequest) -> FileResponse:
    """The training bench's curves image (bench/train.py's curves.png)."""
    path = training_bench_curves()
    try:
        image = path.open("rb") if path is not None else None
    except OSError:  # removed since it was looked for
        image = None
    if image is None:
        raise Http404("no training bench curves yet")
    return FileResponse(image, content_type="image/png")


@role_required("analyst")
def training_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    return _detail(request, run_id)


def _detail(request: HttpRequest, run_id: int, refusal: str = "") -> HttpResponse:
    run = get_object_or_404(TrainingRun.objects.select_related("policy", "created_by"), pk=run_id)
    context = {
        "run": run,
        "page": {"run": training_payload(run), "metrics": run.metrics},
        "may_act": has_role(request.user, "ops"),
        "refusal": refusal,
    }
    status = 409 if refusal else 200
    return render(request, "procurement/training_detail.html", context, status=status)


@require_POST
@role_required("ops")
def training_action(request: HttpRequest, run_id: int, action: str) -> HttpResponse:
    """Cancel, or resume (a failed or cancelled run), then back to the run's page."""
    run = get_object_or_404(TrainingRun, pk=run_id)
    service = {"cancel": training_cancel, "resume": training_requeue}[action]
    try:
        service(run=run)
    except ApplicationError as exc:  # over already, or not resumable: say so on its page
        return _detail(request, run_id, refusal=exc.message)
    return redirect("training-page", run_id=run.pk)


def _refused(request: HttpRequest) -> HttpResponse:
    role = user_role(request.user)
    context = {"role": role, "needed": "ops", "capability": CAPABILITIES.get(role)}
    return render(request, "procurement/no_role.html", context, status=403)
