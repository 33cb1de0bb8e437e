"""Django admin: engine-validated scenario editing, copy / run actions, read-only history."""

from __future__ import annotations

import json

import pytest
from django import forms
from django.utils.html import escape

from procurement import scenario_form
from procurement.models import Decision, Episode, Scenario
from procurement.services.episodes import episode_claim, episode_create, episode_decisions_append
from procurement.services.scenarios import scenario_copy

ADD_URL = "/admin/procurement/scenario/add/"


def form_data(config: dict | None, *, name: str, description: str = "", **overrides) -> dict:
    """What a browser posts for the scenario form with ``config`` (and overrides)."""
    values = {**scenario_form.initial_values(config), **overrides}
    data = {"name": name, "description": description, "_save": "Save"}
    for field_name, field in scenario_form.config_fields().items():
        value = values.get(field_name)
        if isinstance(field, forms.JSONField):
            data[field_name] = json.dumps(value)
        elif isinstance(field, forms.BooleanField):
            if value:
                data[field_name] = "on"
        else:
            data[field_name] = "" if value is None else str(value)
    return data


def change_url(obj) -> str:
    return f"/admin/procurement/{obj._meta.model_name}/{obj.pk}/change/"


def form_errors(response) -> dict:
    assert response.status_code == 200, response.status_code
    return response.context["adminform"].form.errors


@pytest.mark.django_db
def test_add_form_shows_every_engine_parameter(admin_client) -> None:
    response = admin_client.get(ADD_URL)
    assert response.status_code == 200
    for name in ("weeks", "n_suppliers", "rival_aggression", "persona_mix", "disruptions"):
        assert f'name="{name}"' in response.content.decode()


@pytest.mark.django_db
def test_add_valid_scenario(admin_client) -> None:
    data = form_data(None, name="tight-one", description="tight", weeks=5, budget_tightness=0.9)
    response = admin_client.post(ADD_URL, data)
    assert response.status_code == 302, form_errors(response)
    scenario = Scenario.objects.get(name="tight-one")
    assert scenario.config["weeks"] == 5 and scenario.config["budget_tightness"] == 0.9
    assert scenario.config["name"] == "tight-one"
    assert scenario.version == 1 and not scenario.is_preset
    assert scenario.created_by == admin_client.user


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field", "text"),
    [
        ({"weeks": 0}, "weeks", "greater than or equal to 1"),
        ({"weeks": "soon"}, "weeks", "whole number"),
        (
            {"weeks": 4, "disruptions": [{"week": 9, "kind": "budget_cut"}]},
            "disruptions",
            "disruptions.0.week: Week 9 is outside the horizon",
        ),
        ({"disruptions": [{"week": 1, "kind": "meteor"}]}, "disruptions", "disruptions.0.kind"),
        ({"persona_mix": {"angelic": 1.0}}, "persona_mix", "Unknown persona 'angelic'"),
        ({"weeks": 10, "max_steps": 5}, "max_steps", "at least the number of weeks"),
        ({"mode": "chess"}, "mode", "Select a valid choice"),
        (
            {"supplier_llm": {"backend": "vllm", "personas": ["nope"]}},
            "supplier_llm",
            "Unknown persona 'nope'",
        ),
    ],
)
def test_bad_parameter_is_shown_on_its_field_and_nothing_is_saved(
    admin_client, snapshot_counts, overrides, field, text
) -> None:
    before = snapshot_counts()
    response = admin_client.post(ADD_URL, form_data(None, name="broken", **overrides))
    errors = form_errors(response)
    assert field in errors, errors
    assert any(text in message for message in errors[field]), errors[field]
    assert escape(errors[field][0]) in response.content.decode()  # shown on the page
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_change_form_validates_and_bumps_version_on_real_change(admin_client, preset) -> None:
    scenario = scenario_copy(source=preset, name="editable")
    url = change_url(scenario)
    assert admin_client.get(url).status_code == 200

    bad = admin_client.post(url, form_data(scenario.config, name="editable", weeks=0))
    assert "weeks" in form_errors(bad)
    scenario.refresh_from_db()
    assert scenario.version == 1 and scenario.config["weeks"] == preset.config["weeks"]

    same = admin_client.post(
        url, form_data(scenario.config, name="editable", description=scenario.description)
    )
    assert same.status_code == 302
    scenario.refresh_from_db()
    assert scenario.version == 1  # saving an unchanged form is not a new version

    changed = admin_client.post(
        url, form_data(scenario.config, name="editable", description=scenario.description, weeks=9)
    )
    assert changed.status_code == 302
    scenario.refresh_from_db()
    assert scenario.version == 2 and scenario.config["weeks"] == 9


@pytest.mark.django_db
def test_presets_are_view_only_in_the_admin(admin_client, preset) -> None:
    url = change_url(preset)
    page = admin_client.get(url)
    assert page.status_code == 200
    content = page.content.decode()
    assert 'name="_save"' not in content
    # the parameters are shown read-only, values included
    assert f"<th>n_suppliers</th><td>{preset.config['n_suppliers']}</td>" in content
    assert f"<th>weeks</th><td>{preset.config['weeks']}</td>" in content
    response = admin_client.post(url, form_data(preset.config, name=preset.name, weeks=2))
    assert response.status_code == 403
    preset.refresh_from_db()
    assert preset.version == 1 and preset.config["weeks"] != 2
    assert (
        admin_client.post(
            f"/admin/procurement/scenario/{preset.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert Scenario.objects.filter(pk=preset.pk).exists()


@pytest.mark.django_db
def test_copy_preset_action(admin_client, preset) -> None:
    response = admin_client.post(
        "/admin/procurement/scenario/",
        {"action": "copy_selected", "_selected_action": [preset.pk]},
        follow=True,
    )
    assert response.status_code == 200
    copy = Scenario.objects.get(name="easy_negotiation-copy")
    assert not copy.is_preset and copy.preset_name == "easy_negotiation"
    assert "Copied easy_negotiation to easy_negotiation-copy." in response.content.decode()
    # the copy is editable
    page = admin_client.get(change_url(copy))
    assert 'name="_save"' in page.content.decode()


@pytest.mark.django_db
def test_copy_at_a_curriculum_tier_action(admin_client, preset) -> None:
    from negotiation import apply_tier, load_scenario

    response = admin_client.post(
        "/admin/procurement/scenario/",
        {"action": "copy_at_master", "_selected_action": [preset.pk]},
        follow=True,
    )
    assert response.status_code == 200
    copy = Scenario.objects.get(name="easy_negotiation-master")
    expected = apply_tier(load_scenario("easy_negotiation"), "master").model_dump(mode="json")
    assert copy.config["curriculum_tier"] == "master" and not copy.is_preset
    assert {k: v for k, v in copy.config.items() if k not in ("name", "description")} == {
        k: v for k, v in expected.items() if k not in ("name", "description")
    }
    assert "Copied easy_negotiation at tier master" in response.content.decode()
    # Every tier is offered on the list page.
    page = admin_client.get("/admin/procurement/scenario/").content.decode()
    assert all(f"copy_at_{t}" in page for t in ("novice", "apprentice", "practitioner"))


@pytest.mark.django_db
def test_copy_at_an_unknown_tier_is_refused_and_creates_nothing(preset) -> None:
    from django.core.exceptions import ValidationError

    from procurement.services.scenarios import scenario_copy

    before = Scenario.objects.count()
    with pytest.raises(ValidationError, match="Unknown tier"):
        scenario_copy(source=preset, tier="grandmaster")
    assert Scenario.objects.count() == before


@pytest.mark.django_db
def test_run_episode_now_action(admin_client, preset, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = admin_client.post(
            "/admin/procurement/scenario/",
            {"action": "run_episode_now", "_selected_action": [preset.pk]},
            follow=True,
        )
    assert response.status_code == 200
    episode = Episode.objects.get()
    assert (episode.scenario_id, episode.policy_name, episode.seed) == (preset.pk, "expert", 0)
    assert episode.status == "queued" and episode.created_by == admin_client.user
    assert len(callbacks) == 1  # dispatched to a worker after the commit
    assert "Queued episode" in response.content.decode()


@pytest.mark.django_db
def test_episodes_and_decisions_are_read_only(admin_client, preset, expert) -> None:
    episode = episode_create(scenario=preset, policy=expert, seed=1, enqueue=False)
    episode_decisions_append(
        episode=episode,
        attempt=episode_claim(episode=episode),
        records=[
            {
                "step": 0,
                "week": 0,
                "action": {"action_type": "defer"},
                "valid": True,
                "error": None,
                "response": None,
                "reward": 0.0,
                "running_score": 0.0,
                "events": [],
                "state": {},
            }
        ],
    )
    decision = Decision.objects.get()
    for obj in (episode, decision):
        url = change_url(obj)
        page = admin_client.get(url)
        assert page.status_code == 200
        assert 'name="_save"' not in page.content.decode()
        assert admin_client.post(url, {"seed": 99, "step": 5}).status_code == 403
        model = obj._meta.model_name
        assert admin_client.get(f"/admin/procurement/{model}/add/").status_code == 403
        assert (
            admin_client.post(
                f"/admin/procurement/{model}/{obj.pk}/delete/", {"post": "yes"}
            ).status_code
            == 403
        )
    assert admin_client.get("/admin/procurement/episode/").status_code == 200
    assert admin_client.get("/admin/procurement/decision/").status_code == 200
    episode.refresh_from_db()
    assert episode.seed == 1 and Decision.objects.get().step == 0


@pytest.mark.django_db
def test_non_admin_roles_cannot_use_the_admin(client, user_with_role) -> None:
    client.force_login(user_with_role("ops"))
    response = client.get(ADD_URL)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.django_db
def test_every_admin_page_renders(admin_client, preset, expert) -> None:
    from procurement.services.sweeps import sweep_create

    sweep = sweep_create(scenarios=[preset], policies=[expert], seeds=1, enqueue=False)
    episode_create(scenario=preset, policy=expert, seed=1, enqueue=False)
    for model in ("scenario", "episode", "decision", "sweep", "sweepcell", "policyconfig",
                  "requirementtemplate", "supplierprofile"):  # fmt: skip
        assert admin_client.get(f"/admin/procurement/{model}/").status_code == 200, model
    for model in ("scenario", "policyconfig", "requirementtemplate", "supplierprofile"):
        assert admin_client.get(f"/admin/procurement/{model}/add/").status_code == 200, model
    assert admin_client.get(change_url(sweep)).status_code == 200
    assert admin_client.get(change_url(sweep.cells.get())).status_code == 200
    assert admin_client.get("/admin/procurement/episode/?status__exact=queued").status_code == 200
