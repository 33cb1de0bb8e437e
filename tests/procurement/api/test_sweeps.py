"""/api/sweeps/: ops and admins create; everyone with a role reads; per-policy aggregates."""

from __future__ import annotations

import pytest

from procurement.models import PolicyConfig, Scenario, Sweep, SweepCell
from procurement.services.sweeps import sweep_create

URL = "/api/sweeps/"


def sweep_body(**overrides) -> dict:
    return {
        "name": "grid",
        "scenarios": ["easy_negotiation", "medium_adversarial"],
        "policies": ["expert", "random"],
        "seeds": 3,
        **overrides,
    }


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "code"), [("anonymous", 401), ("none", 403), ("analyst", 403)])
def test_who_cannot_create_sweeps(api_client_for, seeded, snapshot_counts, role, code) -> None:
    client = api_client_for(role)
    before = snapshot_counts()
    assert client.post(URL, sweep_body(), format="json").status_code == code
    assert snapshot_counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["ops", "admin"])
def test_ops_and_admins_create_sweeps(
    api_client_for, seeded, role, django_capture_on_commit_callbacks
) -> None:
    client = api_client_for(role)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(URL, sweep_body(seed_start=10), format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["status"] == "queued" and data["total_cells"] == 12 and data["progress"] == 0.0
    assert sorted(data["scenarios"]) == ["easy_negotiation", "medium_adversarial"]
    assert sorted(data["policies"]) == ["expert", "random"]
    assert len(callbacks) == 1
    sweep = Sweep.objects.get(pk=data["id"])
    assert sweep.created_by == client.user
    cells = SweepCell.objects.filter(sweep=sweep)
    assert cells.count() == 12
    assert sorted(set(cells.values_list("seed", flat=True))) == [10, 11, 12]


@pytest.fixture
def sweep_with_results(seeded):
    scenario = Scenario.objects.get(name="easy_negotiation")
    expert, rnd = PolicyConfig.objects.get(name="expert"), PolicyConfig.objects.get(name="random")
    sweep = sweep_create(scenarios=[scenario], policies=[expert, rnd], seeds=3, enqueue=False)
    scores = {("expert", 0): 0.8, ("expert", 1): 0.9, ("random", 0): 0.1, ("random", 1): 0.3}
    for (policy, seed), score in scores.items():
        SweepCell.objects.filter(sweep=sweep, policy__name=policy, seed=seed).update(
            status="finished", score=score, metrics={"deal_rate": score, "buyer_share": 0.5}
        )
    SweepCell.objects.filter(sweep=sweep, policy=rnd, seed=2).update(status="failed")
    return sweep


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["analyst", "ops", "admin"])
def test_detail_has_per_policy_aggregates(api_client_for, sweep_with_results, role) -> None:
    client = api_client_for(role)
    listing = client.get(URL)
    assert listing.status_code == 200
    assert [s["id"] for s in listing.json()["results"]] == [sweep_with_results.pk]
    assert "summary" not in listing.json()["results"][0]
    detail = client.get(f"{URL}{sweep_with_results.pk}/").json()
    board = {row["policy"]: row for row in detail["summary"]["leaderboard"]}
    assert set(board) == {"expert", "random"}
    assert board["expert"]["episodes"] == 2 and board["random"]["episodes"] == 2
    assert board["expert"]["score"]["mean"] == pytest.approx(0.85)
    assert board["random"]["score"]["mean"] == pytest.approx(0.2)
    assert board["expert"]["deal_rate"] == pytest.approx(0.85)
    assert detail["summary"]["leaderboard"][0]["policy"] == "expert"  # best first
    lo, hi = board["expert"]["score"]["ci_low"], board["expert"]["score"]["ci_high"]
    assert lo <= 0.85 <= hi


@pytest.mark.django_db
def test_cancel_needs_ops(api_client_for, sweep_with_results) -> None:
    url = f"{URL}{sweep_with_results.pk}/cancel/"
    assert api_client_for("analyst").post(url).status_code == 403
    ops = api_client_for("ops")
    response = ops.post(url)
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert ops.post(url).status_code == 409
    assert ops.post(f"{URL}99999999999999999999999/cancel/").status_code == 404
    assert ops.post(f"{URL}424242/cancel/").status_code == 404


BAD = [
    ({"data": "{", "content_type": "application/json"}, "detail"),
    ({"data": "[]", "content_type": "application/json"}, "non_field_errors"),
    ({"data": sweep_body(seeds=0), "format": "json"}, "seeds"),
    ({"data": sweep_body(seeds=-3), "format": "json"}, "seeds"),
    ({"data": sweep_body(seeds=10**40), "format": "json"}, "seeds"),
    ({"data": sweep_body(seeds="many"), "format": "json"}, "seeds"),
    ({"data": sweep_body(seeds=10_000), "format": "json"}, "seeds"),  # 40,000 cells
    ({"data": sweep_body(seed_start=-1), "format": "json"}, "seed_start"),
    ({"data": sweep_body(seed_start=2**80), "format": "json"}, "seed_start"),
    ({"data": sweep_body(scenarios=[]), "format": "json"}, "scenarios"),
    ({"data": sweep_body(scenarios="easy_negotiation"), "format": "json"}, "scenarios"),
    ({"data": sweep_body(scenarios=["nope"]), "format": "json"}, "scenarios"),
    ({"data": sweep_body(scenarios=[1]), "format": "json"}, "scenarios"),
    ({"data": sweep_body(scenarios=[{"a": 1}]), "format": "json"}, "scenarios"),
    ({"data": sweep_body(scenarios=["hard_arena", "hard_arena"]), "format": "json"}, "scenarios"),
    ({"data": sweep_body(policies=["expert", "ghost"]), "format": "json"}, "policies"),
    ({"data": sweep_body(policies=None), "format": "json"}, "policies"),
    ({"data": sweep_body(name="x" * 500), "format": "json"}, "name"),
    ({"data": {"scenarios": ["hard_arena"]}, "format": "json"}, "policies"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("kwargs", "field"), BAD)
def test_malformed_bodies_are_400_and_change_nothing(
    api_client_for, seeded, snapshot_counts, django_capture_on_commit_callbacks, kwargs, field
) -> None:
    client = api_client_for("ops")
    before = snapshot_counts()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(URL, **kwargs)
    assert response.status_code == 400, response.content
    assert response.json()[field], response.json()
    assert snapshot_counts() == before and callbacks == []


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["abc/", "99999999999999999999999/", "424242/", "1x/"])
def test_bad_ids_are_404(api_client_for, seeded, path) -> None:
    assert api_client_for("analyst").get(f"{URL}{path}").status_code == 404
