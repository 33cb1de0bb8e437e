"""Server-rendered pages and the REST additions they use (Django test client): roles,
the start form's rules, the public state at any step, cancelling, names or ids."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils.html import escape

from procurement.limits import LIVE_STEP_DELAY, MAX_STEP_DELAY
from procurement.models import Episode, Scenario, Sweep
from procurement.selectors.episodes import next_free_seed
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.sweeps import sweep_create

pytestmark = pytest.mark.django_db


def _client(client, user_with_role, role):
    user = user_with_role(role)
    client.force_login(user)
    client.user = user
    return client


def _finished(preset, expert, seed=3, user=None) -> Episode:
    episode = episode_create(scenario=preset, policy=expert, seed=seed, user=user, enqueue=False)
    return episode_run(episode_id=episode.pk, live_updates=False)


@pytest.mark.parametrize("path", ["/", "/episodes/new/"])
def test_a_user_without_a_role_sees_only_that(client, user_with_role, seeded, path) -> None:
    response = _client(client, user_with_role, None).get(path)
    assert response.status_code == 403
    assert b"no role yet" in response.content and b"Recent episodes" not in response.content


def _header(response) -> str:
    return response.content.decode().split("<header>")[1].split("</header>")[0]


def test_the_header_offers_a_role_less_user_only_what_answers(client, user_with_role, seeded):
    header = _header(_client(client, user_with_role, None).get("/"))
    assert 'href="/api/docs/"' in header and "no role" in header
    for page in ("/", "/episodes/new/", "/scenarios/", "/evaluations/"):
        assert f'href="{page}"' not in header


@pytest.mark.parametrize("path", ["/", "/scenarios/", "/evaluations/", "/episodes/new/"])
def test_every_page_header_names_the_role_and_links_its_pages(
    client, user_with_role, seeded, path
) -> None:
    header = _header(_client(client, user_with_role, "analyst").get(path))
    assert "· analyst" in header
    assert 'href="/scenarios/"' in header and 'href="/admin/"' not in header


def test_the_overview_links_each_episode_to_its_page(client, user_with_role, preset, expert):
    episode = _finished(preset, expert)
    response = _client(client, user_with_role, "analyst").get("/")
    assert f'href="/episodes/{episode.pk}/"'.encode() in response.content
    page = client.get(f"/episodes/{episode.pk}/")
    assert page.status_code == 200
    assert b"vendor/plotly.min.js" in page.content and b'id="episode-page"' in page.content
    assert client.get("/episodes/999999/").status_code == 404


def test_the_start_form_starts_a_live_episode_on_the_next_free_seed(
    client, user_with_role, preset, expert
) -> None:
    _finished(preset, expert, seed=0)
    analyst = _client(client, user_with_role, "analyst")
    response = analyst.post(
        "/episodes/new/", {"scenario": preset.name, "policy": expert.name, "pace": "live"}
    )
    episode = Episode.objects.latest("id")
    assert response.status_code == 302 and response.url == f"/episodes/{episode.pk}/"
    assert (episode.seed, episode.step_delay) == (1, LIVE_STEP_DELAY)
    assert episode.created_by == analyst.user


def test_the_start_form_defaults_to_the_expert_and_describes_each_choice(
    client, user_with_role, seeded
) -> None:
    response = _client(client, user_with_role, "analyst").get("/episodes/new/")
    form = response.context["form"]
    assert form["policy"].value() == "expert"
    page = response.content.decode()
    for name in ("scenario", "policy"):
        for value, _ in form.fields[name].choices:
            described = form.fields[name].queryset.get(name=str(value)).description
            assert described and f'data-description="{escape(described)}"' in page
    assert "Built-in rule policy" not in page  # before: every rule policy said only that


@pytest.mark.parametrize(
    "data, field",
    [
        ({"scenario": "nope", "policy": "expert", "pace": "fast"}, "scenario"),
        ({"scenario": "easy_negotiation", "policy": "expert", "pace": "warp"}, "pace"),
        ({"scenario": "easy_negotiation", "policy": "expert", "pace": "fast", "seed": -1}, "seed"),
        ({"scenario": "easy_negotiation", "policy": "expert", "pace": "fast", "seed": "x"}, "seed"),
    ],
)
def test_a_bad_start_form_says_which_field_and_starts_nothing(
    client, user_with_role, seeded, snapshot_counts, data, field
) -> None:
    before = snapshot_counts()
    response = _client(client, user_with_role, "analyst").post("/episodes/new/", data)
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert snapshot_counts() == before


def test_the_state_endpoint_replays_to_any_step_and_shows_no_hidden_state(
    api_client_for, preset, expert
) -> None:
    episode = _finished(preset, expert)
    api = api_client_for("analyst")
    before = api.get(f"/api/episodes/{episode.pk}/state/?step=-1").json()
    last = api.get(f"/api/episodes/{episode.pk}/state/?step={episode.steps - 1}").json()
    assert before["after_step"] == -1 and before["threads"] == [] and before["step"] == 0
    assert last["step"] == episode.steps and last["contracts"]
    final = episode.decisions.get(step=episode.steps - 1).state
    assert last["budget"]["remaining"] == pytest.approx(final["budget_remaining"])
    keys: set[str] = set()
    stack: list = [last]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            keys |= set(value)
            stack += value.values()
        elif isinstance(value, list):
            stack += value
    hidden = {"reservation", "floor", "stress", "tactic", "patience", "anchor", "persona"}
    assert not keys & hidden


@pytest.mark.parametrize("step", ["", "x", "-2", "1.5", "99999", "9" * 30])
def test_a_bad_step_is_a_400(api_client_for, preset, expert, step) -> None:
    episode = _finished(preset, expert)
    response = api_client_for("analyst").get(f"/api/episodes/{episode.pk}/state/?step={step}")
    assert response.status_code == 400 and "step" in response.json()


def test_analysts_cancel_only_their_own_episodes(api_client_for, preset, expert) -> None:
    mine, theirs = api_client_for("analyst"), api_client_for("analyst")
    episode = episode_create(scenario=preset, policy=expert, seed=1, user=mine.user, enqueue=False)
    refused = theirs.post(f"/api/episodes/{episode.pk}/cancel/")
    assert refused.status_code == 403
    assert Episode.objects.get(pk=episode.pk).status == "queued"
    assert mine.post(f"/api/episodes/{episode.pk}/cancel/").status_code == 200
    other = episode_create(scenario=preset, policy=expert, seed=2, user=mine.user, enqueue=False)
    assert api_client_for("ops").post(f"/api/episodes/{other.pk}/cancel/").status_code == 200


def test_the_api_takes_a_scenario_and_a_policy_by_name_or_by_id(
    api_client_for, preset, expert
) -> None:
    api = api_client_for("ops")
    by_id = api.post("/api/episodes/", {"scenario": preset.pk, "policy": expert.pk}, format="json")
    by_name = api.post(
        "/api/episodes/", {"scenario": preset.name, "policy": "expert"}, format="json"
    )
    assert by_id.status_code == by_name.status_code == 201
    next_seed = next_free_seed(scenario=preset, policy=expert)
    assert by_name.json()["seed"] == next_seed - 1  # took the next one
    sweep = api.post(
        "/api/sweeps/",
        {"scenarios": [preset.pk], "policies": ["expert", expert.pk + 1000], "seeds": 1},
        format="json",
    )
    assert sweep.status_code == 400 and "policies" in sweep.json()
    too_slow = api.post(
        "/api/episodes/",
        {"scenario": preset.pk, "policy": expert.pk, "step_delay": MAX_STEP_DELAY + 1},
        format="json",
    )
    assert too_slow.status_code == 400 and "step_delay" in too_slow.json()


def test_admin_and_schema_docs_are_branded_and_link_back(admin_client) -> None:
    assert b"Procurement Arena" in admin_client.get("/admin/").content
    schema = admin_client.get("/api/schema/?format=json").json()
    assert "[Back to the dashboard](/)" in schema["info"]["description"]
    favicon = admin_client.get("/static/procurement/favicon.svg")
    assert favicon.status_code == 200


def test_pages_that_link_no_icon_get_the_apps_from_favicon_ico(admin_client) -> None:
    """The admin links no icon, so browsers ask /favicon.ico (signed in or not)."""
    assert b'rel="icon"' not in admin_client.get("/admin/").content
    for visitor in (admin_client, Client()):
        icon = visitor.get("/favicon.ico", follow=True)
        assert icon.status_code == 200
        assert icon.redirect_chain[-1][0].endswith("/procurement/favicon.svg")


def _sweep(preset, expert, seeds=3):
    from procurement.services.sweep_runner import sweep_cells_run, sweep_start
    from procurement.services.sweeps import sweep_close_if_done

    sweep = sweep_create(scenarios=[preset], policies=[expert], seeds=seeds, enqueue=False)
    for chunk in sweep_start(sweep_id=sweep.pk):
        sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunk.cell_ids)
    sweep_close_if_done(sweep_id=sweep.pk)
    sweep.refresh_from_db()
    return sweep


def test_only_ops_open_the_sweep_form(client, user_with_role, seeded) -> None:
    assert _client(client, user_with_role, "analyst").get("/sweeps/new/").status_code == 403
    assert _client(client, user_with_role, "ops").get("/sweeps/new/").status_code == 200


def test_a_sweep_too_big_is_refused_on_the_form_and_creates_nothing(
    client, user_with_role, seeded, snapshot_counts
) -> None:
    before = snapshot_counts()
    data = {
        "scenarios": ["easy_negotiation", "medium_adversarial", "hard_arena"],
        "policies": ["expert", "random"],
        "seeds": 5000,
        "seed_start": 0,
    }
    response = _client(client, user_with_role, "ops").post("/sweeps/new/", data)
    assert response.status_code == 400
    assert "too many" in str(response.context["form"].errors["seeds"])
    assert snapshot_counts() == before


def test_the_sweep_form_starts_a_sweep_and_its_page_shows_it(client, user_with_role, seeded):
    ops = _client(client, user_with_role, "ops")
    data = {"scenarios": ["easy_negotiation"], "policies": ["expert"], "seeds": 2, "seed_start": 5}
    response = ops.post("/sweeps/new/", data)
    sweep = Sweep.objects.latest("id")
    assert response.status_code == 302 and response.url == f"/sweeps/{sweep.pk}/"
    assert (sweep.total_cells, sweep.seed_start, sweep.created_by) == (2, 5, ops.user)
    page = ops.get(response.url)
    assert page.status_code == 200 and b'id="sweep-page"' in page.content


def test_sweep_downloads_and_scores(api_client_for, preset, expert) -> None:
    sweep = _sweep(preset, expert)
    api = api_client_for("analyst")
    csv = api.get(f"/api/sweeps/{sweep.pk}/export/?file=csv")
    assert csv.status_code == 200 and csv["Content-Type"] == "text/csv"
    assert f'filename="sweep-{sweep.pk}.csv"' in csv["Content-Disposition"]
    assert len(csv.content.decode().splitlines()) == 4
    cells = json.loads(api.get(f"/api/sweeps/{sweep.pk}/export/?file=json").content)["cells"]
    assert [c["seed"] for c in cells] == [0, 1, 2]
    for bad in ("", "xlsx", "csv%00"):
        response = api.get(f"/api/sweeps/{sweep.pk}/export/?file={bad}")
        assert response.status_code == 400
    scores = api.get(f"/api/sweeps/{sweep.pk}/scores/").json()
    assert scores == [
        {
            "scenario": preset.name,
            "policy": "expert",
            "scores": [round(c["score"], 4) for c in cells],
            "episodes": [c["episode_id"] for c in cells],  # a plot's point opens its episode
        }
    ]


def test_every_scenario_page_explains_every_parameter_of_its_mode(
    client, user_with_role, seeded
) -> None:
    from negotiation.config import parameter_docs

    analyst = _client(client, user_with_role, "analyst")
    listing = analyst.get("/scenarios/").content.decode()
    docs = [d for d in parameter_docs() if d.name not in ("name", "description")]
    assert all(d.description for d in docs)
    for scenario in Scenario.objects.all():
        assert f'href="/scenarios/{scenario.pk}/"' in listing
        page = analyst.get(f"/scenarios/{scenario.pk}/").content.decode()
        mode = scenario.engine_config()["mode"]
        for doc in docs:
            assert (f"<code>{doc.name}</code>" in page) == (mode in doc.modes), doc.name
        assert "0 to 1" in page and "Edit in the admin" not in page


def test_the_scenario_page_shows_values_for_people(client, user_with_role, seeded) -> None:
    # Before: {'cooperative': 0.3, ...}, None, 1000000000000.0 and, on an arena scenario,
    # every bilateral_ parameter.
    from procurement.services.scenarios import scenario_create

    scenario = scenario_create(
        name="big_money",
        config={
            "persona_mix": {"cooperative": 0.3, "hardball": 0.7},
            "escalation_approval_above": 1e12,
            "pr_threshold": 250_000.0,
            "approval_timeout_s": 300,
        },
    )
    page = _client(client, user_with_role, "analyst").get(f"/scenarios/{scenario.pk}/")
    html = page.content.decode()
    table = html[html.index('id="parameters"') :]
    for repr_ in ("{'", "None", "e+", "1000000000000.0", "250000.0", "True", "[]"):
        assert repr_ not in table, repr_
    assert "hardball 70 %, cooperative 30 %" in table
    assert "1,000,000,000,000" in table and "250,000" in table and "300 s" in table
    assert "not set" in table  # supplier_llm, curriculum_tier
    assert "bilateral_" not in table and "<code>n_suppliers</code>" in table


def test_the_admin_scenario_form_carries_the_same_help(admin_client) -> None:
    scenario = Scenario.objects.get(name="medium_adversarial")
    page = admin_client.get("/admin/procurement/scenario/add/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "Share of requirements that are critical" in text and "Allowed: 0 to 1." in text
    detail = admin_client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert f"/admin/procurement/scenario/{scenario.pk}/change/" in detail
