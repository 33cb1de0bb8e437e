"""Evaluation pages (list and detail with charts) and the read-only API, per role."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from procurement.models import Evaluation, EvaluationPart
from procurement.selectors.evaluations import evaluation_payload
from procurement.services.evaluations import evaluation_create, start_evaluation
from procurement.templatetags.arena_format import milliseconds


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
    assert "0 / 0</td>" not in html  # rule players: no tokens (a dash)
    p50, p95 = (rows["expert"]["cost"][k] for k in ("decision_p50_s", "decision_p95_s"))
    assert f"{milliseconds(p50)} / {milliseconds(p95)}</td>" in html
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


FORM = {
    "policies": ["random", "always_accept"],
    "suppliers": ["scenario", "hardball"],
    "scenarios": ["bilateral"],
    "seeds": "3",
    "seed_start": "0",
    "replays": "1",
    "prices": "smollm2=0.1:0.4",
    "name": "from the form",
}


@pytest.mark.django_db
def test_ops_start_from_the_form_and_analysts_may_not(seeded, user_with_role) -> None:
    analyst = _client(user_with_role, "analyst")
    assert 'id="start-evaluation"' not in analyst.get("/evaluations/").content.decode()
    assert analyst.post("/evaluations/", FORM).status_code == 403
    assert Evaluation.objects.count() == 0

    ops = _client(user_with_role, "ops")
    html = ops.get("/evaluations/").content.decode()
    assert 'id="start-evaluation"' in html and 'id="evaluation-form-facts"' in html
    response = ops.post("/evaluations/", FORM)
    evaluation = Evaluation.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("evaluation-page", args=[evaluation.pk])
    assert (evaluation.status, evaluation.queue, evaluation.episodes) == ("queued", "cpu", 12)
    assert evaluation.prices == {"smollm2": [0.1, 0.4]} and evaluation.name == "from the form"
    page = ops.get(response["Location"]).content.decode()
    assert 'id="progress-card"' in page and 'id="cancel-form"' in page
    assert 'id="download-csv"' not in page  # no result yet
    assert ops.get(reverse("evaluation-csv", args=[evaluation.pk])).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seeds": "10001"}, "from 1 to 10000"),
        ({"more_suppliers": "llm:/no/such/model"}, "/no/such/model"),
        ({"prices": "smollm2=cheap"}, "is not MODEL=IN[:OUT]"),
        ({"policies": ["nobody"]}, "nobody is not one of the available choices"),
    ],
)
def test_a_bad_form_is_a_400_that_says_why_and_creates_nothing(
    seeded, user_with_role, change, message
) -> None:
    response = _client(user_with_role, "ops").post("/evaluations/", {**FORM, **change})
    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'").replace(
        "Select a valid choice. ", ""
    )
    assert Evaluation.objects.count() == 0


@pytest.mark.django_db
def test_cancel_is_for_ops_and_only_while_it_runs(seeded, user_with_role) -> None:
    evaluation = start_evaluation(policies="random", scenarios="bilateral", seeds=2, enqueue=False)
    url = reverse("evaluation-cancel", args=[evaluation.pk])
    assert _client(user_with_role, "analyst").post(url).status_code == 403
    ops = _client(user_with_role, "ops")
    assert ops.post(url).status_code == 302
    evaluation.refresh_from_db()
    assert evaluation.status == "cancelled" and evaluation.finished_at is not None
    again = ops.post(url)
    assert (
        again.status_code == 409 and "only queued or running ones cancel" in again.content.decode()
    )


@pytest.mark.django_db
def test_downloads_and_the_episodes_of_a_cell(user_with_role, evaluation) -> None:
    client = _client(user_with_role, "analyst")
    response = client.get(reverse("evaluation-csv", args=[evaluation.pk]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(lines) == len(evaluation.leaderboard) == 4
    first = evaluation.leaderboard[0]
    assert float(lines[0]["score_ci_low"]) == first["score"]["ci_low"]
    assert lines[0]["buyer"] == first["policy"]

    body = client.get(reverse("evaluation-json", args=[evaluation.pk])).json()
    assert body["leaderboard"] == evaluation.leaderboard and body["status"] == "finished"
    played = [dict(zip(body["outcome_fields"], o, strict=True)) for o in body["outcomes"]]
    assert len(played) == 12 and {o["seed"] for o in played} == {0, 1, 2}

    cell = reverse("evaluation-cell", args=[evaluation.pk])
    query = "?scenario=bilateral_hardball&lineup=scenario&buyer=expert"
    html = client.get(cell + query).content.decode()
    assert html.count("<tr>") == 1 + 3  # the header and one line per seed
    assert "/episodes/new/?scenario=bilateral_hardball&amp;policy=expert&amp;seed=2" in html
    page = client.get(reverse("evaluation-page", args=[evaluation.pk])).content.decode()
    assert f'href="{cell}{query.replace("&", "&amp;")}"' in page  # the matrix links it
    assert "No episodes for this cell" in client.get(cell + "?scenario=x").content.decode()

    Evaluation.objects.filter(pk=evaluation.pk).update(outcomes=[])  # stored before runs
    assert 'id="no-episodes"' in client.get(cell + query).content.decode()


@pytest.mark.django_db
def test_the_page_shows_each_lanes_progress_and_own_play_time(seeded, user_with_role) -> None:
    """Each lane's line, on the page and in the payload the stream sends: done/total,
    its own play time with a unit, its state."""
    evaluation = start_evaluation(policies="expert", scenarios="bilateral", seeds=3, enqueue=False)
    evaluation.parts.filter(lane="rule").update(done_episodes=3, seconds=41.24, status="finished")
    EvaluationPart.objects.create(
        evaluation=evaluation,
        lane="llm",
        queue="gpu",
        episodes=40,
        done_episodes=12,
        seconds=754.4,
        status="running",
    )
    rule = "rule lane (cpu): 3/3 episodes, 41.2 s of play, finished"
    model = "model lane (gpu): 12/40 episodes, 12 min 34 s of play, running"
    page = _client(user_with_role, "analyst").get(f"/evaluations/{evaluation.pk}/")
    html = page.content.decode()
    assert f'<li data-lane="rule">{rule}</li>' in html
    assert f'<li data-lane="llm">{model}</li>' in html
    streamed = evaluation_payload(evaluation)  # what each progress message carries
    assert [lane["summary"] for lane in streamed["lanes"]] == [rule, model]
