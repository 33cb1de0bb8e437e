"""Evaluation pages (list and detail with charts) and the read-only API, per role."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from procurement.models import Evaluation
from procurement.services.evaluations import evaluation_create


@pytest.fixture
def evaluation(db) -> Evaluation:
    return evaluation_create(
        policies="expert,random",
        scenarios="bilateral_cooperative,bilateral_hardball",
        seeds=3,
        name="nightly",
    )


def _client(user_with_role, role: str | None) -> Client:
    client = Client()
    client.force_login(user_with_role(role))
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["analyst", "ops", "admin"])
def test_pages_render_for_every_role(user_with_role, evaluation, role) -> None:
    client = _client(user_with_role, role)
    listing = client.get(reverse("evaluation-list-page"))
    assert listing.status_code == 200
    html = listing.content.decode()
    assert reverse("evaluation-page", args=[evaluation.pk]) in html and "nightly" in html
    assert 'href="/evaluations/"' in html  # the navigation link

    page = client.get(reverse("evaluation-page", args=[evaluation.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "bilateral_cooperative" in html and "bilateral_hardball" in html
    assert html.count('class="leaderboard"') == 2  # one table per scenario
    expert = evaluation.leaderboard[0]
    ci = f"{expert['score']['ci_low']:.3f} \u2013 {expert['score']['ci_high']:.3f}"
    assert ci in html
    assert 'id="score-chart"' in html and 'id="rating-chart"' in html
    assert "procurement/evaluation.js" in html and "vendor/plotly.min.js" in html
    assert 'id="evaluation-page"' in html and "persona:hardball" in html


@pytest.mark.django_db
def test_pages_refuse_people_without_a_role_and_anonymous_visitors(
    user_with_role, evaluation
) -> None:
    client = _client(user_with_role, None)
    assert client.get(reverse("evaluation-list-page")).status_code == 403
    assert client.get(reverse("evaluation-page", args=[evaluation.pk])).status_code == 403
    anonymous = Client().get(reverse("evaluation-page", args=[evaluation.pk]))
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


@pytest.mark.django_db
def test_unknown_evaluation_is_a_404(user_with_role) -> None:
    client = _client(user_with_role, "analyst")
    assert client.get("/evaluations/999999/").status_code == 404


@pytest.mark.django_db
def test_empty_list_says_how_to_make_one(user_with_role) -> None:
    html = _client(user_with_role, "analyst").get("/evaluations/").content.decode()
    assert "manage.py evaluate" in html


@pytest.mark.django_db
def test_static_files_are_served(user_with_role) -> None:
    from django.contrib.staticfiles import finders

    assert finders.find("procurement/evaluation.js")
    assert finders.find("vendor/plotly.min.js")


@pytest.mark.django_db
def test_api_lists_and_shows_evaluations(api_client_for, evaluation) -> None:
    client = api_client_for("analyst")
    listing = client.get("/api/evaluations/")
    assert listing.status_code == 200
    (item,) = listing.json()["results"]
    assert item["id"] == evaluation.pk and item["name"] == "nightly"
    assert item["policies"] == ["expert", "random"] and item["episodes"] == 12
    assert "leaderboard" not in item  # the list stays small

    detail = client.get(f"/api/evaluations/{evaluation.pk}/").json()
    assert detail["leaderboard"] == evaluation.leaderboard
    assert {"player", "kind", "mu", "sigma", "ordinal", "matches"} <= set(detail["ratings"][0])
    row = detail["leaderboard"][0]
    assert {
        "scenario",
        "tier",
        "policy",
        "episodes",
        "score",
        "deal_rate",
        "buyer_share",
        "mutual_loss",
        "rounds_per_deal",
        "invalid_action_rate",
    } <= set(row)
    assert client.get("/api/evaluations/999999/").status_code == 404
    assert client.get("/api/evaluations/abc/").status_code == 404


@pytest.mark.django_db
def test_api_is_read_only_and_needs_a_role(api_client_for, evaluation) -> None:
    admin = api_client_for("admin")
    assert admin.post("/api/evaluations/", {}, format="json").status_code == 405
    assert admin.delete(f"/api/evaluations/{evaluation.pk}/").status_code == 405
    assert api_client_for("none").get("/api/evaluations/").status_code == 403
    assert api_client_for("anonymous").get("/api/evaluations/").status_code in (401, 403)
    assert Evaluation.objects.count() == 1


@pytest.mark.django_db
def test_admin_shows_evaluations_read_only(user_with_role, evaluation) -> None:
    admin = user_with_role("admin")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    assert client.get("/admin/procurement/evaluation/").status_code == 200
    assert client.get(f"/admin/procurement/evaluation/{evaluation.pk}/change/").status_code == 200
    assert client.get("/admin/procurement/evaluation/add/").status_code == 403


@pytest.mark.django_db
def test_the_page_shows_the_matrix_ties_worst_case_cost_and_suppliers(user_with_role) -> None:
    evaluation = evaluation_create(
        policies="expert,random",
        scenarios="bilateral",
        suppliers="cooperative,hardball",
        seeds=3,
    )
    html = (
        _client(user_with_role, "analyst")
        .get(reverse("evaluation-page", args=[evaluation.pk]))
        .content.decode()
    )
    assert 'id="matrix-0"' in html and 'data-matrix="0"' in html  # the heatmap's place
    assert "paired seeds" in html and "vs best" in html and "pass^k" in html
    rows = {r["policy"]: r for r in evaluation.leaderboard}
    assert '<tr class="tied"><td><span title="tied with the best">= </span>expert' in html
    worst = rows["expert"]["worst"]
    assert f"{worst['score']:.3f} vs {worst['lineup']}" in html
    assert "Supplier line-ups: surplus kept" in html and "persona:cooperative" in html
    assert "Money / episode" in html and "Decision p50 / p95 (ms)" in html
    assert "0 / 0</td>" not in html  # rule players: no tokens (a dash), sub-ms decisions in 0.1 ms
    p50, p95 = (rows["expert"]["cost"][k] * 1000 for k in ("decision_p50_s", "decision_p95_s"))
    assert f"{p50:,.1f} / {p95:,.1f}</td>" in html
    assert '"matrix": [{' in html and '"suppliers": ["cooperative", "hardball"]' in html


@pytest.mark.django_db
def test_api_shows_the_league_tables(api_client_for) -> None:
    evaluation = evaluation_create(
        policies="expert", scenarios="bilateral", suppliers="hardball", seeds=2
    )
    body = api_client_for("analyst").get(f"/api/evaluations/{evaluation.pk}/").json()
    assert body["suppliers"] == ["hardball"] and body["replays"] == 1
    assert body["matrix"][0]["buyers"] == ["expert"]
    assert body["supplier_table"][0]["lineup"] == "hardball"
    assert body["leaderboard"][0]["tied"] is True
