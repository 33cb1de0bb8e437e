"""The admin keeps results intact: a scenario form round-trips what it does not show,
policy params are validated on save, and what results refer to cannot be deleted."""

from __future__ import annotations

import json

import pytest

from procurement.models import PolicyConfig, Scenario
from procurement.services.episodes import episode_create
from procurement.services.scenarios import scenario_create
from procurement.services.sweeps import sweep_create
from tests.procurement.test_admin import change_url, form_data, form_errors

pytestmark = pytest.mark.django_db

ITEMS = [
    {
        "key": "bolt-m8",
        "name": "Bolt M8",
        "category": "fasteners",
        "unit": "box",
        "typical_unit_price": 18.0,
        "order_qty_min": 50,
        "order_qty_max": 200,
    }
]
ROSTER = [
    {"name": "Acme", "persona": "hardball", "categories": ["fasteners"], "lead_time_weeks": 1}
]
POLICY_ADD_URL = "/admin/procurement/policyconfig/add/"


@pytest.fixture
def api_scenario(seeded) -> Scenario:
    """Created the way the API creates one: items and roster in the config, no catalogue
    entries selected."""
    return scenario_create(
        name="api-made",
        description="old",
        config={"weeks": 5, "n_suppliers": 4, "items": ITEMS, "supplier_roster": ROSTER},
    )


def test_a_description_only_save_keeps_items_roster_and_version(admin_client, api_scenario):
    before = dict(api_scenario.config)
    data = form_data(api_scenario.config, name="api-made", description="new words")
    response = admin_client.post(change_url(api_scenario), data)
    assert response.status_code == 302, form_errors(response)
    api_scenario.refresh_from_db()
    assert api_scenario.description == "new words"
    assert api_scenario.config["items"] == before["items"] and before["items"]
    assert api_scenario.config["supplier_roster"] == before["supplier_roster"]
    assert {**api_scenario.config, "description": ""} == {**before, "description": ""}
    assert api_scenario.version == 1


def test_a_parameter_change_keeps_the_hidden_fields_and_bumps_the_version(
    admin_client, api_scenario
):
    data = form_data(api_scenario.config, name="api-made", description="old", weeks=7)
    response = admin_client.post(change_url(api_scenario), data)
    assert response.status_code == 302, form_errors(response)
    api_scenario.refresh_from_db()
    assert api_scenario.config["weeks"] == 7 and api_scenario.version == 2
    assert api_scenario.config["items"] == ITEMS
    assert api_scenario.config["supplier_roster"] == ROSTER


def test_a_changed_catalogue_selection_replaces_the_items(admin_client, api_scenario):
    from procurement.models import RequirementTemplate

    template = RequirementTemplate.objects.create(
        key="nut-m8", name="Nut M8", category="fasteners", typical_unit_price=9.0
    )
    data = form_data(api_scenario.config, name="api-made", description="old")
    data["requirement_templates"] = [str(template.pk)]
    response = admin_client.post(change_url(api_scenario), data)
    assert response.status_code == 302, form_errors(response)
    api_scenario.refresh_from_db()
    assert api_scenario.config["items"] == [template.as_item_spec()]
    assert api_scenario.config["supplier_roster"] == ROSTER  # its selection did not change
    assert api_scenario.version == 2


def test_deleting_a_scenario_a_sweep_refers_to_shows_the_protected_page(
    admin_client, api_scenario, expert, snapshot_counts
):
    sweep_create(scenarios=[api_scenario], policies=[expert], seeds=2, enqueue=False)
    before = snapshot_counts()
    url = f"/admin/procurement/scenario/{api_scenario.pk}/delete/"
    for response in (admin_client.get(url), admin_client.post(url, {"post": "yes"})):
        assert response.status_code == 200
        assert "Scenario &#x27;api-made&#x27; is used by 1 sweep(s)" in response.content.decode()
    bulk = admin_client.post(
        "/admin/procurement/scenario/",
        {"action": "delete_selected", "_selected_action": [api_scenario.pk], "post": "yes"},
    )
    assert bulk.status_code == 200 and "is used by 1 sweep(s)" in bulk.content.decode()
    assert snapshot_counts() == before


def _policy_form(**overrides) -> dict:
    data = {"name": "lowball", "policy": "greedy_lowball", "params": "{}", "backend": ""}
    data.update({"model": "", "description": "", "_save": "Save", **overrides})
    return data


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"fraction": "abc"}, "fraction: Input should be a valid number"),
        ({"seed": 5}, "seed: Set by the runner"),
        ({"fraction": 1e308}, "fraction: Input should be less than or equal to 1"),
    ],
)
def test_bad_policy_params_are_a_form_error(admin_client, snapshot_counts, params, message):
    before = snapshot_counts()
    response = admin_client.post(POLICY_ADD_URL, _policy_form(params=json.dumps(params)))
    errors = form_errors(response)
    assert message in errors["params"][0]
    assert snapshot_counts() == before
    expert = PolicyConfig.objects.get(name="greedy_lowball")
    response = admin_client.post(
        change_url(expert), _policy_form(name="greedy_lowball", params=json.dumps(params))
    )
    assert message in form_errors(response)["params"][0]
    expert.refresh_from_db()
    assert (expert.params, expert.version) == ({}, 1)


def test_policy_admin_saves_through_the_services(admin_client, preset):
    response = admin_client.post(POLICY_ADD_URL, _policy_form(params='{"fraction": 0.5}'))
    assert response.status_code == 302, form_errors(response)
    policy = PolicyConfig.objects.get(name="lowball")
    assert (policy.params, policy.version) == ({"fraction": 0.5}, 1)
    described = _policy_form(params='{"fraction": 0.5}', description="half")
    assert admin_client.post(change_url(policy), described).status_code == 302
    policy.refresh_from_db()
    assert (policy.description, policy.version) == ("half", 1)
    changed = _policy_form(params='{"fraction": 0.6}', description="half")
    assert admin_client.post(change_url(policy), changed).status_code == 302
    policy.refresh_from_db()
    assert (policy.params, policy.version) == ({"fraction": 0.6}, 2)
    # in use: the protected page, nothing deleted
    episode_create(scenario=preset, policy=policy, seed=0, enqueue=False)
    url = f"/admin/procurement/policyconfig/{policy.pk}/delete/"
    response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 200 and "is used by 0 sweep(s) and 1 episode(s)" in (
        response.content.decode()
    )
    assert PolicyConfig.objects.filter(pk=policy.pk).exists()
