"""Episode pages: the start form and the live / replay page (with the buyer's seat)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from negotiation.metrics import shown_metrics
from procurement.forms import StartEpisodeForm
from procurement.models import Episode
from procurement.roles import ROLES, may_cancel_episode, user_role
from procurement.selectors import live
from procurement.selectors.catalog import action_form_spec
from procurement.selectors.episode_compare import compare_candidates
from procurement.selectors.episodes import episode_model_label
from procurement.selectors.glossary import episode_units, metric_glossary
from procurement.services.episodes import episode_create
from procurement.services.supplier_seat import seat_hides_record
from procurement.views.access import call_service, role_required


@role_required("analyst")
def episode_new(request: HttpRequest) -> HttpResponse:
    initial = {"scenario": request.GET.get("scenario", "")[:100]}
    if request.GET.get("policy"):  # "play it" links (a trained model's run page)
        initial["policy"] = request.GET["policy"][:100]
    if request.GET.get("seed", "").isdigit():  # an evaluation cell's "play this seed"
        initial["seed"] = request.GET["seed"][:19]
    form = StartEpisodeForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        episode = call_service(
            form,
            lambda: episode_create(
                scenario=form.cleaned_data["scenario"],
                policy=form.cleaned_data["policy"],
                seed=form.cleaned_data["seed"],
                step_delay=form.step_delay,
                user=request.user,
            ),
        )
        if episode is not None:
            return redirect("episode-page", episode_id=episode.pk)
    status = 400 if form.errors else 200
    return render(request, "procurement/episode_new.html", {"form": form}, status=status)


@role_required("analyst")
def episode_detail(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = get_object_or_404(Episode, pk=episode_id)
    if seat_hides_record(episode, request.user):
        return redirect("supplier-seat-page", episode_id=episode.pk)
    units = episode_units(episode)
    context = {
        "episode": episode,
        "page": {
            "episode": live.episode_payload(episode),
            "metrics": shown_metrics(episode.metrics or {}),
            "model": episode_model_label(episode),  # marks the rows its model played
            "error": episode.error,
            # The approval card offers its buttons only to those who may answer.
            "viewer": {"username": request.user.get_username(), "role": user_role(request.user)},
            "roles": ROLES,
            # What its numbers are: currency, units of each action's figures, metrics.
            "units": units,
            "glossary": {m["name"]: m for m in metric_glossary(units["currency"])},
        },
        "currency": units["currency"],
        "can_cancel": may_cancel_episode(request.user, episode),
        "seat": episode.run_plan.human_seat and episode.created_by_id == request.user.pk,
        "actions": action_form_spec(),
        "compare_with": compare_candidates(episode),  # same scenario and seed
    }
    return render(request, "procurement/episode_detail.html", context)
