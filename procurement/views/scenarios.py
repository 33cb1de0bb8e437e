"""Scenario pages: what every parameter means and may be."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from negotiation.config import parameter_docs
from procurement.models import Scenario
from procurement.roles import has_role
from procurement.selectors.scenarios import scenario_config_view
from procurement.views.access import role_required


@role_required("analyst")
def scenario_list(request: HttpRequest) -> HttpResponse:
    scenarios = Scenario.objects.order_by("-is_preset", "name")
    return render(request, "procurement/scenario_list.html", {"scenarios": scenarios})


def _lines(shown: str | list[str]) -> list[str]:
    return shown if isinstance(shown, list) else [shown]


@role_required("analyst")
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = get_object_or_404(Scenario, pk=scenario_id)
    config = scenario_config_view(scenario.engine_config(), user=request.user)
    mode = config.get("mode", "arena")
    currency = config.get("currency")  # money parameters read in it
    rows = []
    for doc in parameter_docs():
        if doc.name in ("name", "description") or mode not in doc.modes:
            continue
        value = config.get(doc.name, doc.default)
        rows.append(
            {
                "doc": doc,
                "value": _lines(doc.show(value, currency)),
                "default": _lines(doc.show(doc.default, currency)),
                "changed": value != doc.default,
            }
        )
    context = {
        "scenario": scenario,
        "mode": mode,
        "rows": rows,
        "is_admin": has_role(request.user, "admin"),
    }
    return render(request, "procurement/scenario_detail.html", context)
