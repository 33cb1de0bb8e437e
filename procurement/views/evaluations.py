"""Evaluation pages: the list, and one evaluation's leaderboard tables and charts."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from procurement.models import Evaluation
from procurement.selectors.evaluations import evaluation_list, evaluation_sections
from procurement.views.access import role_required


@role_required("analyst")
def evaluation_index(request: HttpRequest) -> HttpResponse:
    context = {"evaluations": evaluation_list()[:200]}
    return render(request, "procurement/evaluation_list.html", context)


@role_required("analyst")
def evaluation_detail(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = get_object_or_404(Evaluation, pk=evaluation_id)
    context = {
        "evaluation": evaluation,
        "sections": evaluation_sections(evaluation),
        "page": {
            "leaderboard": evaluation.leaderboard,
            "ratings": evaluation.ratings,
            "matrix": evaluation.matrix,
        },
    }
    return render(request, "procurement/evaluation_detail.html", context)
