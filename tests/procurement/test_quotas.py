"""Per-user limits on episodes, human seats and LLM-backed runs: a clear 429 that says the
limit and how many the user holds, nothing created, other users and kinds unaffected."""

from __future__ import annotations

import pytest

from procurement.models import PolicyConfig
from procurement.services.episodes import episode_create

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


def assert_refused(response, detail: str, limit: int) -> None:
    """A 429 that says the limit, and that the user holds all of it."""
    assert response.status_code == 429
    answer = response.json()
    assert detail in answer["detail"]
    assert (answer["limit"], answer["held"]) == (limit, limit)


def test_episodes_per_user_are_limited_whatever_the_policy(
    api_client_for, preset, snapshot_counts, settings
) -> None:
    settings.MAX_ACTIVE_EPISODES_PER_USER = 2
    analyst = api_client_for("analyst")
    body = {"scenario": preset.pk, "policy": "expert"}
    for seed in (1, 2):
        started = analyst.post("/api/episodes/", {**body, "seed": seed}, format="json")
        assert started.status_code == 201  # queued: no worker takes it inside the test
    before = snapshot_counts()
    refused = analyst.post("/api/episodes/", {**body, "seed": 3}, format="json")
    assert_refused(refused, "You have 2 episode(s) queued or running; the limit is 2", 2)
    assert snapshot_counts() == before
    # Other users, and operators' commands (no user), keep their own share.
    other = api_client_for("analyst").post("/api/episodes/", {**body, "seed": 4}, format="json")
    assert other.status_code == 201
    episode_create(scenario=preset, policy=PolicyConfig.objects.get(name="expert"), seed=5)


def test_human_seats_per_user_are_limited_apart_from_episodes(
    api_client_for, seeded, snapshot_counts, settings
) -> None:
    settings.MAX_OPEN_SEATS_PER_USER = 2
    settings.MAX_ACTIVE_EPISODES_PER_USER = 1
    analyst = api_client_for("analyst")
    seat = {"scenario": "bilateral_hardball", "policy": "human"}
    for _ in range(2):  # a seat's seed is the server's
        opened = analyst.post("/api/episodes/", seat, format="json")
        assert opened.status_code == 201 and opened.json()["status"] == "running"
    before = snapshot_counts()
    refused = analyst.post("/api/episodes/", seat, format="json")
    assert_refused(refused, "You have 2 human seat(s) open; the limit is 2", 2)
    assert snapshot_counts() == before
    rule = {"scenario": "bilateral_hardball", "policy": "expert", "seed": 4}
    assert analyst.post("/api/episodes/", rule, format="json").status_code == 201
