"""/api/policies/ and /api/presets/."""

from __future__ import annotations

import pytest

from negotiation import list_policies, list_presets, load_scenario
from procurement.models import PolicyConfig


@pytest.mark.django_db
def test_presets_list_and_detail(api_client_for, seeded) -> None:
    client = api_client_for("analyst")
    listing = client.get("/api/presets/")
    assert listing.status_code == 200
    assert [p["name"] for p in listing.json()] == list_presets()
    detail = client.get("/api/presets/medium_adversarial/").json()
    assert detail["config"] == load_scenario("medium_adversarial").model_dump(mode="json")
    missing = client.get("/api/presets/no_such_preset/")
    assert missing.status_code == 404 and "no_such_preset" in missing.json()["detail"]
    assert client.get("/api/presets/" + "x" * 300 + "/").status_code == 404
    assert client.post("/api/presets/", {}, format="json").status_code in (403, 405)
    assert api_client_for("anonymous").get("/api/presets/").status_code == 401
    assert api_client_for("none").get("/api/presets/").status_code == 403


@pytest.mark.django_db
def test_policies_read_for_all_write_for_admins(api_client_for, seeded, snapshot_counts) -> None:
    listing = api_client_for("analyst").get("/api/policies/")
    assert listing.status_code == 200
    names = {p["name"] for p in listing.json()["results"]}
    assert set(list_policies()) <= names
    before = snapshot_counts()
    body = {"name": "cautious", "policy": "expert", "params": {}}
    for role in ("analyst", "ops"):
        assert api_client_for(role).post("/api/policies/", body, format="json").status_code == 403
    assert snapshot_counts() == before
    admin = api_client_for("admin")
    created = admin.post("/api/policies/", body, format="json")
    assert created.status_code == 201 and created.json()["uses_llm"] is False
    llm = admin.post(
        "/api/policies/",
        {"name": "qwen", "policy": "llm", "backend": "vllm", "model": "/models/q"},
        format="json",
    )
    assert llm.status_code == 201 and llm.json()["uses_llm"] is True


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "p", "policy": "telepathy"}, "policy"),
        ({"name": "p", "policy": "llm"}, "backend"),
        ({"name": "p", "policy": "expert", "params": [1]}, "params"),
        ({"name": "p", "policy": "expert", "backend": "gpu-magic"}, "backend"),
        ({"name": "bad name", "policy": "expert"}, "name"),
        ({"name": "expert", "policy": "expert"}, "name"),
    ],
)
def test_bad_policy_bodies(api_client_for, seeded, body, field) -> None:
    count = PolicyConfig.objects.count()
    response = api_client_for("admin").post("/api/policies/", body, format="json")
    assert response.status_code == 400 and response.json()[field]
    assert PolicyConfig.objects.count() == count
