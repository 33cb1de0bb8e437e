"""OpenAPI schema and the docs page."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command


@pytest.mark.django_db
def test_schema_generates_without_warnings_and_validates(tmp_path) -> None:
    path = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))
    schema = yaml.safe_load(path.read_text())
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for expected in (
        "/api/scenarios/",
        "/api/scenarios/{id}/",
        "/api/scenarios/{id}/copy/",
        "/api/episodes/",
        "/api/episodes/{id}/",
        "/api/episodes/{id}/decisions/",
        "/api/sweeps/",
        "/api/sweeps/{id}/",
        "/api/policies/",
        "/api/presets/",
    ):
        assert expected in paths, expected
    params = {p["name"] for p in paths["/api/episodes/"]["get"]["parameters"]}
    assert {"status", "scenario", "policy", "sweep", "seed", "page"} <= params
    status = next(p for p in paths["/api/episodes/"]["get"]["parameters"] if p["name"] == "status")
    assert set(status["schema"]["enum"]) == {"queued", "running", "finished", "failed", "cancelled"}
    decisions = paths["/api/episodes/{id}/decisions/"]["get"]
    assert {"page", "page_size"} <= {p["name"] for p in decisions["parameters"]}
    assert "post" in paths["/api/sweeps/"] and "post" in paths["/api/episodes/"]


@pytest.mark.django_db
def test_schema_endpoint_needs_login(api_client_for) -> None:
    assert api_client_for("anonymous").get("/api/schema/").status_code == 401
    response = api_client_for("analyst").get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "Procurement Arena API"


@pytest.mark.django_db
def test_docs_page(client, user_with_role) -> None:
    anonymous = client.get("/api/docs/")
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/?next=/api/docs/")
    client.force_login(user_with_role("analyst"))
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert b"swagger-ui" in page.content and b"/api/schema/" in page.content
