"""Evaluation pages: the list with the start form, one evaluation's progress and league
tables, its downloads, and the episodes of one matrix cell."""

from __future__ import annotations

import csv
import json

from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from procurement.api.evaluations import EvaluationDetailSerializer
from procurement.errors import ApplicationError
from procurement.forms import StartEvaluationForm
from procurement.models import Evaluation, EvaluationStatus
from procurement.roles import has_role
from procurement.selectors.evaluations import (
    OUTCOME_FIELDS,
    cell_episodes,
    dropped_sentence,
    evaluation_form_facts,
    evaluation_list,
    evaluation_payload,
    evaluation_sections,
    leaderboard_csv_rows,
    unexposed_comparison,
)
from procurement.services.evaluations import evaluation_cancel, start_evaluation
from procurement.views.access import call_service, role_required


@role_required("analyst")
def evaluation_index(request: HttpRequest) -> HttpResponse:
    may_start = has_role(request.user, "ops")
    if request.method == "POST" and not may_start:
        return render(
            request,
            "procurement/no_role.html",
            {"needed": "ops", "role": "analyst"},
            status=403,
        )
    form = StartEvaluationForm(request.POST or None) if may_start else None
    if form is not None and request.method == "POST" and form.is_valid():
        evaluation = call_service(
            form, lambda: start_evaluation(**form.evaluation_kwargs(), user=request.user)
        )
        if evaluation is not None:
            return redirect("evaluation-page", evaluation_id=evaluation.pk)
    context = {
        "evaluations": evaluation_list()[:200],
        "form": form,
        "facts": evaluation_form_facts() if form is not None else None,
    }
    status = 400 if form is not None and form.errors else 200
    return render(request, "procurement/evaluation_list.html", context, status=status)


@role_required("analyst")
def evaluation_detail(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    return _detail(request, evaluation_id)


def _detail(request: HttpRequest, evaluation_id: int, refusal: str = "") -> HttpResponse:
    evaluation = get_object_or_404(
        Evaluation.objects.select_related("created_by"), pk=evaluation_id
    )
    context = {
        "evaluation": evaluation,
        "sections": evaluation_sections(evaluation),
        "unexposed": unexposed_comparison(evaluation),
        "dropped": dropped_sentence(evaluation),
        "may_act": has_role(request.user, "ops"),
        "refusal": refusal,
        "page": {
            "evaluation": evaluation_payload(evaluation),
            "leaderboard": evaluation.leaderboard,
            "ratings": evaluation.ratings,
            "matrix": evaluation.matrix,
            "has_episodes": bool(evaluation.outcomes),
        },
    }
    return render(
        request, "procurement/evaluation_detail.html", context, status=409 if refusal else 200
    )


@require_POST
@role_required("ops")
def evaluation_cancel_view(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = get_object_or_404(Evaluation, pk=evaluation_id)
    try:
        evaluation_cancel(evaluation=evaluation)
    except ApplicationError as exc:  # over already: say so on its page
        return _detail(request, evaluation_id, refusal=exc.message)
    return redirect("evaluation-page", evaluation_id=evaluation.pk)


def _finished(evaluation_id: int) -> Evaluation:
    evaluation = get_object_or_404(Evaluation, pk=evaluation_id)
    if evaluation.status != EvaluationStatus.FINISHED:
        raise Http404("This evaluation has no results (yet).")
    return evaluation


@role_required("analyst")
def evaluation_csv(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """The leaderboard, one line per (scenario, tier, buyer)."""
    evaluation = _finished(evaluation_id)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="evaluation-{evaluation.pk}-leaderboard.csv"'
    )
    csv.writer(response).writerows(leaderboard_csv_rows(evaluation))
    return response


@role_required("analyst")
def evaluation_json(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """Everything the API's detail gives (parameters, leaderboard, matrix, ratings), and
    the per-episode lines (OUTCOME_FIELDS) when the evaluation kept them."""
    evaluation = _finished(evaluation_id)
    data = {
        **EvaluationDetailSerializer(evaluation).data,
        "outcome_fields": list(OUTCOME_FIELDS),
        "outcomes": evaluation.outcomes,
    }
    body = json.dumps(data, cls=DjangoJSONEncoder)
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="evaluation-{evaluation.pk}.json"'
    return response


@role_required("analyst")
def evaluation_cell(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """The episodes of one matrix cell: ?scenario=&lineup=&buyer=[&tier=]."""
    evaluation = _finished(evaluation_id)
    q = request.GET
    cell = {
        "scenario": q.get("scenario", "")[:200],
        "tier": q.get("tier") or None,
        "lineup": q.get("lineup", "")[:300],
        "buyer": q.get("buyer", "")[:200],
    }
    episodes = cell_episodes(evaluation, **cell)
    replayable = cell["lineup"] == "scenario" and cell["tier"] is None and not evaluation.sealed
    context = {
        "evaluation": evaluation,
        "cell": cell,
        "episodes": episodes,
        "kept": bool(evaluation.outcomes),
        "replayable": replayable,
    }
    return render(request, "procurement/evaluation_cell.html", context)
