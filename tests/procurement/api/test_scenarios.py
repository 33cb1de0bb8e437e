"""/api/scenarios/: reads for every role, writes for admins, 4xx with field messages."""

from __future__ import annotations

import pytest

from negotiation import load_scenario
from procurement.models import Scenario

URL = "/api/scenarios/"


def body(name: str = "custom-one", **config) -> dict:
    return {"name": name, "description": "mine", "config": {"weeks": 5, **config}}


@pytest.mark.django_db
def test_anonymous_gets_401_with_a_challenge(api_client_for, preset) -> None:
    client = api_client_for("anonymous")
    for response in (
        client.get(URL),
        client.get(f"{URL}{preset.pk}/"),
        client.post(URL, body(), format="json"),
    ):
        assert response.status_code == 401
        assert "detail" in response.json()
    assert client.get(URL).has_header("WWW-Authenticate")


@pytest.mark.django_db
def test_user_without_a_role_gets_403(api_client_for, preset) -> None:
    client = api_client_for("none")
    assert client.get(URL).status_code == 403
    assert client.get(f"{URL}{preset.pk}/").status_code == 403
    assert client.post(URL, body(), format="json").status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["analyst", "ops", "admin"])
def test_every_role_reads(api_client_for, seeded, role) -> None:
    client = api_client_for(role)
    listing = client.get(URL)
    assert listing.status_code == 200
    names = [s["name"] for s in listing.json()["results"]]
    assert "easy_negotiation" in names and "hard_arena" in names
    preset = Scenario.objects.get(name="easy_negotiation")
    detail = client.get(f"{URL}{preset.pk}/").json()
    assert detail["is_preset"] and detail["config"] == preset.config and detail["version"] == 1


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["analyst", "ops"])
def test_analysts_and_ops_cannot_write_scenarios(
    api_client_for, preset, role, snapshot_counts
) -> None:
    client = api_client_for(role)
    before = snapshot_counts()
    assert client.post(URL, body(), format="json").status_code == 403
    assert (
        client.patch(f"{URL}{preset.pk}/", {"description": "x"}, format="json").status_code == 403
    )
    assert client.delete(f"{URL}{preset.pk}/").status_code == 403
    assert client.post(f"{URL}{preset.pk}/copy/").status_code == 403
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_admin_creates_updates_copies_and_deletes(api_client_for, preset) -> None:
    client = api_client_for("admin")
    created = client.post(URL, body(rival_aggression=0.5), format="json")
    assert created.status_code == 201, created.json()
    data = created.json()
    assert data["version"] == 1 and not data["is_preset"]
    assert data["config"]["weeks"] == 5 and data["config"]["rival_aggression"] == 0.5
    assert data["config"]["n_suppliers"] == load_scenario({}).n_suppliers  # engine default
    scenario = Scenario.objects.get(pk=data["id"])
    assert scenario.created_by == client.user and scenario.config == data["config"]

    url = f"{URL}{scenario.pk}/"
    same = client.patch(url, {"config": scenario.config}, format="json")
    assert same.status_code == 200 and same.json()["version"] == 1
    changed = client.patch(url, {"config": {**scenario.config, "weeks": 7}}, format="json")
    assert changed.status_code == 200 and changed.json()["version"] == 2
    assert changed.json()["config"]["weeks"] == 7
    described = client.patch(url, {"description": "new"}, format="json")
    assert described.json()["description"] == "new" and described.json()["version"] == 2
    full = client.put(
        url, {"name": scenario.name, "description": "d", "config": {"weeks": 3}}, format="json"
    )
    assert full.status_code == 200 and full.json()["config"]["weeks"] == 3

    copy = client.post(f"{URL}{preset.pk}/copy/")
    assert copy.status_code == 201 and copy.json()["name"] == "easy_negotiation-copy"
    assert not copy.json()["is_preset"]

    assert client.delete(url).status_code == 204
    assert not Scenario.objects.filter(pk=scenario.pk).exists()


@pytest.mark.django_db
def test_presets_stay_read_only_through_the_api(api_client_for, preset, snapshot_counts) -> None:
    client = api_client_for("admin")
    before = snapshot_counts()
    response = client.patch(
        f"{URL}{preset.pk}/", {"config": {**preset.config, "weeks": 2}}, format="json"
    )
    assert response.status_code == 400 and "read-only" in response.json()["config"][0]
    response = client.delete(f"{URL}{preset.pk}/")
    assert response.status_code == 400 and "name" in response.json()
    preset.refresh_from_db()
    assert preset.version == 1 and preset.config["weeks"] != 2
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_renaming_is_refused_rather_than_silently_ignored(api_client_for, preset) -> None:
    client = api_client_for("admin")
    scenario = client.post(URL, body("named"), format="json").json()
    response = client.patch(f"{URL}{scenario['id']}/", {"name": "other"}, format="json")
    assert response.status_code == 400 and "name" in response.json()
    assert Scenario.objects.filter(name="named").exists()


BAD_BODIES = [
    # (request kwargs, field that must carry a message)
    ({"data": "{not json", "content_type": "application/json"}, "detail"),
    ({"data": [1, 2], "format": "json"}, "non_field_errors"),
    ({"data": {"config": {}}, "format": "json"}, "name"),
    ({"data": {"name": "x"}, "format": "json"}, "config"),
    ({"data": {"name": "not a slug!", "config": {}}, "format": "json"}, "name"),
    ({"data": {"name": "easy_negotiation", "config": {}}, "format": "json"}, "name"),
    ({"data": {"name": ["x"], "config": {}}, "format": "json"}, "name"),
    ({"data": {"name": "x", "config": "weeks=3"}, "format": "json"}, "config"),
    ({"data": {"name": "x", "config": [1]}, "format": "json"}, "config"),
    ({"data": {"name": "x", "config": None}, "format": "json"}, "config"),
    ({"data": body(weeks="many"), "format": "json"}, "config.weeks"),
    ({"data": body(weeks=0), "format": "json"}, "config.weeks"),
    (
        {"data": '{"name": "x", "config": {"weeks": NaN}}', "content_type": "application/json"},
        "detail",
    ),
    ({"data": body(weeks=2.5), "format": "json"}, "config.weeks"),
    (
        {
            "data": '{"name": "x", "config": {"pr_threshold": 1e400}}',
            "content_type": "application/json",
        },
        "config",
    ),
    (
        {
            "data": '{"name": "x", "config": {"persona_mix": {"hardball": 1e400}}}',
            "content_type": "application/json",
        },
        "config",
    ),
    ({"data": body(weeks=10**30), "format": "json"}, "config.weeks"),
    ({"data": body(no_such_parameter=1), "format": "json"}, "config.no_such_parameter"),
    ({"data": body(persona_mix="all"), "format": "json"}, "config.persona_mix"),
    ({"data": body(persona_mix={"saint": 1}), "format": "json"}, "config.persona_mix.saint"),
    (
        {"data": body(disruptions=[{"week": 99, "kind": "budget_cut"}]), "format": "json"},
        "config.disruptions.0.week",
    ),
    (
        {
            "data": body(disruptions=[{"week": 1, "kind": "budget_cut", "extra": 1}]),
            "format": "json",
        },
        "config.disruptions.0.extra",
    ),
    ({"data": body(disruptions={"week": 1}), "format": "json"}, "config.disruptions"),
    (
        {"data": body(supplier_llm={"backend": "x"}), "format": "json"},
        "config.supplier_llm.backend",
    ),
    ({"data": body(max_steps=2, weeks=5), "format": "json"}, "config.max_steps"),
    ({"data": {"name": "x", "config": {}, "description": 5 * "x" * 1000}, "format": "json"}, None),
]


def _has_field_message(payload, dotted: str) -> bool:
    """A serializer's message under the (dotted) field, or the parser's refusal naming it
    or a field inside it (``{"detail": ..., "field": "config.pr_threshold"}``)."""
    named = str(payload.get("field", "")) if isinstance(payload, dict) else ""
    if payload.get("detail") and (named == dotted or named.startswith(f"{dotted}.")):
        return True
    node = payload
    head, _, rest = dotted.partition(".")
    if head not in node:
        return False
    node = node[head]
    if rest:
        return isinstance(node, dict) and rest in node and bool(node[rest])
    return bool(node)


@pytest.mark.django_db
@pytest.mark.parametrize(("kwargs", "field"), BAD_BODIES)
def test_malformed_bodies_are_400_with_field_messages(
    api_client_for, seeded, snapshot_counts, kwargs, field
) -> None:
    client = api_client_for("admin")
    before = snapshot_counts()
    response = client.post(URL, **kwargs)
    if field is None:  # acceptable input: only check it never breaks
        assert response.status_code in (201, 400)
        return
    assert response.status_code == 400, response.content
    payload = response.json()
    assert _has_field_message(payload, field), payload
    assert snapshot_counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "patch", "delete"])
@pytest.mark.parametrize("ident", ["abc", "99999999999999999999999", "999999", "-1", "1.5"])
def test_bad_ids_are_404(api_client_for, seeded, snapshot_counts, method, ident) -> None:
    client = api_client_for("admin")
    before = snapshot_counts()
    response = getattr(client, method)(f"{URL}{ident}/", {"description": "x"}, format="json")
    assert response.status_code == 404
    assert snapshot_counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "payload", "field"),
    [
        ("patch", {"config": {"weeks": "soon"}}, "config"),
        ("patch", {"config": "x"}, "config"),
        ("patch", {"config": {"disruptions": [{"week": 0, "kind": "budget_cut"}]}}, "config"),
        ("patch", {"description": ["a"]}, "description"),
        ("patch", [], "non_field_errors"),
        ("put", {"description": "only"}, "name"),
        ("put", {"name": "other", "config": {}}, "name"),
    ],
)
def test_bad_updates_are_400_and_change_nothing(api_client_for, preset, method, payload,
                                                field) -> None:  # fmt: skip
    client = api_client_for("admin")
    created = client.post(URL, body("target"), format="json").json()
    stored = Scenario.objects.values("config", "version", "description").get(pk=created["id"])
    response = getattr(client, method)(f"{URL}{created['id']}/", payload, format="json")
    assert response.status_code == 400, response.content
    assert response.json()[field]
    assert Scenario.objects.values("config", "version", "description").get(
        pk=created["id"]) == stored  # fmt: skip


@pytest.mark.django_db
def test_deleting_a_scenario_a_sweep_refers_to_is_a_409(
    api_client_for, preset, expert, snapshot_counts
) -> None:
    from procurement.services.scenarios import scenario_copy
    from procurement.services.sweeps import sweep_create

    scenario = scenario_copy(source=preset, name="swept")
    sweep = sweep_create(scenarios=[scenario], policies=[expert], seeds=3, enqueue=False)
    before = snapshot_counts()
    response = api_client_for("admin").delete(f"{URL}{scenario.pk}/")
    assert response.status_code == 409
    assert "'swept' is used by 1 sweep(s)" in response.json()["detail"]
    assert snapshot_counts() == before
    assert sweep.cells.count() == 3 and set(sweep.scenarios.all()) == {scenario}
