"""The app's pages, health check and API (config.urls mounts them at the root)."""

from django.contrib.auth.decorators import login_not_required
from django.urls import include, path

from procurement.views import (
    episode_compare,
    episode_export,
    episode_list,
    episodes,
    evaluations,
    health,
    pages,
    scenarios,
    supplier_seat,
    sweeps,
    training,
)

urlpatterns = [
    path("", pages.overview, name="overview"),
    path("episodes/", episode_list.episode_index, name="episode-list-page"),
    path("episodes/compare/", episode_compare.episode_compare, name="episode-compare"),
    path(
        "episodes/<int:episode_id>/transcript.csv",
        episode_export.transcript_csv,
        name="episode-transcript-csv",
    ),
    path(
        "episodes/<int:episode_id>/print/",
        episode_export.transcript_print,
        name="episode-transcript-print",
    ),
    path("episodes/new/", episodes.episode_new, name="episode-start"),
    path("episodes/<int:episode_id>/", episodes.episode_detail, name="episode-page"),
    path("supplier-seat/new/", supplier_seat.supplier_seat_new, name="supplier-seat-start"),
    path(
        "episodes/<int:episode_id>/supplier-seat/",
        supplier_seat.supplier_seat_page,
        name="supplier-seat-page",
    ),
    path("sweeps/new/", sweeps.sweep_new, name="sweep-start"),
    path("scenarios/", scenarios.scenario_list, name="scenario-list-page"),
    path("scenarios/<int:scenario_id>/", scenarios.scenario_detail, name="scenario-page"),
    path("sweeps/<int:sweep_id>/", sweeps.sweep_detail, name="sweep-page"),
    path("evaluations/", evaluations.evaluation_index, name="evaluation-list-page"),
    path("evaluations/<int:evaluation_id>/", evaluations.evaluation_detail, name="evaluation-page"),
    path(
        "evaluations/<int:evaluation_id>/cancel/",
        evaluations.evaluation_cancel_view,
        name="evaluation-cancel",
    ),
    path(
        "evaluations/<int:evaluation_id>/leaderboard.csv",
        evaluations.evaluation_csv,
        name="evaluation-csv",
    ),
    path(
        "evaluations/<int:evaluation_id>/evaluation.json",
        evaluations.evaluation_json,
        name="evaluation-json",
    ),
    path(
        "evaluations/<int:evaluation_id>/cell/", evaluations.evaluation_cell, name="evaluation-cell"
    ),
    path("training/", training.training_index, name="training-list-page"),
    path("training/bench/curves.png", training.training_bench_image, name="training-bench-curves"),
    path("training/<int:run_id>/", training.training_detail, name="training-page"),
    path(
        "training/<int:run_id>/cancel/",
        training.training_action,
        {"action": "cancel"},
        name="training-cancel",
    ),
    path(
        "training/<int:run_id>/resume/",
        training.training_action,
        {"action": "resume"},
        name="training-resume",
    ),
    path("glossary/", pages.glossary, name="glossary"),
    path("favicon.ico", pages.favicon, name="favicon"),
    path("healthz", login_not_required(health.healthz), name="healthz"),
    path("api/", include("procurement.api.urls")),
]
