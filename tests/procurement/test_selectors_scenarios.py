"""A named supplier's persona is for admins only, and for no one while they hold a seat:
the scenario API, the scenario page and an episode's scenario snapshot all scrub it."""

from __future__ import annotations

import pytest

from negotiation import load_scenario
from negotiation.world.catalogue import get_catalogue
from procurement.models import Episode
from procurement.services.scenarios import scenario_create

pytestmark = pytest.mark.django_db

HIDDEN_ROW = "persona hidden"  # the page's roster line (config.human_value)
TRUE_ROW = "persona deceptive"


@pytest.fixture
def rostered(seeded):
    roster = [{"name": "Acme Metals", "persona": "deceptive", "categories": ["it_hardware"]}]
    assert "it_hardware" in get_catalogue().categories
    config = {
        **load_scenario("easy_negotiation").model_dump(mode="json"),
        "supplier_roster": roster,
    }
    return scenario_create(name="rostered", config=config)


def _personas(client, scenario) -> dict[str, str]:
    api = client.get(f"/api/scenarios/{scenario.pk}/").json()["config"]["supplier_roster"]
    listed = next(
        s for s in client.get("/api/scenarios/").json()["results"] if s["name"] == "rostered"
    )
    page = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    return {
        "api": api[0]["persona"],
        "list": listed["config"]["supplier_roster"][0]["persona"],
        "page": "hidden" if HIDDEN_ROW in page else "deceptive" if TRUE_ROW in page else "?",
    }


def test_an_analyst_reads_a_named_suppliers_persona_as_hidden(rostered, api_client_for):
    assert set(_personas(api_client_for("analyst"), rostered).values()) == {"hidden"}
    assert set(_personas(api_client_for("ops"), rostered).values()) == {"hidden"}


def test_an_admin_reads_it_except_while_holding_a_seat(rostered, api_client_for):
    admin = api_client_for("admin")
    assert set(_personas(admin, rostered).values()) == {"deceptive"}
    created = admin.post(
        "/api/episodes/", {"scenario": "rostered", "policy": "human"}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert set(_personas(admin, rostered).values()) == {"hidden"}
    snapshot = admin.get(f"/api/episodes/{created.json()['id']}/").json()["scenario_snapshot"]
    assert snapshot["supplier_roster"][0]["persona"] == "hidden"
    Episode.objects.filter(pk=created.json()["id"]).update(status="cancelled")
    assert set(_personas(admin, rostered).values()) == {"deceptive"}
