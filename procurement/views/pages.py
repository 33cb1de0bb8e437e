"""Server-rendered pages: thin views over the selectors and services the API uses."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from negotiation.config import parameter_docs
from procurement.forms import StartEpisodeForm, StartSweepForm
from procurement.models import Episode, Scenario, Sweep
from procurement.roles import CAPABILITIES, Role, has_role, may_cancel_episode, user_role
from procurement.selectors.aggregates import episode_leaderboard
from procurement.selectors.catalog import action_form_spec, llm_names
from procurement.selectors.episodes import episode_list
from procurement.services import live
from procurement.services.approvals import approval_payload, pending_approvals
from procurement.services.episodes import start_episode
from procurement.services.human_seat import is_human
from procurement.services.quotas import QuotaExceeded
from procurement.services.sweeps import create_sweep


def add_service_errors(form, exc: ValidationError) -> None:
    """A service's field errors onto the form's fields (or the form, for other keys)."""
    for field, messages in exc.message_dict.items():
        for message in messages:
            form.add_error(field if field in form.fields else None, message)


def role_required(minimum: Role) -> Callable:
    """A page for ``minimum`` and above. No role at all: a page that says so and nothing
    else; a lower role: a 403 that names the role needed."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            role = user_role(request.user)
            if role is None or not has_role(request.user, minimum):
                context = {"role": role, "needed": minimum, "capability": CAPABILITIES.get(role)}
                return render(request, "procurement/no_role.html", context, status=403)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


@role_required("analyst")
def overview(request: HttpRequest) -> HttpResponse:
    episodes = episode_list()
    context = {
        "role": user_role(request.user),
        "can_sweep": has_role(request.user, "ops"),
        "recent": episodes.filter(sweep__isnull=True)[:20],
        "sweeps": Sweep.objects.order_by("-created_at")[:10],
        "approvals": [approval_payload(a) for a in pending_approvals()],
        "leaderboard": episode_leaderboard(episodes.filter(sweep__isnull=True)),
    }
    return render(request, "procurement/overview.html", context)


@role_required("analyst")
def episode_new(request: HttpRequest) -> HttpResponse:
    initial = {"scenario": request.GET.get("scenario", "")[:100]}
    form = StartEpisodeForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            episode = start_episode(
                scenario=form.cleaned_data["scenario"],
                policy=form.cleaned_data["policy"],
                seed=form.cleaned_data["seed"],
                step_delay=form.step_delay,
                user=request.user,
            )
        except QuotaExceeded as exc:
            form.add_error(None, str(exc))
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("episode-page", episode_id=episode.pk)
    status = 400 if form.errors else 200
    return render(request, "procurement/episode_new.html", {"form": form}, status=status)


@role_required("analyst")
def episode_detail(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = get_object_or_404(Episode.objects.defer("policy_snapshot"), pk=episode_id)
    llm_suppliers = bool((episode.scenario_snapshot.get("supplier_llm") or {}).get("personas"))
    context = {
        "episode": episode,
        "page": {
            "episode": live.episode_payload(episode),
            "metrics": episode.metrics,
            "boards": not llm_suppliers,
            "error": episode.error,
        },
        "can_cancel": may_cancel_episode(request.user, episode),
        "seat": is_human(episode.policy_snapshot) and episode.created_by_id == request.user.pk,
        "actions": action_form_spec(),
    }
    return render(request, "procurement/episode_detail.html", context)


@role_required("ops")
def sweep_new(request: HttpRequest) -> HttpResponse:
    form = StartSweepForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            sweep = create_sweep(
                scenarios=list(data["scenarios"]),
                policies=list(data["policies"]),
                seeds=data["seeds"],
                seed_start=data["seed_start"],
                name=data["name"],
                user=request.user,
            )
        except QuotaExceeded as exc:
            form.add_error(None, str(exc))
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
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


@role_required("analyst")
def scenario_list(request: HttpRequest) -> HttpResponse:
    scenarios = Scenario.objects.order_by("-is_preset", "name")
    return render(request, "procurement/scenario_list.html", {"scenarios": scenarios})


@role_required("analyst")
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = get_object_or_404(Scenario, pk=scenario_id)
    config = scenario.engine_config()
    rows = [
        {"doc": doc, "value": config.get(doc.name), "changed": config.get(doc.name) != doc.default}
        for doc in parameter_docs()
        if doc.name not in ("name", "description")
    ]
    context = {"scenario": scenario, "rows": rows, "is_admin": has_role(request.user, "admin")}
    return render(request, "procurement/scenario_detail.html", context)
