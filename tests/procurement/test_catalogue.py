"""The admin's catalogue (requirement templates, supplier profiles) really reaches the
engine: a scenario's selected entries become its items and supplier roster."""

from __future__ import annotations

import pytest

from negotiation import ProcurementEnv, load_scenario
from procurement.models import RequirementTemplate, Scenario, SupplierProfile
from tests.procurement.test_admin import ADD_URL, form_data, form_errors

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalogue(seeded):
    bolt = RequirementTemplate.objects.create(
        key="bolt-m8",
        name="Bolt M8",
        category="fasteners",
        unit="box",
        typical_unit_price=18.0,
        order_qty_min=50,
        order_qty_max=200,
        source="admin",
    )
    acme = SupplierProfile.objects.create(
        key="acme",
        name="Acme Fasteners",
        categories=["fasteners"],
        persona="hardball",
        lead_time_weeks=1,
    )
    odd = SupplierProfile.objects.create(
        key="odd", name="Odd Plumbing", categories=["plumbing"], persona="cooperative"
    )
    return bolt, acme, odd


def test_seeded_templates_carry_the_catalogue_quantities(seeded) -> None:
    template = RequirementTemplate.objects.order_by("key").first()
    assert template.order_qty_min >= 1 and template.order_qty_max >= template.order_qty_min


def test_selected_templates_and_profiles_become_the_engine_catalogue(
    admin_client, catalogue
) -> None:
    bolt, acme, _ = catalogue
    data = form_data(None, name="fasteners-only", n_requirements=2, n_suppliers=4)
    data["requirement_templates"] = [str(bolt.pk)]
    data["supplier_profiles"] = [str(acme.pk)]
    response = admin_client.post(ADD_URL, data)
    assert response.status_code == 302, form_errors(response)
    scenario = Scenario.objects.get(name="fasteners-only")
    assert scenario.config["items"] == [bolt.as_item_spec()]
    assert scenario.config["supplier_roster"] == [acme.as_supplier_spec()]
    obs = ProcurementEnv(load_scenario(scenario.engine_config())).reset(seed=1).to_dict()
    assert {r["name"] for r in obs["requirements"]} == {"Bolt M8"}
    assert obs["suppliers"][0]["name"] == "Acme Fasteners"
    assert obs["suppliers"][0]["lead_time_weeks"] == 1


def test_a_profile_serving_no_scenario_category_is_an_error_on_that_field(
    admin_client, catalogue
) -> None:
    bolt, _, odd = catalogue
    data = form_data(None, name="mismatch")
    data["requirement_templates"] = [str(bolt.pk)]
    data["supplier_profiles"] = [str(odd.pk)]
    errors = form_errors(admin_client.post(ADD_URL, data))
    assert errors["supplier_profiles"] == [
        "Odd Plumbing: Serves none of the scenario's categories."
    ]
    assert not Scenario.objects.filter(name="mismatch").exists()


def test_profile_categories_must_be_a_list_of_names(catalogue) -> None:
    from django.core.exceptions import ValidationError

    _, acme, _ = catalogue
    acme.categories = "fasteners"
    with pytest.raises(ValidationError, match="non-empty list"):
        acme.full_clean()
