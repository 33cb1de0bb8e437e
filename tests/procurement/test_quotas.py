"""Per-user limits on LLM-backed runs: a clear 429, nothing created, rule runs unaffected."""

from __future__ import annotations

import pytest

from procurement.models import PolicyConfig

pytestmark = pytest.mark.django_db


@pytest.fixture
def llm_policy(seeded) -> PolicyConfig:
    return PolicyConfig.objects.create(
        name="llm-buyer", policy="llm", backend="transformers", model="smollm2"
    )


def test_llm_episodes_per_user_are_limited(
    api_client_for, preset, llm_policy, snapshot_counts, settings
) -> None:
    settings.LLM_MAX_ACTIVE_EPISODES_PER_USER = 2
    analyst = api_client_for("analyst")
    body = {"scenario": preset.pk, "policy": "llm-buyer"}
    for seed in (1, 2):
        assert (
            analyst.post("/api/episodes/", {**body, "seed": seed}, format="json").status_code == 201
        )
    before = snapshot_counts()
    refused = analyst.post("/api/episodes/", {**body, "seed": 3}, format="json")
    assert refused.status_code == 429
    assert "2 LLM episode(s) queued or running; the limit is 2" in refused.json()["detail"]
    assert snapshot_counts() == before
    # rule policies and other users are not affected
    rule = analyst.post("/api/episodes/", {**body, "policy": "expert", "seed": 4}, format="json")
    assert rule.status_code == 201
    other = api_client_for("analyst").post("/api/episodes/", {**body, "seed": 5}, format="json")
    assert other.status_code == 201


def test_llm_cells_per_sweep_are_limited(
    api_client_for, llm_policy, snapshot_counts, settings
) -> None:
    settings.LLM_MAX_SWEEP_CELLS_PER_USER = 10
    ops = api_client_for("ops")
    grid = {"scenarios": ["easy_negotiation"], "policies": ["expert", "llm-buyer"]}
    before = snapshot_counts()
    refused = ops.post("/api/sweeps/", {**grid, "seeds": 11}, format="json")
    assert refused.status_code == 429
    assert "11 LLM-backed cells; the limit per sweep is 10" in refused.json()["detail"]
    assert snapshot_counts() == before
    assert ops.post("/api/sweeps/", {**grid, "seeds": 10}, format="json").status_code == 201
    rule_only = {**grid, "policies": ["expert"], "seeds": 50}
    assert ops.post("/api/sweeps/", rule_only, format="json").status_code == 201


def test_a_supplier_llm_that_names_no_persona_is_not_llm_work(
    api_client_for, preset, settings
) -> None:
    # It plays rule suppliers: cpu queue, and no LLM quota to count against.
    settings.LLM_MAX_ACTIVE_EPISODES_PER_USER = 0
    preset.config = {**preset.config, "supplier_llm": {"model": "x", "personas": []}}
    preset.save()
    body = {"scenario": preset.pk, "policy": "expert", "seed": 1}
    started = api_client_for("analyst").post("/api/episodes/", body, format="json")
    assert started.status_code == 201 and started.json()["queue"] == "cpu"
